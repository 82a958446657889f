#!/usr/bin/env bash
# Re-measures the JSON behind docs/results/rotl.md (ROTL suite, issue 13): release build, both
# parties in one process, one JSON line per run into docs/results/rotl.jsonl, and the commands
# with the commit they ran at into docs/results/rotl.meta.json. About 15 minutes on 2 cores.
# Then `make results` renders rotl.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
# one thread per party, as ROTL's figures
RUN_ENV=RAYON_NUM_THREADS=1
bench_init rotl
# ROTL Fig. 14 / §VII-C: n = 256, l = 64, averaged over 100 000 lookups; FLUTE+ next to it
run bench mpc --op lut --n 256 --bits 64 --count 100000 --json
run bench mpc --op flute --n 256 --bits 64 --count 100000 --json
# ROTL §VI: block size of the comparison from LUTs (MSB of l-bit shares, 20 000 comparisons)
for bits in 37 64; do for b in 1 2 3 4 5 6 7 8; do
  run bench mpc --op msb --bits "$bits" --block "$b" --count 20000 --json
done; done
# ROTL Table V: 100 000 comparisons over Z_2^37, LUT-based vs the OT millionaire
run bench mpc --op msb --bits 37 --block 4 --count 100000 --json
run bench nn --op msb --bits 37 --size 100000 --json
# ROTL Table VI (GPT-2 shapes, l = 37, L = 12): LUT replaced, comparisons as CipherGPT's (OT
# millionaire) — the paper's setting — and the full rotl preset (comparisons from LUTs too)
for suite in rotl+compare=millionaire rotl; do
  run bench nn --op gelu --suite "$suite" --size 786432 --bits 37 --frac 12 --json
  run bench nn --op softmax --suite "$suite" --size 786432 --cols 256 --bits 37 --frac 12 --json
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process over an in-memory channel, RAYON_NUM_THREADS=1"
