#!/usr/bin/env bash
# docs/results/llm-gqa.jsonl (+ .meta.json), a section of docs/results/llm.md (issue 49):
# grouped-query attention (each key/value head's K^T and V multiplied once for its group of
# query heads) against the build before it (BASE_BIN, built from BASE_COMMIT), interleaved in
# one sitting: SmolLM2's private decoding over the LAN (a 5-token prompt and 8 new tokens) and
# a 32-token prompt to its first token, each build once, the base first. About 10 minutes on
# 2 cores.
#   BASE_BIN=/tmp/nectar-15cc275 BASE_COMMIT=15cc275 bash scripts/bench_gqa.sh
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
: "${BASE_BIN:?set BASE_BIN to the release binary of the build before (see the header)}"
: "${BASE_COMMIT:?set BASE_COMMIT to the commit of that build}"
bench_init llm-gqa
SMOL="$HOME/.cache/nectar/models/smollm2"
LONG="The history of the Roman Empire spans more than a thousand years, from the founding of the city to the fall of Constantinople. Its long legacy still shapes our modern"
for args in "8|The capital of France is" "2|$LONG"; do
  ARGS=(demo --json --suite nectar --model "$SMOL" --generate "${args%%|*}" --net lan "${args#*|}")
  run_bin "$BASE_BIN" "$BASE_COMMIT" "${ARGS[@]}"
  run "${ARGS[@]}"
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process over the simulated LAN"
