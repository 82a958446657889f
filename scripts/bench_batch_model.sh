#!/usr/bin/env bash
# docs/results/batch-model.jsonl (+ batch-model.meta.json): BERT-base (pseudo-random weights at
# its shapes) with inputs of 128 tokens, unbatched and in one batch of BATCH_BERT inputs (default
# 8), `nectar` suite on the LAN (issue 52; next to BLB's Table 12). About 2 minutes per input.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init batch-model
N=${BATCH_BERT:-8}
run bench model --arch bert-base --seq 128 --suite nectar --net lan --json --quiet
run bench model --arch bert-base --seq 128 --suite nectar --net lan --json --quiet --batch "$N"
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
