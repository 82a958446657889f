#!/usr/bin/env bash
# docs/results/wan-graded.jsonl (+ .meta.json), a section of docs/results/wan.md (issues 48, 49):
# OT products with graded COT widths and bOLEe vs OT products chosen by their bits, against
# the build before them (BASE_BIN, built from BASE_COMMIT), interleaved in one sitting: the
# default suite on MiniLM / 32 tokens over the LAN and blb-wan3 (three runs each, the median
# kept), and SmolLM2's private decoding over the LAN (one prompt, 8 new tokens). About 20
# minutes on 2 cores.
#   BASE_BIN=/tmp/nectar-4835756 BASE_COMMIT=4835756 bash scripts/bench_graded.sh
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
: "${BASE_BIN:?set BASE_BIN to the release binary of the build before (see the header)}"
: "${BASE_COMMIT:?set BASE_COMMIT to the commit of that build}"
bench_init wan-graded
MINILM="$HOME/.cache/nectar/models/minilm"
SMOL="$HOME/.cache/nectar/models/smollm2"
for net in lan blb-wan3; do
  ARGS=(bench suites --model "$MINILM" --tokens 32 --suites nectar --net "$net" --repeat 3 --json)
  run_bin "$BASE_BIN" "$BASE_COMMIT" "${ARGS[@]}"
  run "${ARGS[@]}"
done
ARGS=(demo --json --suite nectar --model "$SMOL" --generate 8 --net lan "The capital of France is")
run_bin "$BASE_BIN" "$BASE_COMMIT" "${ARGS[@]}"
run "${ARGS[@]}"
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; bench suites: the server party in its own process over loopback TCP; demo: both parties in one process"
