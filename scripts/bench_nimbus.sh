#!/usr/bin/env bash
# docs/results/nimbus.jsonl (+ nimbus.meta.json): Nimbus's client-side outer product (COP,
# `matmul = nimbus-cop`, issue 47).
#   1. the linear layers at BERT-base's shapes (128 tokens: 768→768, 768→3072, 3072→768): our
#      OLT `[X]·W` (`--op matmul`) and COP (`--op cop`, the weight's encryption reported apart),
#      both under the default suite's ring and prices (`--suite nectar`);
#   2. MiniLM, 32 tokens, `nectar` and `nectar+matmul=nimbus-cop` (`bench suites`, server in a
#      child process), --repeat 3 on the LAN and once on BLB's WAN3;
#   3. BERT-base, 128 tokens, all 12 layers (`bench model`, LAN): `nectar+matmul=nimbus-cop`
#      and, for the acceptance ratio, `bumblebee` (about 11 minutes; NIMBUS_BUMBLEBEE=0 skips it).
# About 25 minutes on the 2-core VM (15 without the bumblebee run).
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
run bench suites --json --model "$M" --tokens 32 --suites nectar,nectar+matmul=nimbus-cop --net lan --repeat 3
run bench suites --json --model "$M" --tokens 32 --suites nectar,nectar+matmul=nimbus-cop --net blb-wan3
run bench model --json --quiet --arch bert-base --seq 128 --suite nectar+matmul=nimbus-cop --net lan
if [ "${NIMBUS_BUMBLEBEE:-1}" != 0 ]; then
  run bench model --json --quiet --arch bert-base --seq 128 --suite bumblebee --net lan
fi
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
