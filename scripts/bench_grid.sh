#!/usr/bin/env bash
# docs/results/wan-grid.jsonl (+ .meta.json), a section of docs/results/wan.md (issue 48):
# `softmax = grid` (the row max by one rounding and all-pairs groups, fewer rounds) against the
# default's `coarse`, MiniLM / 32 tokens on the LAN and on blb-wan3 (three runs each, the median
# kept), then `nectar tune --net blb-wan3` with grid among its candidates (its stored
# calibration is reused when it matches). About 15 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-grid
MINILM="$HOME/.cache/nectar/models/minilm"
PAIR="nectar,nectar+softmax=grid"
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net lan --repeat 3 --json
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net blb-wan3 --repeat 3 --json
run tune --net blb-wan3 --model "$MINILM" --tokens 32 --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; bench suites and tune's check run: the server party in its own process over loopback TCP"
