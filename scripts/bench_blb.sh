#!/usr/bin/env bash
# Re-measures the JSON behind docs/results/blb.md (BLB suite, issue 15): release build, both
# parties in one process, one JSON line per run into docs/results/blb.jsonl, and the commands
# with the commit they ran at into docs/results/blb.meta.json. About 20 minutes on 2 cores.
# Then `make results` renders blb.md.
set -euo pipefail
source "$(dirname "$0")/bench_lib.sh"
bench_init blb
# BLB Table 7 / Table 5: fused ct-ct matmuls, counted on the slot simulator (BERT-large 128
# tokens, GPT-2 base 64 tokens; s = 16384 slots), and the ct-pt matmuls of the same layers
for op in qk sv attn_out ffn1 ffn2; do
  run bench linear --suite blb --op "$op" --model-shape bert-large --tokens 128 --json
  run bench linear --suite blb --op "$op" --model-shape gpt2 --tokens 64 --json
done
# The same GPT-2 ct-ct matmuls on real CKKS at Table 6 set 3 (N = 32768): timing and the
# evaluator's own counts
run bench linear --suite blb --op qk --model-shape gpt2 --tokens 64 --real --block 3 --json
run bench linear --suite blb --op sv --model-shape gpt2 --tokens 64 --real --block 3 --json
# BLB Table 10: every fused block's communication (its CKKS <-> MPC conversions), BERT-base 128,
# with our complex slot packing (default) and BLB's real one
for packing in complex real; do
  for f2r in local exact; do
    run bench linear --suite blb --op blocks --model-shape bert-base --tokens 128 --f2r "$f2r" --packing "$packing" --json
  done
done
# The five fused blocks of one BERT-base layer run for real (conversions, CKKS, outputs checked
# against the twin); about 7 minutes
run bench linear --suite blb --op fused --model-shape bert-base --tokens 128 --json
# One BERT-base activation (128 x 768) converted there and back at each Table 6 set
for packing in complex real; do
  for b in 1 2 3 4 5; do
    run bench linear --suite blb --op convert --block "$b" --count 98304 --packing "$packing" --json
  done
done
bench_meta "2-core VM (nproc = 2), 24 GiB RAM; both parties in one process over an in-memory channel; nothing else running"
