#!/usr/bin/env bash
# docs/results/nimbus-wan.jsonl (+ nimbus-wan.meta.json): BERT-base, 128 tokens, all 12 layers
# over BLB's WAN3 (100 Mbit/s, 80 ms round trip) with Nimbus's fitted GeLU and exp on the default
# (`nectar+gelu=nimbus+exp=nimbus`, a `nectar tune --net blb-wan3` candidate): issue 48's
# BERT-base WAN3 target (≤ 8 min, ≤ 5.0 GB) against issue 47's approximations. About 9 minutes.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init nimbus-wan
run bench model --json --quiet --arch bert-base --seq 128 --suite nectar+gelu=nimbus+exp=nimbus --net blb-wan3
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
