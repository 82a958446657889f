#!/usr/bin/env bash
# docs/results/wan-floor.jsonl (+ .meta.json), a section of docs/results/wan.md (issue 48):
# `nectar tune --no-run` from a fresh calibration — per link its prediction, what the link alone
# costs the messages (the replay without computation) and the one-way latencies on the critical
# path, per operator of the base suite. About 5 minutes.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-floor
MINILM="$HOME/.cache/nectar/models/minilm"
run tune --net blb-wan3 --model "$MINILM" --tokens 32 --recalibrate --no-run --json
for net in lan bumblebee-wan rotl-wan; do
  run tune --net "$net" --model "$MINILM" --tokens 32 --no-run --json
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
