#!/usr/bin/env bash
# Replicas behind HAProxy (issue 51, item 6; `make replicas`): three `nectar serve` replicas
# with MiniLM behind HAProxy on loopback, 12 honest clients with `nectar infer --retries` for
# 5 minutes, replica 0 drained (SIGTERM) at 60 s and replica 1 killed (SIGKILL) at 150 s
# (scripts/replicas.py); one JSON line into docs/results/replicas.jsonl, the command and commit
# into replicas.meta.json; `make results` renders replicas.md. About 10 minutes on 2 cores
# (queries running or queued at the deadline finish); fails if any check fails.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init replicas dev
$BIN fetch-model minilm > /dev/null
# Each replica may run 8 sessions, but its memory limit fits 3 of MiniLM's calibrated estimate
# (2.05 GiB, docs/results/admission.md): HAProxy's maxconn per replica is read from the
# replicas' /metrics.
ARGS=(--replicas 3 --clients 12 --seconds 300 --drain-at 60 --kill-at 150 --sessions-per-replica 8
      --memory-limit-gib 8 --retries 3)
CMDS+=("python3 scripts/replicas.py ${ARGS[*]}")
status=0
python3 scripts/replicas.py --nectar "$BIN" "${ARGS[@]}" >> "$OUT" || status=$?
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; HAProxy, the 3 replicas and the 12 client processes on the same machine, loopback TCP"
exit $status
