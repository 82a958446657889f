#!/usr/bin/env bash
# docs/results/nimbus.jsonl (+ nimbus.meta.json): Nimbus's client-side outer product (COP,
# `matmul = nimbus-cop`, issue 47).
#   1. the linear layers at BERT-base's shapes (128 tokens: 768→768, 768→3072, 3072→768): our
#      OLT `[X]·W` (`--op matmul`) and COP (`--op cop`, the weight's encryption reported apart),
#      both under the default suite's ring and prices (`--suite nectar`);
#   2. MiniLM, 32 tokens, `nectar`, `nectar+embed=nimbus-cop` (the embedding lookup on COP)
#      and `nectar+matmul=nimbus-cop+embed=nimbus-cop` (`bench suites`, server in a child
#      process: a fresh server key per run, so the weights always travel), --repeat 3 on the
#      LAN and once on BLB's WAN3;
#   3. BERT-base, 128 tokens, all 12 layers (`bench model`, LAN), the same three suites and,
#      for the acceptance ratio, `bumblebee` (about 11 minutes; NIMBUS_BUMBLEBEE=0 skips it);
#   4. a returning client over real TCP (`nectar serve` + `nectar infer --json`, MiniLM, one
#      sentence): the first query (cold: the weights travel and are cached) and two more
#      (warm: read from the client's cache), for `nectar`, `nectar+embed=nimbus-cop` and
#      `nectar+matmul=nimbus-cop+embed=nimbus-cop` (each line tagged `"cache": "cold"|"warm"`).
# About 30 minutes on the 2-core VM (20 without the bumblebee run).
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init nimbus
M="$HOME/.cache/nectar/models/minilm"
[ -f "$M/model.safetensors" ] || "$BIN" fetch-model minilm
for shape in 128,768,768 128,768,3072 128,3072,768; do
  for op in matmul cop; do
    run bench linear --json --suite nectar --op "$op" --shape "$shape"
  done
done
SUITES=nectar,nectar+embed=nimbus-cop,nectar+matmul=nimbus-cop+embed=nimbus-cop
run bench suites --json --model "$M" --tokens 32 --suites $SUITES --net lan --repeat 3
run bench suites --json --model "$M" --tokens 32 --suites $SUITES --net blb-wan3
for S in nectar nectar+embed=nimbus-cop nectar+matmul=nimbus-cop+embed=nimbus-cop; do
  run bench model --json --quiet --arch bert-base --seq 128 --suite $S --net lan
done
if [ "${NIMBUS_BUMBLEBEE:-1}" != 0 ]; then
  run bench model --json --quiet --arch bert-base --seq 128 --suite bumblebee --net lan
fi
CACHE_HOME=$(mktemp -d)
TEXT=$(sed -n 3p crates/model/tests/data/sentences50.txt)
PORT=7994
for S in nectar nectar+embed=nimbus-cop nectar+matmul=nimbus-cop+embed=nimbus-cop; do
  "$BIN" serve --model "$M" --listen 127.0.0.1:$PORT --suite "$S" >/dev/null 2>&1 &
  SRV=$!
  for _ in $(seq 120); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 1; done
  for kind in cold warm warm; do
    NECTAR_HOME=$CACHE_HOME "$BIN" infer --json --connect 127.0.0.1:$PORT --model "$M" --suite "$S" "$TEXT" |
      python3 -c 'import json, sys; [print(json.dumps({**json.loads(l), "bench": "infer", "cache": sys.argv[1]})) for l in sys.stdin if l.strip()]' "$kind" >> "$OUT"
  done
  kill $SRV; wait $SRV 2>/dev/null || true
  CMDS+=("nectar serve --model $M --listen 127.0.0.1:$PORT --suite $S + 3 × NECTAR_HOME=(a fresh directory) nectar infer --json --connect 127.0.0.1:$PORT --model $M --suite $S (sentence 3 of crates/model/tests/data/sentences50.txt)")
done
rm -rf "$CACHE_HOME"
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
