#!/usr/bin/env bash
# docs/results/nimbus.jsonl (+ nimbus.meta.json): Nimbus (issue 47) — its client-side outer
# product (COP: `matmul = nimbus-cop`, `embed = nimbus-cop`, the default's lookup since session
# 32), its distribution-aware approximations (`gelu|silu|exp = nimbus`) and the `nimbus` preset.
#   1. the fits: `nectar fit --model` for GeLU and exp on MiniLM, SiLU on SmolLM2 (the committed
#      tables' figures: error over the calibration inputs and worst case);
#   2. the linear layers at BERT-base's shapes (128 tokens: 768→768, 768→3072, 3072→768): our
#      OLT `[X]·W` (`--op matmul`) and COP (`--op cop`, the weight's encryption reported apart),
#      both under the default suite's ring and prices (`--suite nectar`);
#   3. the nonlinear operators at BERT-base's sizes (GeLU 128 × 3072, softmax 12 × 128 rows of 128,
#      `bench nn`, no simulated link): the default's protocol against Nimbus's;
#   4. accuracy over 50 sentences (`nectar accuracy`, twin) and the demo sentences end to end
#      (`nectar demo`, both parties, LAN), `nimbus`; SmolLM2 generating 16 tokens under
#      `nectar+silu=nimbus` (the greedy tokens against plaintext);
#   5. MiniLM, 32 tokens, `nectar` (COP lookup), `nectar+embed=client-onehot` (the lookup before),
#      `nectar+gelu=nimbus+exp=nimbus` and `nimbus` (`bench suites`, server in a child process: a
#      fresh server key per run, so the weights always travel), --repeat 3 on the LAN and once on
#      BLB's WAN3;
#   6. BERT-base, 128 tokens, all 12 layers (`bench model`, LAN): `nectar`,
#      `nectar+embed=client-onehot`, `nimbus` and, for the acceptance ratio, `bumblebee`
#      (NIMBUS_BUMBLEBEE=0 skips it);
#   7. a returning client over real TCP (`nectar serve` + `nectar infer --json`, MiniLM, one
#      sentence): the first query (cold: the weights travel and are cached) and two more
#      (warm: read from the client's cache), for `nectar+embed=client-onehot`, `nectar` and
#      `nimbus` (each line tagged `"cache": "cold"|"warm"`).
# About 55 minutes on the 2-core VM.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init nimbus
M="$HOME/.cache/nectar/models/minilm"
SMOL="$HOME/.cache/nectar/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$M/model.safetensors" ] || "$BIN" fetch-model minilm
[ -f "$SMOL" ] || "$BIN" fetch-model smollm2
run fit --json --func gelu --model "$M" --range 3
run fit --json --func gelu_tanh --model "$M" --range 3
run fit --json --func exp --model "$M" --clip -8 --squarings 2
run fit --json --func exp --model "$M" --clip -8 --squarings 1
run fit --json --func silu --model "$SMOL" --range 5
for shape in 128,768,768 128,768,3072 128,3072,768; do
  for op in matmul cop; do
    run bench linear --json --suite nectar --op "$op" --shape "$shape"
  done
done
for S in nectar nimbus; do
  run bench nn --json --suite $S --op gelu --size 393216
  run bench nn --json --suite $S --op softmax --size 196608 --cols 128
done
run bench nn --json --suite nectar --op silu --size 393216
run bench nn --json --suite nimbus --op silu --size 393216
run accuracy --json --suite nimbus --sentences crates/model/tests/data/sentences50.txt
run demo --json --suite nimbus --net lan
# SiLU on a real LLaMA-family model: the prompt on which `nectar` (Seg4 SiLU) left the plaintext
# greedy continuation after 5 of 16 tokens (docs/results/llm.md)
run demo --json --suite nectar+silu=nimbus --model "$SMOL" --generate 16 --net lan 'Once upon a time, in a small village by the sea,'
SUITES=nectar,nectar+embed=client-onehot,nectar+gelu=nimbus+exp=nimbus,nimbus
run bench suites --json --model "$M" --tokens 32 --suites $SUITES --net lan --repeat 3
run bench suites --json --model "$M" --tokens 32 --suites $SUITES --net blb-wan3
for S in nectar nectar+embed=client-onehot nimbus; do
  run bench model --json --quiet --arch bert-base --seq 128 --suite $S --net lan
done
if [ "${NIMBUS_BUMBLEBEE:-1}" != 0 ]; then
  run bench model --json --quiet --arch bert-base --seq 128 --suite bumblebee --net lan
fi
CACHE_HOME=$(mktemp -d)
TEXT=$(sed -n 3p crates/model/tests/data/sentences50.txt)
PORT=7994
for S in nectar+embed=client-onehot nectar nimbus; do
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
