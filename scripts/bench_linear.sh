#!/usr/bin/env bash
# Re-measures the JSON behind docs/results/linear.md (BumbleBee Table II and the other linear
# protocols): release build, both parties in one process, one JSON line per run into
# docs/results/linear.jsonl, the commands and commit into docs/results/linear.meta.json. About
# 12 minutes on 2 cores (KRDY+ with PackLWEs alone takes ~7). Then `make results`.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init linear
# Table II: OLT with each method, bOLEe, without a link and over the simulated LAN / WAN
for net in none lan wan; do
  for v in krdy interleave; do
    run bench linear --op olt --shape 1,50257,768 --variant "$v" --net "$net" --json
    run bench linear --op olt --shape 128,768,768 --variant "$v" --net "$net" --json
  done
  run bench linear --op bole --size 32768 --net "$net" --json
  run bench linear --op bole --size 1048576 --net "$net" --json
done
# KRDY+ (PackLWEs compression, 98 304 automorphisms): without a link only
run bench linear --op olt --shape 128,768,768 --variant krdy_plus --json
# the other linear protocols of an inference
run bench linear --op matmul --shape 128,768,768 --json
run bench linear --op batch_matmul --shape 128,64,128 --heads 12 --json
for s in 32768 1048576; do run bench linear --op mul --size "$s" --json; done
run bench linear --op square --size 32768 --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process over an in-memory channel (optionally the simulated LAN 1 Gbit/s 0.5 ms / WAN 400 Mbit/s 4 ms link)"
