//! Linear combinations with small integer weights, several at once:
//! `out_g[k] = (Σ_t w_{g,t}·x_t[k]) mod q` for residues `x_t[k] < q < 2^62` and signed weights
//! `|w_{g,t}| < 2^24`. These are the scalar blocks of Paterson–Stockmeyer on BFV ciphertexts
//! (LEAF §3.3: `p_i(x) = Σ_j c_{ik+j}·x^j` with `|c| <= t/2`, every block over the same baby
//! powers), i.e. a `G × T` weight matrix times `T` residue vectors: each input is read once per
//! group of outputs instead of once per output, and no modular reduction runs per term.
//!
//! **Arithmetic.** With `b` the least width such that every `|w| < 2^b`, the weights are
//! offset to `w' = w + 2^b ∈ (0, 2^(b+1))` and each residue split into 32-bit halves
//! `x = x_hi·2^32 + x_lo`. Both partial sums `Σ w'·x_lo` and `Σ w'·x_hi` are exact in 64 bits
//! for up to `2^(31−b)` terms (each product is below `2^(b+1+32)`), so a pass of that many
//! terms runs on 32 × 32 → 64-bit products (AVX-512: `vpmuludq`, eight lanes) without a
//! reduction. A pass ends with `(S_hi·2^32 + S_lo − 2^b·Σ x) mod q`, the offset's
//! contribution taken off by the plain sum `Σ x` (kept in the same split form).
//! Results are fully reduced residues, equal to the scalar definition (tested).

use crate::modulus::Modulus;

/// Widest weight magnitude the split kernel takes (`|w| < 2^MAX_WEIGHT_BITS`); wider weights
/// run on the 128-bit scalar loop.
pub const MAX_WEIGHT_BITS: u32 = 24;

/// Coefficients per cache block: the inputs' blocks (`T` × 2 KiB) stay in cache while every
/// group of outputs reads them.
const BLOCK: usize = 256;

/// Outputs accumulated together per pass over a block (two 64-bit accumulators each).
const GROUP: usize = 8;

/// `outs[g][k] = (Σ_t ws[g][t]·xs[t][k]) mod q` for `k < outs[g].len()`.
///
/// Every `outs[g]` has the same length `n`, every `xs[t]` at least `n` entries (residues
/// `< q`, the caller's promise as for every residue kernel), and every `ws[g]` exactly
/// `xs.len()` weights. Returns `false` (outputs untouched) on mismatched shapes.
pub fn small_weight_combos(q: &Modulus, xs: &[&[u64]], ws: &[&[i64]], outs: &mut [&mut [u64]]) -> bool {
    let n = outs.first().map_or(0, |o| o.len());
    if ws.len() != outs.len() || outs.iter().any(|o| o.len() != n) || xs.iter().any(|x| x.len() < n) || ws.iter().any(|w| w.len() != xs.len()) {
        return false;
    }
    let widest = ws.iter().flat_map(|w| w.iter()).map(|w| w.unsigned_abs()).max().unwrap_or(0);
    let b = 64 - widest.leading_zeros();
    if xs.is_empty() || n == 0 {
        outs.iter_mut().for_each(|o| o.fill(0));
        return true;
    }
    if b > MAX_WEIGHT_BITS {
        wide(q, xs, ws, outs);
        return true;
    }
    let off = 1u64 << b;
    let period = 1usize << (31 - b);
    let off_q = q.reduce_u128(off as u128);
    let t_ranges: Vec<(usize, usize)> = (0..xs.len()).step_by(period).map(|t0| (t0, (t0 + period).min(xs.len()))).collect();
    let groups: Vec<(usize, usize)> = (0..outs.len()).step_by(GROUP).map(|g0| (g0, (g0 + GROUP).min(outs.len()))).collect();
    // The offset weights of every (term range, output group), term-major: `wt[(t − t0)·g + i]`
    // is output `g0 + i`'s weight on term `t`.
    let wts: Vec<Vec<Vec<u64>>> = t_ranges
        .iter()
        .map(|&(t0, t1)| {
            groups
                .iter()
                .map(|&(g0, g1)| (t0..t1).flat_map(|t| ws[g0..g1].iter().map(move |w| (w[t] + off as i64) as u64)).collect())
                .collect()
        })
        .collect();
    outs.iter_mut().for_each(|o| o.fill(0));
    let mut lo = 0;
    while lo < n {
        let hi = (lo + BLOCK).min(n);
        for (&(t0, t1), wr) in t_ranges.iter().zip(&wts) {
            for (&(g0, g1), wt) in groups.iter().zip(wr) {
                pass(q, off_q, &xs[t0..t1], wt, &mut outs[g0..g1], lo, hi);
            }
        }
        lo = hi;
    }
    true
}

