#!/usr/bin/env bash
# The soak of issue 18 (`make soak`): one `nectar serve` with MiniLM, 12 honest clients querying
# back to back and 4 hostile ones cycling through attacks for 10 minutes (scripts/soak.py), one
# JSON line into docs/results/soak.jsonl, the command and commit into soak.meta.json; then
# `make results` renders soak.md. About 17 minutes on 2 cores (queries running at the deadline
# finish); fails if any check fails.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init soak
$BIN fetch-model minilm > /dev/null
ARGS=(--honest 12 --hostile 4 --seconds 600 --budget-mib 12288)
CMDS+=("python3 scripts/soak.py ${ARGS[*]}")
status=0
python3 scripts/soak.py --nectar "$BIN" "${ARGS[@]}" >> "$OUT" || status=$?
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; server and the 16 client processes on the same machine, loopback TCP"
exit $status
