#!/usr/bin/env bash
# docs/results/batch.jsonl (+ batch.meta.json): batched private inference (issue 52).
#   1. correctness: MiniLM, the first 32 sentences of sentences50.txt, one query each, in
#      batches of 8 and in one batch of 32 (`nectar demo --json`, LAN; each input's line holds
#      its private and plaintext embedding);
#   2. throughput: MiniLM, inputs of 16 tokens, unbatched vs `--batch 32`, on the LAN and on
#      BLB's WAN3 (`nectar bench suites --json`, server party in a child process: each party's
#      peak RSS is its own), the default suite with --repeat 3 on the LAN; the other presets
#      once on the LAN;
#   3. a batch above the server's bound, refused (`nectar serve --max-batch-tokens 256`).
#   BATCH_WAN=0 skips the WAN3 runs (about 12 minutes).
# About 25 minutes on the 2-core VM.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init batch
M="$HOME/.cache/nectar/models/minilm"
[ -f "$M/model.safetensors" ] || "$BIN" fetch-model minilm
mapfile -t S < <(head -32 crates/model/tests/data/sentences50.txt)
for b in 1 8 32; do
  run demo --json --model "$M" --net lan --batch "$b" "${S[@]}"
  CMDS[-1]="nectar demo --json --model $M --net lan --batch $b (the first 32 sentences of crates/model/tests/data/sentences50.txt)"
done
for b in 1 32; do
  run bench suites --json --model "$M" --suites nectar --tokens 16 --batch "$b" --net lan --repeat 3
done
run bench suites --json --model "$M" --suites bumblebee,east,rotl --tokens 16 --batch 1 --net lan
run bench suites --json --model "$M" --suites bumblebee,east,rotl --tokens 16 --batch 32 --net lan
if [ "${BATCH_WAN:-1}" != 0 ]; then
  for b in 1 32; do
    run bench suites --json --model "$M" --suites nectar --tokens 16 --batch "$b" --net blb-wan3
  done
fi

# a batch above the server's bound: its one-line refusal
PORT=7993
"$BIN" serve --model "$M" --listen 127.0.0.1:$PORT --max-sessions 2 --max-batch-tokens 256 >/dev/null 2>&1 &
SRV=$!
for _ in $(seq 120); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 1; done
ERR=$("$BIN" infer --json --connect 127.0.0.1:$PORT --model "$M" --batch 32 "${S[@]}" 2>&1 >/dev/null || true)
wait $SRV || true
CMDS+=("nectar serve --model $M --listen 127.0.0.1:$PORT --max-sessions 2 --max-batch-tokens 256 + nectar infer --json --connect 127.0.0.1:$PORT --model $M --batch 32 (the 32 sentences)")
python3 - "$OUT" "$ERR" <<'PY'
import json, sys
out, err = sys.argv[1], sys.argv[2].strip().splitlines()
open(out, "a").write(json.dumps({"refusal": {"max_batch_tokens": 256, "batch": 32, "stderr": err}}) + "\n")
PY
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
