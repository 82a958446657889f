#!/usr/bin/env bash
# Re-measures the JSON behind docs/results/leaf.md (LEAF suite, issue 16): release build, one
# JSON line per run into docs/results/leaf.jsonl, commands and commit into leaf.meta.json.
# About 5 minutes on 2 cores (the polynomial needs ~4 GB). Then `make results` renders leaf.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init leaf
# One BFV ct x ct product with relinearisation at LEAF's parameters (N = 32768, 669-bit q)
run bench fhe --op mul --reps 5 --json
# LEAF §3.3 step 6: the degree-65536 GELU polynomial on one ciphertext of 32768 slots
run bench fhe --op poly --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; single process, rayon over 2 threads; other builds shared the CPU (seconds are upper bounds)"
