#!/usr/bin/env bash
# Re-measures the JSON behind the "end to end" part of docs/results/blb.md (issue 15): whole
# models with random weights of the published shapes under `--suite blb`, next to the
# bumblebee suite on the same input, each client output checked against the plaintext model.
# Each server party runs in its own process (peak RSS per party). GPT-2 base (64 tokens, 12
# layers) and one BERT-base layer take about 60 minutes on 2 cores; FULL=1 adds the 12-layer
# BERT-base runs (about 75 minutes more: blb about an hour, bumblebee 10 minutes). Then
# `make results` renders blb.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init blb-suite
# GPT-2 base, 64 tokens + 1 generated, all 12 layers (BLB Table 9: 1.5 GB)
run bench model --arch gpt2 --seq 64 --suite blb --check-plain --json
run bench model --arch gpt2 --seq 64 --suite bumblebee --check-plain --json
# BERT-base, 128 tokens, one layer (BLB's First and Last parts, no Steady part)
run bench model --arch bert-base --seq 128 --layers 1 --suite blb --check-plain --json
run bench model --arch bert-base --seq 128 --layers 1 --suite bumblebee --check-plain --json
if [ "${FULL:-0}" = 1 ]; then
  # BERT-base, 128 tokens, all 12 layers (BLB Table 9: 3.0 GB)
  run bench model --arch bert-base --seq 128 --suite blb --check-plain --json
  run bench model --arch bert-base --seq 128 --suite bumblebee --check-plain --json
fi
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; each server party in its own process over loopback TCP; rayon over 2 threads per process"
