#!/usr/bin/env bash
# docs/results/nimbus-llm.jsonl (+ nimbus-llm.meta.json): SmolLM2-135M-Instruct generating 16
# tokens under the default suite since it took Nimbus's fitted SiLU (`silu = nimbus`, issue 47),
# on the other four prompts of docs/results/llm.md (the fifth, 'Once upon a time, …', is in
# nimbus.jsonl): private greedy tokens against the plaintext's, seconds per token. About 17
# minutes on the 2-core VM.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init nimbus-llm
SMOL="$HOME/.cache/nectar/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$SMOL" ] || "$BIN" fetch-model smollm2
for P in 'The capital of France is' 'def add(a, b):' 'The three primary colors are' 'Water boils at a temperature of'; do
  run demo --json --suite nectar --model "$SMOL" --generate 16 --net lan "$P"
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