/// One pass: `outs[i][k] += Σ_t (w'_{i,t} − 2^b)·xs[t][k] mod q` for `k ∈ [lo, hi)`, at most
/// `2^(31−b)` terms, the offset weights `wt` term-major (`outs.len()` per term).
fn pass(q: &Modulus, off_q: u64, xs: &[&[u64]], wt: &[u64], outs: &mut [&mut [u64]], lo: usize, hi: usize) {
    let g = outs.len();
    let mut sums = [[0u64; 8]; 2 * GROUP + 2];
    let mut k = lo;
    while k < hi {
        let lanes = (hi - k).min(8);
        #[cfg(target_arch = "x86_64")]
        let done = lanes == 8 && avx512::available() && {
            // SAFETY: AVX-512F is present; k + 8 <= hi <= n <= every input's length.
            unsafe { avx512::block(xs, wt, g, k, &mut sums) };
            true
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = false;
        if !done {
            scalar_block(xs, wt, g, k, lanes, &mut sums);
        }
        for j in 0..lanes {
            // Each split sum is `S_hi·2^32 + S_lo < 2^97`: one 128-bit reduction.
            let joined = |gi: usize| ((sums[2 * gi + 1][j] as u128) << 32) + sums[2 * gi][j] as u128;
            let corr = q.mul(off_q, q.reduce_u128(joined(GROUP)));
            for (gi, out) in outs.iter_mut().enumerate() {
                out[k + j] = q.add(out[k + j], q.sub(q.reduce_u128(joined(gi)), corr));
            }
        }
        k += lanes;
    }
}

/// The split sums of `lanes` coefficients from `k` for `g` outputs: `sums[2i] = Σ w'·x_lo`,
/// `sums[2i+1] = Σ w'·x_hi`, and the plain sums `Σ x_lo`, `Σ x_hi` in the rows of index
/// `2·GROUP`, `2·GROUP + 1`.
fn scalar_block(xs: &[&[u64]], wt: &[u64], g: usize, k: usize, lanes: usize, sums: &mut [[u64; 8]; 2 * GROUP + 2]) {
    *sums = [[0; 8]; 2 * GROUP + 2];
    for (x, w) in xs.iter().zip(wt.chunks_exact(g)) {
        for j in 0..lanes {
            let (xl, xh) = (x[k + j] & 0xffff_ffff, x[k + j] >> 32);
            sums[2 * GROUP][j] += xl;
            sums[2 * GROUP + 1][j] += xh;
            for (gi, &wg) in w.iter().enumerate() {
                sums[2 * gi][j] += wg * xl;
                sums[2 * gi + 1][j] += wg * xh;
            }
        }
    }
}

/// Weights too wide for the split kernel: 128-bit products, one reduction per term.
fn wide(q: &Modulus, xs: &[&[u64]], ws: &[&[i64]], outs: &mut [&mut [u64]]) {
    for (w, out) in ws.iter().zip(outs.iter_mut()) {
        let wr: Vec<u64> = w.iter().map(|&v| q.reduce_i64(v)).collect();
        for (k, o) in out.iter_mut().enumerate() {
            *o = xs.iter().zip(&wr).fold(0, |acc, (x, &c)| q.add(acc, q.mul(x[k], c)));
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::GROUP;
    use std::arch::x86_64::*;

    pub(super) fn available() -> bool {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| is_x86_feature_detected!("avx512f"))
    }

    /// [`super::scalar_block`] on eight lanes (`g <= GROUP` outputs).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn block(xs: &[&[u64]], wt: &[u64], g: usize, k: usize, sums: &mut [[u64; 8]; 2 * GROUP + 2]) {
        // SAFETY (every arm): the caller's promise, passed on.
        unsafe {
            match g {
                1 => block_g::<1>(xs, wt, k, sums),
                2 => block_g::<2>(xs, wt, k, sums),
                3 => block_g::<3>(xs, wt, k, sums),
                4 => block_g::<4>(xs, wt, k, sums),
                5 => block_g::<5>(xs, wt, k, sums),
                6 => block_g::<6>(xs, wt, k, sums),
                7 => block_g::<7>(xs, wt, k, sums),
                _ => block_g::<8>(xs, wt, k, sums),
            }
        }
    }

    /// `G` outputs: their accumulators stay in registers across the terms.
    #[target_feature(enable = "avx512f")]
    unsafe fn block_g<const G: usize>(xs: &[&[u64]], wt: &[u64], k: usize, sums: &mut [[u64; 8]; 2 * GROUP + 2]) {
        let zero = _mm512_setzero_si512();
        let mask = _mm512_set1_epi64(0xffff_ffff);
        let (mut lo, mut hi) = ([zero; G], [zero; G]);
        let (mut sl, mut sh) = (zero, zero);
        for (x, w) in xs.iter().zip(wt.chunks_exact(G)) {
            // SAFETY: k + 8 <= x.len() (the caller's promise).
            let vx = unsafe { _mm512_loadu_si512(x.as_ptr().add(k).cast()) };
            let vh = _mm512_srli_epi64(vx, 32);
            sl = _mm512_add_epi64(sl, _mm512_and_si512(vx, mask));
            sh = _mm512_add_epi64(sh, vh);
            for i in 0..G {
                let vw = _mm512_set1_epi64(w[i] as i64);
                lo[i] = _mm512_add_epi64(lo[i], _mm512_mul_epu32(vx, vw));
                hi[i] = _mm512_add_epi64(hi[i], _mm512_mul_epu32(vh, vw));
            }
        }
        for i in 0..G {
            // SAFETY: each row of `sums` holds eight u64.
            unsafe {
                _mm512_storeu_si512(sums[2 * i].as_mut_ptr().cast(), lo[i]);
                _mm512_storeu_si512(sums[2 * i + 1].as_mut_ptr().cast(), hi[i]);
            }
        }
        // SAFETY: as above.
        unsafe {
            _mm512_storeu_si512(sums[2 * GROUP].as_mut_ptr().cast(), sl);
            _mm512_storeu_si512(sums[2 * GROUP + 1].as_mut_ptr().cast(), sh);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Prg;
    use rand_core::RngCore;

    fn reference(q: &Modulus, xs: &[Vec<u64>], ws: &[Vec<i64>], n: usize) -> Vec<Vec<u64>> {
        ws.iter()
            .map(|w| (0..n).map(|k| xs.iter().zip(w).fold(0, |a, (x, &c)| q.add(a, q.mul(x[k], q.reduce_i64(c))))).collect())
            .collect()
    }

    #[test]
    fn matches_the_definition() {
        let mut prg = Prg::new([9; 16]);
        // A 60-bit and a 30-bit prime (LEAF's sizes), several shapes: a remainder block,
        // more outputs than a group, one term, weights at the edges of their width.
        for bits in [60, 30] {
            let p = crate::modulus::ntt_primes(bits, 1 << 15, 1, &[]).unwrap()[0];
            let q = Modulus::new(p).unwrap();
            for &(t, g, n, wbits) in &[(255usize, 13usize, 515usize, 16u32), (1, 1, 8, 1), (40, 6, 264, 24), (7, 2, 3, 30)] {
                let xs: Vec<Vec<u64>> = (0..t).map(|_| (0..n).map(|_| prg.next_u64() % q.value()).collect()).collect();
                let ws: Vec<Vec<i64>> = (0..g)
                    .map(|_| (0..t).map(|i| { let m = (1i64 << wbits) - 1; if i == 0 { -m } else { (prg.next_u64() % (2 * m as u64 + 1)) as i64 - m } }).collect())
                    .collect();
                let mut outs = vec![vec![7u64; n]; g];
                let xr: Vec<&[u64]> = xs.iter().map(Vec::as_slice).collect();
                let wr: Vec<&[i64]> = ws.iter().map(Vec::as_slice).collect();
                let mut or: Vec<&mut [u64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
                assert!(small_weight_combos(&q, &xr, &wr, &mut or));
                assert_eq!(outs, reference(&q, &xs, &ws, n), "q {p} shape {t} {g} {n} {wbits}");
            }
        }
    }

    #[test]
    fn long_sums_flush_before_overflow() {
        // Width 24 allows 2^7 terms per pass: 300 terms of the largest residues and weights.
        let q = Modulus::new(crate::modulus::ntt_primes(61, 1 << 12, 1, &[]).unwrap()[0]).unwrap();
        let (t, n) = (300, 16);
        let xs: Vec<Vec<u64>> = (0..t).map(|_| vec![q.value() - 1; n]).collect();
        let ws = vec![vec![(1i64 << 24) - 1; t], vec![-((1i64 << 24) - 1); t]];
        let mut outs = vec![vec![0u64; n]; 2];
        let xr: Vec<&[u64]> = xs.iter().map(Vec::as_slice).collect();
        let wr: Vec<&[i64]> = ws.iter().map(Vec::as_slice).collect();
        let mut or: Vec<&mut [u64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
        assert!(small_weight_combos(&q, &xr, &wr, &mut or));
        assert_eq!(outs, reference(&q, &xs, &ws, n));
    }

    #[test]
    fn mismatched_shapes_are_refused() {
        let q = Modulus::new(crate::modulus::ntt_primes(30, 1 << 10, 1, &[]).unwrap()[0]).unwrap();
        let x = vec![1u64; 4];
        let mut o = vec![0u64; 8];
        assert!(!small_weight_combos(&q, &[&x], &[&[1]], &mut [&mut o]));
        let mut o = vec![0u64; 4];
        assert!(!small_weight_combos(&q, &[&x], &[&[1, 2]], &mut [&mut o]));
    }
}
