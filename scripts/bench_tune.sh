#!/usr/bin/env bash
# docs/results/wan-tune.jsonl (+ .meta.json), a section of docs/results/wan.md (issue 48 item
# 3): `nectar tune` predicting by replaying the calibration's message traces on the link, one
# sitting — a fresh calibration, then per link (lan, blb-wan3) the tuner's choice with its
# prediction and check run, and `bench suites` of the presets that lead there (`nectar`,
# `nimbus`) next to `tuned:LINK` (three runs each, the median kept). About 20 minutes.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-tune
MINILM="$HOME/.cache/nectar/models/minilm"
run tune --net lan --model "$MINILM" --tokens 32 --recalibrate --json
run bench suites --model "$MINILM" --tokens 32 --suites nectar,nimbus,tuned:lan --net lan --repeat 3 --json
run tune --net blb-wan3 --model "$MINILM" --tokens 32 --json
run bench suites --model "$MINILM" --tokens 32 --suites nectar,nimbus,tuned:blb-wan3 --net blb-wan3 --repeat 3 --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
