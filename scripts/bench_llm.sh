#!/usr/bin/env bash
# docs/results/llm.jsonl (+ llm.meta.json): private generation with SmolLM2-135M-Instruct
# (issue 49 item 5). Every run is `nectar demo --json` over the simulated LAN (both parties in
# one process; the demo compares with the plaintext greedy tokens), or `nectar serve` +
# `nectar infer --json` on loopback TCP for each party's own peak RSS.
#   LLM_PROMPTS=N  first N of the five prompts (default 5); LLM_TOKENS=T new tokens (16)
# About 5 minutes per prompt of 16 tokens on the 2-core VM. Every prompt runs under the default
# suite (`nectar`), the one the acceptance item names; LLM_SUITE=SUITE runs another.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init llm
M="$HOME/.cache/nectar/models/smollm2"
[ -f "$M/SmolLM2-135M-Instruct.Q4_1.gguf" ] || "$BIN" fetch-model smollm2
PROMPTS=(
  "The capital of France is"
  "Once upon a time, in a small village by the sea,"
  "def add(a, b):"
  "The three primary colors are"
  "Water boils at a temperature of"
)
LONG="The history of the Roman Empire spans more than a thousand years, from the founding of the city to the fall of Constantinople. Its long legacy still shapes our modern"
N=${LLM_PROMPTS:-5}
T=${LLM_TOKENS:-16}
LLM_SUITE=${LLM_SUITE:-nectar}
for p in "${PROMPTS[@]:0:$N}"; do
  run demo --json --suite "$LLM_SUITE" --model "$M" --generate "$T" --net lan "$p"
done
# a 32-token prompt: the time to its first token
run demo --json --suite "$LLM_SUITE" --model "$M" --generate 2 --net lan "$LONG"
# the bumblebee suite, one prompt
run demo --json --suite bumblebee --model "$M" --generate 4 --net lan "${PROMPTS[0]}"

# each party's peak RSS: the server process under GNU time, the client's from its own report
PORT=7991
TIMEF=$(mktemp)
/usr/bin/time -f '%M' -o "$TIMEF" "$BIN" serve --suite "$LLM_SUITE" --model "$M" --listen 127.0.0.1:$PORT --max-sessions 2 >/dev/null 2>&1 &
SRV=$!
# the readiness probe is a connection too: --max-sessions 2
for _ in $(seq 120); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 1; done
CLIENT=$("$BIN" infer --json --suite "$LLM_SUITE" --connect 127.0.0.1:$PORT --model "$M" --generate 4 "${PROMPTS[0]}" | tail -1)
wait $SRV
CMDS+=("nectar serve --suite $LLM_SUITE --model $M --listen 127.0.0.1:$PORT --max-sessions 2 (under /usr/bin/time -f %M) + nectar infer --json --suite $LLM_SUITE --connect 127.0.0.1:$PORT --model $M --generate 4 \"${PROMPTS[0]}\"")
python3 - "$OUT" "$TIMEF" "$CLIENT" <<'PY'
import json, sys
out, timef, client = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
server_kib = int(open(timef).read().split()[-1])
line = {"memory": {"server_peak_rss_bytes": server_kib * 1024,
                   "client_peak_rss_bytes": client["totals"]["peak_rss_bytes"],
                   "tokens": 4}}
open(out, "a").write(json.dumps(line) + "\n")
PY
rm -f "$TIMEF"
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
