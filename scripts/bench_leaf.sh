#!/usr/bin/env bash
# Re-measures the JSON behind docs/results/leaf.md (LEAF suite, issue 16): release build, one
# JSON line per run into docs/results/leaf.jsonl, commands and commit into leaf.meta.json.
# About an hour on 2 cores (~6 GB peak). Then `make results` renders leaf.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init leaf
# One BFV ct x ct product with relinearisation at LEAF's parameters (N = 32768, 669-bit q)
run bench fhe --op mul --reps 5 --json
# LEAF §3.3 step 6 alone: the degree-65536 GELU polynomial on one ciphertext of 32768 slots
run bench fhe --op poly --json
# LEAF Table 1: GELU on 32768 inputs through pack, polynomial, S2C and the switches, on 2
# threads and on one (the paper's single-thread figure)
run bench fhe --op gelu --json
run bench fhe --op gelu --threads 1 --json
# LEAF Table 2: BERT-base X·W1 (128 x 768 by 768 x 3072) by PCMM, then GELU (12 BFV ciphertexts)
run bench fhe --op ffn --tokens 128 --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; single process, rayon over 2 threads unless --threads 1; nothing else running"
