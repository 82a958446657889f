#!/usr/bin/env bash
# docs/results/wan-duplex.jsonl (+ .meta.json), a section of docs/results/wan.md (issues 48,
# 52): the default suite with its duplex bOLEe products (`mul = bole-duplex`) and attention
# OLTs (`matmul-shared = olt-duplex`) against the same suite with BumbleBee's one-way ones
# (`nectar+mul=bole+matmul-shared=olt`), one sitting: MiniLM / 32 tokens on
# the LAN and on blb-wan3 (three runs each, the median kept), BERT-base / 128 tokens on
# blb-wan3 (one run each), and a batch of 32 MiniLM inputs of 16 tokens against one input on
# blb-wan3 (issue 52's throughput). About 40 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-duplex
MINILM="$HOME/.cache/nectar/models/minilm"
PAIR="nectar,nectar+mul=bole+matmul-shared=olt"
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net lan --repeat 3 --json
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net blb-wan3 --repeat 3 --json
for s in nectar nectar+mul=bole+matmul-shared=olt; do
  run bench model --arch bert-base --seq 128 --suite "$s" --net blb-wan3 --json --quiet
done
run bench suites --model "$MINILM" --suites "$PAIR" --tokens 16 --batch 1 --net blb-wan3 --json
run bench suites --model "$MINILM" --suites "$PAIR" --tokens 16 --batch 32 --net blb-wan3 --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
