#!/usr/bin/env bash
# docs/results/nimbus-sitting.jsonl (+ nimbus-sitting.meta.json): issue 47's acceptance ratio
# measured again in one sitting on whatever machine runs this, with the machine's CPU and its
# vector extensions in the meta file (the ratio moves with them: COP's and the OLT's NTTs run
# on AVX-512 IFMA for primes below 2^50 where the CPU has it, on AVX2 otherwise):
#   1. the linear layers at BERT-base's shapes, our OLT (`--op matmul`) and COP (`--op cop`)
#      under the default's ring and prices (`--suite nectar`) and BumbleBee's OLT
#      (`--suite bumblebee --op matmul`);
#   2. BERT-base, 128 tokens, all 12 layers (`bench model`, LAN): `bumblebee`, then `nimbus`.
# About 25 minutes on a 2-core VM without AVX-512, 8 with it.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init nimbus-sitting
for shape in 128,768,768 128,768,3072 128,3072,768; do
  run bench linear --json --suite bumblebee --op matmul --shape "$shape"
  for op in matmul cop; do
    run bench linear --json --suite nectar --op "$op" --shape "$shape"
  done
done
run bench model --json --quiet --arch bert-base --seq 128 --suite bumblebee --net lan
run bench model --json --quiet --arch bert-base --seq 128 --suite nimbus --net lan
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
FLAGS=$(grep -m1 '^flags' /proc/cpuinfo)
case " $FLAGS " in
  *" avx512ifma "*) VEC="AVX-512 with IFMA" ;;
  *" avx512f "*) VEC="AVX-512 without IFMA" ;;
  *" avx2 "*) VEC="AVX2, no AVX-512" ;;
  *) VEC="no AVX2" ;;
esac
bench_meta "2-core VM (nproc = $(nproc)), 24 GiB RAM; CPU: $CPU, $VEC"
