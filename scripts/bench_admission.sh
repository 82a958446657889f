#!/usr/bin/env bash
# The calibration behind `nectar serve --memory-limit-gib` and the derived message limit (issue
# 51, item 5; `make calibrate-admission`): one MiniLM query per token length against a fresh
# server, its idle and peak resident memory and the largest message each way
# (scripts/calibrate_admission.py), into docs/results/admission.jsonl (embedded by
# crates/app/src/admission.rs: rebuild after re-measuring), the command and commit into
# admission.meta.json; `make results` renders admission.md. About 12 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init admission dev
$BIN fetch-model minilm > /dev/null
ARGS=(--suite nectar --memory-budget-mib 320 --tokens 8,32,128,256,512)
CMDS+=("python3 scripts/calibrate_admission.py ${ARGS[*]}")
python3 scripts/calibrate_admission.py --nectar "$BIN" "${ARGS[@]}" >> "$OUT"
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; server, client and the frame-counting proxy on the same machine, loopback TCP"
