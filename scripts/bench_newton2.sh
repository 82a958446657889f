#!/usr/bin/env bash
# docs/results/wan-newton2.jsonl (+ .meta.json), a section of docs/results/wan.md (issue 48):
# the default suite with its two-step reciprocal and rsqrt (`newton2`) against the same suite
# with BumbleBee's three-step ones, MiniLM / 32 tokens on the LAN and on blb-wan3 (three runs
# each, the median kept), then the default on BERT-base / 128 tokens on the LAN (its flights
# against the 2463 of `docs/results/nimbus.md`; flights do not depend on the machine). About 12
# minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-newton2
MINILM="$HOME/.cache/nectar/models/minilm"
PAIR="nectar,nectar+rsqrt=newton+reciprocal=newton"
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net lan --repeat 3 --json
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net blb-wan3 --repeat 3 --json
run bench model --arch bert-base --seq 128 --suite nectar --net lan --json --quiet
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
