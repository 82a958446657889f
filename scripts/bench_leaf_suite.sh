#!/usr/bin/env bash
# Re-measures the JSON behind the "leaf suite" part of docs/results/leaf.md (issue 16 item 6):
# MiniLM end to end with LEAF's FFN block, next to bumblebee on the same input, and the demo.
# About 45 minutes on 2 cores (each of the 6 layers evaluates one BFV ciphertext of GELUs,
# ~3 minutes). Then `make results` renders leaf.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init leaf-suite
# the same 8-token input under bumblebee and leaf, over the simulated LAN link, each server
# party in its own process (peak RSS per party)
run bench suites --suites bumblebee,leaf --tokens 8 --json
# the demo (both parties on loopback TCP): one sentence, private embedding vs plaintext
run demo --suite leaf --json "The weather is lovely today."
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; rayon over 2 threads per process; nothing else running"
