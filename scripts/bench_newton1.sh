#!/usr/bin/env bash
# docs/results/wan-newton1.jsonl (+ .meta.json), a section of docs/results/wan.md (issues 48,
# 49): the default suite with its one-step reciprocal and rsqrt (`newton1`) against the same
# suite with the two-step ones it had before (`newton2`), MiniLM / 32 tokens on the LAN and on
# blb-wan3 (three runs each, the median kept), then the default on BERT-base / 128 tokens on
# the LAN (its flights against `wan-newton2`'s; flights do not depend on the machine), and both
# suites' twins against the f32 model over the 50 sentences (`nectar accuracy`). About 18
# minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-newton1
MINILM="$HOME/.cache/nectar/models/minilm"
PAIR="nectar,nectar+rsqrt=newton2+reciprocal=newton2"
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net lan --repeat 3 --json
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net blb-wan3 --repeat 3 --json
run bench model --arch bert-base --seq 128 --suite nectar --net lan --json --quiet
for s in nectar nectar+rsqrt=newton2+reciprocal=newton2; do
  run accuracy --json --suite "$s" --sentences crates/model/tests/data/sentences50.txt
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
