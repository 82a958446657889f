#!/usr/bin/env bash
# The JSON behind docs/results/olt-prices.md (`make bench-olt-prices`): OLTs of the shapes the
# default suite runs (MiniLM 32 tokens, BERT-base 128, LLaMA-7B 8) with forced partition windows,
# both parties in-process, no link. scripts/results_olt_prices.py fits the compute prices of
# `CostModel::balanced` (crates/linear/src/window.rs) on them by least squares. About 1.5
# minutes on 2 cores; run it alone (the seconds are the fit's data), then `make results`.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init olt-prices
while read -r shape windows; do
  run bench linear --json --op olt --suite bumblebee --shape "$shape" --windows "$windows"
done <<'CASES'
32,384,1536 32,256,1
32,384,1536 32,64,4
32,384,1536 16,64,8
32,384,1536 8,64,16
128,768,3072 128,64,1
128,768,3072 128,32,2
128,768,3072 128,16,4
128,768,3072 64,32,4
128,3072,768 128,64,1
128,3072,768 64,128,1
128,3072,768 64,64,2
32,30522,384 32,256,1
32,30522,384 16,512,1
8,4096,4096 8,512,2
8,4096,4096 8,256,4
8,4096,4096 8,128,8
CASES
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process (two threads, in-memory channel), no simulated link; nothing else running"
