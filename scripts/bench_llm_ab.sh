#!/usr/bin/env bash
# docs/results/llm-NAME.jsonl (+ .meta.json), a section of docs/results/llm.md (issue 49): one
# change to private decoding against the build before it (BASE_BIN, built from BASE_COMMIT),
# interleaved in one sitting: SmolLM2 over the LAN with a 5-token prompt and 8 new tokens, and
# a 32-token prompt to its first token, each build once, the base first. About 10 minutes on
# 2 cores. NAME: `gqa` (grouped-query attention), `ole` (`norm = outer`'s r ⊗ γ by OT OLEs),
# `grid` (`softmax = grid` against the default's `coarse`: one build, two suites), `prefill`
# (a prompt's masked scores skipped and the COP token table at setup), `cache` (the server's
# encoded weights kept between uses), `query` (weight queries at the response level and the
# argmax in a narrow ring), `windows` (weight products' windows priced with their low queries),
# `norms` (the evaluator's weight scan without a branch per entry), `interleave` (InterLeave
# without the automorphisms of absent halves), `prefetch` (the announced weight shared with its
# prefetch), `ahead` (Ferret extensions begun ahead, their local work in the background),
# `olt-ahead` (`matmul = olt-ahead` against the default's `olt`: one build, two suites),
# `newton1` (the default's `newton1` reciprocal and rsqrt against BASE_SUITE's `newton2`);
# scripts/results_llm.py describes each. BASE_SUITE and SUITE (default `nectar`) are the suites
# of the base run and of this build's run.
#   BASE_BIN=/tmp/nectar-15cc275 BASE_COMMIT=15cc275 bash scripts/bench_llm_ab.sh gqa
#   BASE_BIN=target/release/nectar BASE_COMMIT=$(git rev-parse --short HEAD) \
#     SUITE=nectar+softmax=grid bash scripts/bench_llm_ab.sh grid
#   BASE_BIN=target/release/nectar BASE_COMMIT=$(git rev-parse --short HEAD) \
#     BASE_SUITE=nectar+reciprocal=newton2+rsqrt=newton2 bash scripts/bench_llm_ab.sh newton1
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
: "${1:?name the change: gqa, ole, grid, prefill, cache, query, windows, norms, interleave, prefetch, ahead, olt-ahead or newton1 (see the header)}"
: "${BASE_BIN:?set BASE_BIN to the release binary of the build before (see the header)}"
: "${BASE_COMMIT:?set BASE_COMMIT to the commit of that build}"
bench_init "llm-$1"
SMOL="$HOME/.cache/nectar/models/smollm2"
LONG="The history of the Roman Empire spans more than a thousand years, from the founding of the city to the fall of Constantinople. Its long legacy still shapes our modern"
for args in "8|The capital of France is" "2|$LONG"; do
  ARGS=(--model "$SMOL" --generate "${args%%|*}" --net lan "${args#*|}")
  run_bin "$BASE_BIN" "$BASE_COMMIT" demo --json --suite "${BASE_SUITE:-nectar}" "${ARGS[@]}"
  run demo --json --suite "${SUITE:-nectar}" "${ARGS[@]}"
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process over the simulated LAN"
