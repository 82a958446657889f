#!/usr/bin/env bash
# docs/results/wan-NAME.jsonl (+ .meta.json), a section of docs/results/wan.md (issues 47, 48,
# 52): the default suite before and after one change, one sitting — NAME `query` (the weight
# queries moved to the response level, their windows priced with them), `evaluator` (the OLT
# evaluator's weight scan and InterLeave's absent halves) or `ahead` (Ferret extensions begun
# ahead, their local work in the background); scripts/results_wan.py describes
# each. MiniLM / 32 tokens on the LAN (three runs each, the median kept) and on blb-wan3 (one
# run each), then BERT-base / 128 tokens on the LAN; the base build first in each pair. About
# 12 minutes on 2 cores.
#   BASE_BIN=/tmp/nectar-009e21b BASE_COMMIT=009e21b bash scripts/bench_query_ab.sh query
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
: "${BASE_BIN:?set BASE_BIN to the release binary of the build before (see the header)}"
: "${BASE_COMMIT:?set BASE_COMMIT to the commit of that build}"
: "${1:?name the change: query, evaluator or ahead (see the header)}"
bench_init "wan-$1"
MINILM="$HOME/.cache/nectar/models/minilm"
for args in "lan 3" "blb-wan3 1"; do
  set -- $args
  ARGS=(bench suites --model "$MINILM" --tokens 32 --suites nectar --net "$1" --repeat "$2" --json)
  run_bin "$BASE_BIN" "$BASE_COMMIT" "${ARGS[@]}"
  run "${ARGS[@]}"
done
ARGS=(bench model --arch bert-base --seq 128 --suite nectar --net lan --json --quiet)
run_bin "$BASE_BIN" "$BASE_COMMIT" "${ARGS[@]}"
run "${ARGS[@]}"
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
python3 scripts/results_wan.py
