#!/usr/bin/env bash
# The JSON behind docs/results/accuracy.md (issue 17 item 1; `make bench-accuracy`): `nectar
# accuracy` on the committed 50-sentence set with MiniLM — the default suite (nectar) with its
# two-party run on every sentence, and BumbleBee's approximations (twin only) for comparison.
# About 45 minutes on 2 cores (the secure runs); then `make results` renders accuracy.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init accuracy
$BIN fetch-model minilm > /dev/null
SET=crates/model/tests/data/sentences50.txt
run accuracy --sentences $SET --secure --json
run accuracy --sentences $SET --suite bumblebee --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process (two threads, in-memory channel)"
