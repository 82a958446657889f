#!/usr/bin/env bash
# docs/results/wan-pwl.jsonl (+ .meta.json), a section of docs/results/wan.md (issues 48, 49):
# the reciprocal and rsqrt that take no Newton step (`reciprocal = pwl`: one product layer,
# `rsqrt = pwl`: two; `newton1`: three each) against the default's `newton1`, one sitting:
#   1. MiniLM / 32 tokens on blb-wan3 and on the LAN, three runs each (the median kept);
#   2. SmolLM2, 6 new tokens after 'The capital of France is', on the LAN (seconds and round
#      trips per token);
#   3. both suites' twins against the f32 model over the 50 sentences (`nectar accuracy`);
#   4. `nectar tune --net blb-wan3` with `nectar+softmax=grid+reciprocal=pwl+rsqrt=pwl` among
#      its candidates (calibration, then its check run).
# The meta file names the CPU and its vector extensions. About 30 minutes on 2 cores.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init wan-pwl
MINILM="$HOME/.cache/nectar/models/minilm"
SMOL="$HOME/.cache/nectar/models/smollm2"
PAIR="nectar,nectar+reciprocal=pwl+rsqrt=pwl"
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net blb-wan3 --repeat 3 --json
run bench suites --model "$MINILM" --tokens 32 --suites "$PAIR" --net lan --repeat 3 --json
for s in nectar nectar+reciprocal=pwl+rsqrt=pwl; do
  run demo --json --suite "$s" --model "$SMOL" --generate 6 --net lan "The capital of France is"
done
for s in nectar nectar+reciprocal=pwl+rsqrt=pwl; do
  run accuracy --json --suite "$s" --sentences crates/model/tests/data/sentences50.txt
done
run tune --net blb-wan3 --model "$MINILM" --tokens 32 --recalibrate --json
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
FLAGS=$(grep -m1 '^flags' /proc/cpuinfo)
case " $FLAGS " in
  *" avx512ifma "*) VEC="AVX-512 with IFMA" ;;
  *" avx512f "*) VEC="AVX-512 without IFMA" ;;
  *" avx2 "*) VEC="AVX2, no AVX-512" ;;
  *) VEC="no AVX2" ;;
esac
bench_meta "2-core VM (nproc = $(nproc)), 24 GiB RAM; CPU: $CPU, $VEC"
