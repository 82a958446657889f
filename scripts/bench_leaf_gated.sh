#!/usr/bin/env bash
# Re-measures the JSON behind "gated FFN under leaf" in docs/results/leaf.md (issue 50 item 4):
# the small LLaMA of `bench model` (2 layers; SiLU(X·W_gate) by LEAF's block, X·W_up and the
# product by the suite's protocols) under `--suite leaf` against its plaintext model. About 10
# minutes on 2 cores (each layer evaluates one BFV ciphertext of SiLUs). Then `make results`.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init leaf-gated
run bench model --arch llama-small --seq 8 --suite leaf --check-plain --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; the server party in its own process over loopback TCP; rayon over 2 threads per process; a helper's SEAL benchmarks may have shared the machine (seconds are upper bounds)"
