//! BLB's fused blocks 1, 3 and 5 run for real at a small model shape (`bench linear --suite blb
//! --op fused` at BERT-tiny, 128 tokens): the shares of the twin's values enter CKKS, the server
//! runs the block, the outputs leave as shares and reconstruct to the twin's values within CKKS
//! and conversion error, at the plan's depth, with the conversions the only traffic. Blocks 2
//! and 4 peak at 18 GB of memory at this shape (measured peak RSS; their Galois keys and
//! multi-head intermediates at N = 2^15): they run in `make bench-blb`, at BERT-base.

use nectar_bench::blb::{bench_fused_blocks, FieldToRing, SlotPacking};
use nectar_bench::fixtures::random::RandomArch;

#[test]
fn fused_blocks_1_3_and_5_run_for_real_and_match_the_twin() {
    for block in [1, 3, 5] {
        let r = bench_fused_blocks(RandomArch::BertTiny, 128, Some(block), FieldToRing::Local, SlotPacking::Complex, "none")
            .unwrap()
            .remove(0);
        eprintln!(
            "bert-tiny block {block}: {:.1} MB, max error {:.2e} (values up to {:.1}), {} levels, CKKS {:.1} s",
            r.bytes_total as f64 / 1e6,
            r.max_abs_error,
            r.max_abs_value,
            r.levels_used,
            r.ckks_seconds
        );
        assert_eq!(r.block, block);
        assert_eq!(r.levels_used as u32, r.depth, "the plan's depth");
        assert!(r.bytes_total > 0 && r.to_ckks_bytes > 0 && r.to_mpc_bytes > 0);
        // Block 3 (exp by six squarings of (1 + x/64)) amplifies the input's error 64-fold; the
        // conversions' stochastic rounding is a few units of 2^-18 and CKKS noise about 2^-25
        // relative: 1e-3 of the largest value bounds both with margin.
        assert!(r.max_abs_error <= 1e-3 * r.max_abs_value.max(1.0), "block {block}: error {}", r.max_abs_error);
    }
}
