#!/usr/bin/env bash
# The soak of issue 18 (`make soak`): one `nectar serve` with MiniLM, 12 honest clients querying
# back to back and 4 hostile ones cycling through attacks for 10 minutes (scripts/soak.py), one
# JSON line per suite into docs/results/soak.jsonl, the commands and commit into soak.meta.json;
# then `make results` renders soak.md. About 12 minutes per suite on 2 cores (queries running at the
# deadline finish); fails if any check fails. SOAK_SUITES picks the suites.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init soak
$BIN fetch-model minilm > /dev/null
# The default suite (issue 51's acceptance: peak <= 8 GiB); SOAK_SUITES="nectar bumblebee" adds
# BumbleBee's (the suite of the first soaks: slower queries, so more sessions at once; it peaked
# at 8.65 GiB, over the budget, at 342f260: soak.jsonl keeps that line).
status=0
for suite in ${SOAK_SUITES:-nectar}; do
  ARGS=(--honest 12 --hostile 4 --seconds 600 --suite "$suite" --budget-mib 8192)
  CMDS+=("python3 scripts/soak.py ${ARGS[*]}")
  python3 scripts/soak.py --nectar "$BIN" "${ARGS[@]}" >> "$OUT" || status=$?
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; server and the 16 client processes on the same machine, loopback TCP"
exit $status
