#!/usr/bin/env bash
# ACOT payloads in frames (nectar_ot::acot, PAYLOAD_CHUNK), against the build before it, in one
# sitting over BLB's WAN3: a GeLU of 393 216 inputs, MiniLM/32, and a batch of 32 MiniLM
# inputs of 16 tokens (issue 52's throughput row). Each pair runs the build before, then this
# one. Usage: BASE_BIN=path/to/nectar-of-the-parent BASE_COMMIT=abc1234 scripts/bench_frames.sh
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
: "${BASE_BIN:?set BASE_BIN to the release binary of the build before}"
: "${BASE_COMMIT:?set BASE_COMMIT to the commit of that build}"
bench_init wan-frames
MINILM="$HOME/.cache/nectar/models/minilm"
for args in "bench nn --json --suite nectar --op gelu --size 393216 --net blb-wan3" \
            "bench suites --json --model $MINILM --suites nectar --tokens 32 --net blb-wan3" \
            "bench suites --json --model $MINILM --suites nectar --tokens 16 --batch 32 --net blb-wan3"; do
  # shellcheck disable=SC2086
  run_bin "$BASE_BIN" "$BASE_COMMIT" $args
  # shellcheck disable=SC2086
  run $args
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM"
