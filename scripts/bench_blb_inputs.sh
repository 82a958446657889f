#!/usr/bin/env bash
# Re-measures the JSON behind "BLB on real inputs" in docs/results/blb.md (issue 50): any
# sentence under `--suite blb` (MiniLM, padded to the packings' 128 rows), MiniLM at 128 tokens
# under blb and bumblebee (bytes with and without BLB's keys), and the small LLaMA and ViT of
# `bench model` under blb against their plaintext models. About 40 minutes on 2 cores; then
# `make results` renders blb.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init blb-inputs
$BIN fetch-model minilm > /dev/null
# One 8-token sentence (7 words), padded to 128 rows; cosine to the plaintext embedding.
run demo --suite blb --json "The weather is lovely today."
# MiniLM at 128 tokens, both parties in one process (the issue's comparison: blb's bytes with
# its keys against bumblebee's).
run bench suites --tokens 128 --suites blb,bumblebee --json
# The small LLaMA (11-token prompt, padded to 64) and ViT (17 tokens, padded to 64), 2 layers.
run bench model --arch llama-small --seq 11 --suite blb --check-plain --json
run bench model --arch vit-small --suite blb --check-plain --json
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; demo and bench suites: both parties in one process; bench model: the server party in its own process over loopback TCP; rayon over 2 threads per process; nothing else running"
