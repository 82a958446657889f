#!/usr/bin/env bash
# The JSON behind docs/results/default-ops.md (issue 17 item 2; `make bench-default-ops`): the
# default suite's softmax and GeLU next to BumbleBee's in `nectar bench nn`, with the softmax
# one change at a time (coarse max, narrow ring, exp). About 3 minutes on 2 cores; then `make results`.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init default-ops
for s in nectar nectar+softmax=narrow nectar+exp=taylor2 nectar+softmax=bumblebee nectar+softmax=bumblebee+exp=taylor2 bumblebee; do
  run bench nn --json --op softmax --size 196608 --cols 128 --suite "$s"
done
for s in nectar nectar+gelu=p7 bumblebee; do
  run bench nn --json --op gelu --size 1048576 --suite "$s"
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process (two threads, in-memory channel), no simulated link"
