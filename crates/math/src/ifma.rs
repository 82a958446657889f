//! Modular kernels with AVX-512 IFMA (52-bit multiply-accumulate, eight lanes) for primes
//! below `2^50` — the primes of the narrow OLT set (`nectar_he::Params::nectar_olt_narrow`),
//! whose NTTs `tfhe-ntt` already runs on IFMA. The scalar code computes a 64 × 64 → 128-bit
//! product per coefficient; here `vpmadd52luq` / `vpmadd52huq` give the low and high 52 bits
//! of eight 52 × 52-bit products per instruction.
//!
//! - [`dot_mod`]: `out[k] = Σ_i x_i[k]·y_i[k] (+ z[k]·c) mod q` (the key switch's inner
//!   products: digits times key limbs).
//! - [`sub_mul_const`]: `x[k] ← (x[k] − r(y[k]))·w mod q` (the key switch's mod-down by the
//!   special prime).
//! - [`mul_acc`], [`fold_acc`], [`reduce_acc`]: lazy sums of products `Σ_t a_t[k]·b_t[k]` in
//!   `(L, H)` words (the OLT evaluator's block products, `nectar_he::ProductSum`).
//!
//! Each returns `false` without touching its output when it cannot run (no IFMA on this CPU, a
//! prime of 50 bits or more, or shapes it does not take); the caller then runs its scalar loop.
//! Results are exact (fully reduced residues), the same as the scalar code's — tested against
//! it.
//!
//! Reduction: the products of entries `< q < 2^50` are summed as `L + 2^52·H` (`L` the sum of
//! the low 52-bit halves, `H` of the high ones; at most five terms keep `L < 2^55` and
//! `H < 2^51`), then `H·(2^52 mod q)` and `L mod q` by Shoup products with 52-bit constants:
//! for `x < 2^52`, `w < q` and `w' = ⌊w·2^52/q⌋`, `x·w − ⌊x·w'/2^52⌋·q ∈ [0, 2q)` — which,
//! being below `2^51`, is exact from the low 52 bits of both products.

/// Whether the IFMA kernels run on this CPU for primes `q` (`q < 2^50`).
pub fn available(q: u64) -> bool {
    q < 1 << 50 && q > 1 && cpu_has_ifma()
}

#[cfg(target_arch = "x86_64")]
fn cpu_has_ifma() -> bool {
    use std::sync::OnceLock;
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512ifma"))
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_has_ifma() -> bool {
    false
}

/// Most product terms [`dot_mod`] sums (the scaled term included).
pub const MAX_TERMS: usize = 5;

/// `out[k] = (Σ_i x_i[k]·y_i[k] + z[k]·c) mod q` for `terms = [(x_i, y_i)]` and the optional
/// `scaled = (z, c)`; every entry and `c` below `q` (the sums' bounds above rely on it; `c` is
/// checked, the entries are the caller's promise: reduced residues), every slice at least
/// `out.len()` long, `out.len()` a multiple of 8. Returns `false` (and leaves `out`) when it
/// cannot run.
pub fn dot_mod(q: u64, terms: &[(&[u64], &[u64])], scaled: Option<(&[u64], u64)>, out: &mut [u64]) -> bool {
    let n = out.len();
    let count = terms.len() + scaled.is_some() as usize;
    if !available(q)
        || count == 0
        || count > MAX_TERMS
        || n % 8 != 0
        || terms.iter().any(|(x, y)| x.len() < n || y.len() < n)
        || scaled.is_some_and(|(z, c)| z.len() < n || c >= q)
    {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU has AVX-512F and IFMA (`available`); every slice holds `n` entries.
        unsafe { imp::dot_mod(q, terms, scaled, out) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `x[k] ← (x[k] − r_k)·w mod q` with `r_k` the residue mod `q` of the centred lift of `y[k]`
/// modulo `p` (`y[k] < p`; `r_k = y[k]` or `y[k] − p`, taken mod `q`), for `w < q`, `x[k] < q`
/// and `p < 2q` (the mod-down `(x − [x]_P)·P^{-1}` of a key switch). `x.len()` a multiple of
/// 8, `y` at least as long. Returns `false` (and leaves `x`) when it cannot run.
pub fn sub_mul_const(q: u64, p: u64, x: &mut [u64], y: &[u64], w: u64) -> bool {
    let n = x.len();
    if !available(q) || p >= 2 * q || p < 2 || w >= q || n % 8 != 0 || y.len() < n {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: as in `dot_mod`.
        unsafe { imp::sub_mul_const(q, p, x, y, w) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// How many products [`mul_acc`] may add to an entry between reductions ([`reduce_acc`] /
/// [`fold_acc`]): each adds below `2^52` to the 64-bit low word `L`.
pub const ACC_TERMS: usize = 4095;

/// Lazy sums of products for a prime `q < 2^50` in the layout of `u128` accumulators that the
/// kernels below share: per block of 8 coefficients, 8 slots hold `L_0..L_7` (the sums of the
/// low 52 bits of the products, as `u64`s) then `H_0..H_7` (of the high bits), the value being
/// `L + 2^52·H`. A zeroed buffer is the sum 0.
///
/// `acc0[k] += Σ_t a0_t[k]·b_t[k]` and, with `acc1 = Some`, `acc1[k] += Σ_t a1_t[k]·b_t[k]` for
/// `terms = [(a0_t, a1_t, b_t)]` (`a1_t` unused without `acc1`), entries `< q`, at most
/// [`ACC_TERMS`] products per entry since the last reduction (the caller counts).
/// `acc0.len()` (and `acc1`'s) a multiple of 8, every term slice at least as long. Returns
/// `false` (nothing written) when it cannot run.
pub fn mul_acc(q: u64, acc0: &mut [u128], acc1: Option<&mut [u128]>, terms: &[(&[u64], &[u64], &[u64])]) -> bool {
    let n = acc0.len();
    let pair = acc1.is_some();
    if !available(q)
        || n % 8 != 0
        || acc1.as_ref().is_some_and(|a| a.len() != n)
        || terms.iter().any(|(a0, a1, b)| a0.len() < n || b.len() < n || (pair && a1.len() < n))
    {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: AVX-512F and IFMA are present (`available`); the lengths are checked.
        unsafe { imp::mul_acc(acc0, acc1, terms) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out[k] = (L_k + 2^52·H_k) mod q` for [`mul_acc`]'s accumulators. Returns `false` (nothing
/// written) for a prime the kernels do not serve or lengths that differ or are not a multiple
/// of 8.
pub fn reduce_acc(q: u64, acc: &[u128], out: &mut [u64]) -> bool {
    if !available(q) || acc.len() != out.len() || acc.len() % 8 != 0 {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: as in `dot_mod`; `out` has `acc.len()` entries.
        unsafe { imp::reduce_acc(q, acc, Some(out)) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Reduces [`mul_acc`]'s accumulators in place (`L ← value mod q`, `H ← 0`): each entry then
/// holds one term. `false` (nothing changed) as for [`reduce_acc`].
pub fn fold_acc(q: u64, acc: &mut [u128]) -> bool {
    if !available(q) || acc.len() % 8 != 0 {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: as in `dot_mod`.
        unsafe { imp::fold_acc(q, acc) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `⌊w·2^52 / q⌋`: the 52-bit Shoup constant of `w < q`.
fn shoup52(w: u64, q: u64) -> u64 {
    (((w as u128) << 52) / q as u128) as u64
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::shoup52;
    use std::arch::x86_64::*;

    const MASK52: i64 = ((1u64 << 52) - 1) as i64;

    /// `x·w mod q` in `[0, 2q)` for lanes `x < 2^52`, `w < q`, `ws = ⌊w·2^52/q⌋`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn shoup(x: __m512i, w: __m512i, ws: __m512i, q: __m512i) -> __m512i {
        let zero = _mm512_setzero_si512();
        let qhat = _mm512_madd52hi_epu64(zero, x, ws);
        let a = _mm512_madd52lo_epu64(zero, x, w);
        let b = _mm512_madd52lo_epu64(zero, qhat, q);
        _mm512_and_si512(_mm512_sub_epi64(a, b), _mm512_set1_epi64(MASK52))
    }

    /// `min(r, r − m)` lane-wise (unsigned): `r − m` where `r ≥ m`, else `r`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn csub(r: __m512i, m: __m512i) -> __m512i {
        _mm512_min_epu64(r, _mm512_sub_epi64(r, m))
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) unsafe fn dot_mod(q: u64, terms: &[(&[u64], &[u64])], scaled: Option<(&[u64], u64)>, out: &mut [u64]) {
        let n = out.len();
        let c52 = ((1u128 << 52) % q as u128) as u64;
        let (vq, v2q) = (_mm512_set1_epi64(q as i64), _mm512_set1_epi64((2 * q) as i64));
        let (vc, vcs) = (_mm512_set1_epi64(c52 as i64), _mm512_set1_epi64(shoup52(c52, q) as i64));
        let (vone, vones) = (_mm512_set1_epi64(1), _mm512_set1_epi64(shoup52(1, q) as i64));
        let vmask = _mm512_set1_epi64(MASK52);
        let sc = scaled.map(|(z, c)| (z, _mm512_set1_epi64(c as i64)));
        let zero = _mm512_setzero_si512();
        for k in (0..n).step_by(8) {
            let (mut lo, mut hi) = (zero, zero);
            for (x, y) in terms {
                // SAFETY: k + 8 <= n <= x.len(), y.len() (checked by the caller).
                let vx = unsafe { _mm512_loadu_si512(x.as_ptr().add(k).cast()) };
                let vy = unsafe { _mm512_loadu_si512(y.as_ptr().add(k).cast()) };
                lo = _mm512_madd52lo_epu64(lo, vx, vy);
                hi = _mm512_madd52hi_epu64(hi, vx, vy);
            }
            if let Some((z, vcz)) = sc {
                // SAFETY: as above.
                let vz = unsafe { _mm512_loadu_si512(z.as_ptr().add(k).cast()) };
                lo = _mm512_madd52lo_epu64(lo, vz, vcz);
                hi = _mm512_madd52hi_epu64(hi, vz, vcz);
            }
            // S = lo + 2^52·hi with lo < 2^52 after carrying lo's top bits into hi.
            hi = _mm512_add_epi64(hi, _mm512_srli_epi64(lo, 52));
            lo = _mm512_and_si512(lo, vmask);
            let r = _mm512_add_epi64(shoup(hi, vc, vcs, vq), shoup(lo, vone, vones, vq)); // < 4q
            let r = csub(csub(r, v2q), vq);
            // SAFETY: k + 8 <= n = out.len().
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(k).cast(), r) };
        }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) unsafe fn mul_acc(acc0: &mut [u128], mut acc1: Option<&mut [u128]>, terms: &[(&[u64], &[u64], &[u64])]) {
        let n = acc0.len();
        // L1-sized blocks of coefficients: every term is applied to a block before the next, so
        // an accumulator entry leaves the cache once per call (as the scalar kernel does).
        const BLOCK: usize = 128;
        let mut lo = 0;
        while lo < n {
            let hi = (lo + BLOCK).min(n);
            for &(a0, a1, b) in terms {
                for k in (lo..hi).step_by(8) {
                    // SAFETY: k + 8 <= n <= every slice's length (checked by the caller); the
                    // accumulator block k..k+8 is 8 u128 = 128 bytes: L at +0, H at +64.
                    unsafe {
                        let vb = _mm512_loadu_si512(b.as_ptr().add(k).cast());
                        let va = _mm512_loadu_si512(a0.as_ptr().add(k).cast());
                        let p = acc0.as_mut_ptr().add(k).cast::<u64>();
                        let (l, h) = (_mm512_loadu_si512(p.cast()), _mm512_loadu_si512(p.add(8).cast()));
                        _mm512_storeu_si512(p.cast(), _mm512_madd52lo_epu64(l, va, vb));
                        _mm512_storeu_si512(p.add(8).cast(), _mm512_madd52hi_epu64(h, va, vb));
                        if let Some(acc1) = acc1.as_deref_mut() {
                            let va = _mm512_loadu_si512(a1.as_ptr().add(k).cast());
                            let p = acc1.as_mut_ptr().add(k).cast::<u64>();
                            let (l, h) = (_mm512_loadu_si512(p.cast()), _mm512_loadu_si512(p.add(8).cast()));
                            _mm512_storeu_si512(p.cast(), _mm512_madd52lo_epu64(l, va, vb));
                            _mm512_storeu_si512(p.add(8).cast(), _mm512_madd52hi_epu64(h, va, vb));
                        }
                    }
                }
            }
            lo = hi;
        }
    }

    /// `(L + 2^52·H) mod q` of eight lanes, for any 64-bit `L` and `H`: with `L = L1·2^52 + L0`
    /// and `H' = H + L1 = H1·2^52 + H0` (the carry into `H'` is at most `2^12`, so `H'` does
    /// not wrap for the sums [`super::ACC_TERMS`] allows), the value is
    /// `L0 + H0·(2^52 mod q) + H1·(2^104 mod q)`: three Shoup products, each `< 2q`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn reduce_lh(l: __m512i, h: __m512i, k: &ReduceConsts) -> __m512i {
        let h = _mm512_add_epi64(h, _mm512_srli_epi64(l, 52));
        let l0 = _mm512_and_si512(l, k.mask);
        let (h0, h1) = (_mm512_and_si512(h, k.mask), _mm512_srli_epi64(h, 52));
        let r = _mm512_add_epi64(shoup(l0, k.one, k.one_s, k.q), shoup(h0, k.c52, k.c52_s, k.q));
        let r = _mm512_add_epi64(r, shoup(h1, k.c104, k.c104_s, k.q)); // < 6q < 2^53
        csub(csub(csub(r, k.q4), k.q2), k.q)
    }

    struct ReduceConsts {
        q: __m512i,
        q2: __m512i,
        q4: __m512i,
        mask: __m512i,
        one: __m512i,
        one_s: __m512i,
        c52: __m512i,
        c52_s: __m512i,
        c104: __m512i,
        c104_s: __m512i,
    }

    #[target_feature(enable = "avx512f")]
    fn reduce_consts(q: u64) -> ReduceConsts {
        let c52 = ((1u128 << 52) % q as u128) as u64;
        let c104 = ((c52 as u128 * c52 as u128) % q as u128) as u64;
        let v = |x: u64| _mm512_set1_epi64(x as i64);
        ReduceConsts {
            q: v(q),
            q2: v(2 * q),
            q4: v(4 * q),
            mask: v((1 << 52) - 1),
            one: v(1),
            one_s: v(shoup52(1, q)),
            c52: v(c52),
            c52_s: v(shoup52(c52, q)),
            c104: v(c104),
            c104_s: v(shoup52(c104, q)),
        }
    }

    /// `out[k] = value_k mod q` (or, without `out`, nothing: see [`fold_acc`]).
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) unsafe fn reduce_acc(q: u64, acc: &[u128], out: Option<&mut [u64]>) {
        let k = reduce_consts(q);
        if let Some(out) = out {
            for b in (0..acc.len()).step_by(8) {
                // SAFETY: b + 8 <= acc.len() = out.len(); the block is 128 bytes: L, then H.
                unsafe {
                    let p = acc.as_ptr().add(b).cast::<u64>();
                    let r = reduce_lh(_mm512_loadu_si512(p.cast()), _mm512_loadu_si512(p.add(8).cast()), &k);
                    _mm512_storeu_si512(out.as_mut_ptr().add(b).cast(), r);
                }
            }
        }
    }

    /// Each block's `L ← value mod q`, `H ← 0`.
    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) unsafe fn fold_acc(q: u64, acc: &mut [u128]) {
        let k = reduce_consts(q);
        for b in (0..acc.len()).step_by(8) {
            // SAFETY: b + 8 <= acc.len(); the block is 128 bytes.
            unsafe {
                let p = acc.as_mut_ptr().add(b).cast::<u64>();
                let r = reduce_lh(_mm512_loadu_si512(p.cast()), _mm512_loadu_si512(p.add(8).cast()), &k);
                _mm512_storeu_si512(p.cast(), r);
                _mm512_storeu_si512(p.add(8).cast(), _mm512_setzero_si512());
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    pub(super) unsafe fn sub_mul_const(q: u64, p: u64, x: &mut [u64], y: &[u64], w: u64) {
        let n = x.len();
        let vq = _mm512_set1_epi64(q as i64);
        let vhalf = _mm512_set1_epi64((p / 2) as i64);
        let vpm = _mm512_set1_epi64((p % q) as i64);
        let (vw, vws) = (_mm512_set1_epi64(w as i64), _mm512_set1_epi64(shoup52(w, q) as i64));
        // a − b mod q for a, b < q.
        let sub_mod = |a: __m512i, b: __m512i| -> __m512i {
            let d = _mm512_sub_epi64(a, b);
            let lt = _mm512_cmplt_epu64_mask(a, b);
            _mm512_mask_add_epi64(d, lt, d, vq)
        };
        for k in (0..n).step_by(8) {
            // SAFETY: k + 8 <= n <= y.len(), x.len().
            let vy = unsafe { _mm512_loadu_si512(y.as_ptr().add(k).cast()) };
            let vx = unsafe { _mm512_loadu_si512(x.as_ptr().add(k).cast()) };
            // [y]_P mod q: y mod q (y < p < 2q), minus p where y > p/2 (the negative lift).
            let r = csub(vy, vq);
            let neg = _mm512_cmpgt_epu64_mask(vy, vhalf);
            let r = sub_mod(r, _mm512_maskz_mov_epi64(neg, vpm));
            let d = sub_mod(vx, r);
            let out = csub(shoup(d, vw, vws, vq), vq);
            // SAFETY: as above.
            unsafe { _mm512_storeu_si512(x.as_mut_ptr().add(k).cast(), out) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modulus::{ntt_primes, Modulus};
    use crate::sample::uniform_below;
    use crate::Prg;

    fn reference(m: &Modulus, terms: &[(&[u64], &[u64])], scaled: Option<(&[u64], u64)>, n: usize) -> Vec<u64> {
        (0..n)
            .map(|k| {
                let mut s = terms.iter().fold(0u64, |acc, (x, y)| m.add(acc, m.mul(x[k], y[k])));
                if let Some((z, c)) = scaled {
                    s = m.add(s, m.mul(z[k], c));
                }
                s
            })
            .collect()
    }

    /// Random residues with the extremes 0, 1, q − 1 at the front.
    fn residues(prg: &mut Prg, q: u64, n: usize) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).map(|_| uniform_below(prg, q)).collect();
        v[..3].copy_from_slice(&[q - 1, 0, 1]);
        v
    }

    #[test]
    fn dot_mod_equals_scalar_sums() {
        let mut prg = Prg::new([4; 16]);
        let n = 8192;
        for bits in [30u32, 45, 49, 50] {
            let q = ntt_primes(bits, n, 1, &[]).unwrap()[0];
            let m = Modulus::new(q).unwrap();
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512ifma") {
                assert!(available(q), "this CPU has IFMA: the kernels must run for {bits}-bit primes");
            }
            let v: Vec<Vec<u64>> = (0..10).map(|_| residues(&mut prg, q, n)).collect();
            let all_max = vec![q - 1; n];
            for t in 1..=4 {
                let terms: Vec<(&[u64], &[u64])> = (0..t).map(|i| (&v[2 * i][..], &v[2 * i + 1][..])).collect();
                for scaled in [None, Some((&v[9][..], q - 1)), Some((&all_max[..], q - 1))] {
                    let mut out = vec![7u64; n];
                    if !dot_mod(q, &terms, scaled, &mut out) {
                        assert!(!available(q), "IFMA available but refused");
                        assert_eq!(out, vec![7u64; n], "output touched when refused");
                        continue;
                    }
                    assert_eq!(out, reference(&m, &terms, scaled, n), "{bits} bits, {t} terms");
                }
            }
            // Every entry at q − 1 in all five terms: the largest sums.
            let terms: Vec<(&[u64], &[u64])> = (0..4).map(|_| (&all_max[..], &all_max[..])).collect();
            let mut out = vec![0u64; n];
            if dot_mod(q, &terms, Some((&all_max, q - 1)), &mut out) {
                assert_eq!(out, reference(&m, &terms, Some((&all_max, q - 1)), n));
            }
        }
    }

    /// The key switch feeds [`dot_mod`] NTT outputs and key limbs as they are: `tfhe-ntt`'s
    /// transforms must leave fully reduced residues for the IFMA primes.
    #[test]
    fn ntt_outputs_are_reduced_residues() {
        let mut prg = Prg::new([6; 16]);
        for bits in [49u32, 50] {
            let q = ntt_primes(bits, 8192, 1, &[]).unwrap()[0];
            if !available(q) {
                continue; // without IFMA the kernels never see these outputs
            }
            let plan = crate::ntt::NttPlan::new(8192, q).unwrap();
            for _ in 0..4 {
                let mut v = residues(&mut prg, q, 8192);
                plan.forward(&mut v);
                assert!(v.iter().all(|&x| x < q), "forward output not reduced ({bits} bits)");
                plan.inverse(&mut v);
                assert!(v.iter().all(|&x| x < q), "inverse output not reduced ({bits} bits)");
            }
        }
    }

    #[test]
    fn lazy_sums_equal_scalar_sums() {
        let mut prg = Prg::new([7; 16]);
        let n = 264; // two blocks of 128 and a tail of 8
        for bits in [40u32, 50] {
            let q = ntt_primes(bits, 8192, 1, &[]).unwrap()[0];
            if !available(q) {
                continue;
            }
            let m = Modulus::new(q).unwrap();
            let (mut acc0, mut acc1) = (vec![0u128; n], vec![0u128; n]);
            let (mut want0, mut want1) = (vec![0u64; n], vec![0u64; n]);
            let max = vec![q - 1; n];
            let mut added = 0;
            // Groups of 1 to 5 terms, a fold in the middle, all-maximal entries included.
            for (round, t) in [1usize, 5, 3, 2, 4].into_iter().enumerate() {
                let v: Vec<Vec<u64>> = (0..3 * t).map(|i| if round == 1 && i < 3 { max.clone() } else { residues(&mut prg, q, n) }).collect();
                let terms: Vec<(&[u64], &[u64], &[u64])> = (0..t).map(|i| (&v[3 * i][..], &v[3 * i + 1][..], &v[3 * i + 2][..])).collect();
                assert!(mul_acc(q, &mut acc0, Some(&mut acc1), &terms));
                for (a0, a1, b) in &terms {
                    for k in 0..n {
                        want0[k] = m.add(want0[k], m.mul(a0[k], b[k]));
                        want1[k] = m.add(want1[k], m.mul(a1[k], b[k]));
                    }
                }
                added += t;
                if round == 2 {
                    assert!(fold_acc(q, &mut acc0));
                }
            }
            // One accumulator alone.
            let (x, y) = (residues(&mut prg, q, n), residues(&mut prg, q, n));
            assert!(mul_acc(q, &mut acc1, None, &[(&x, &[], &y)]));
            for k in 0..n {
                want1[k] = m.add(want1[k], m.mul(x[k], y[k]));
            }
            let (mut out0, mut out1) = (vec![0u64; n], vec![0u64; n]);
            assert!(reduce_acc(q, &acc0, &mut out0) && reduce_acc(q, &acc1, &mut out1));
            assert_eq!(out0, want0, "{bits} bits, {added} terms");
            assert_eq!(out1, want1, "{bits} bits");
            // The most products between reductions, all maximal.
            let mut acc = vec![0u128; 8];
            let terms: Vec<(&[u64], &[u64], &[u64])> = (0..ACC_TERMS).map(|_| (&max[..8], &max[..8], &max[..8])).collect();
            assert!(mul_acc(q, &mut acc, None, &terms));
            let mut out = vec![0u64; 8];
            assert!(reduce_acc(q, &acc, &mut out));
            let one = m.mul(q - 1, q - 1);
            assert_eq!(out, vec![m.mul(one, ACC_TERMS as u64 % q); 8]);
        }
    }

    #[test]
    fn refusals_leave_the_output() {
        let q = ntt_primes(59, 8192, 1, &[]).unwrap()[0];
        let x: &[u64] = &[1u64; 16];
        let mut out = vec![9u64; 16];
        assert!(!dot_mod(q, &[(x, x)], None, &mut out), "a 59-bit prime is not IFMA's");
        let q = ntt_primes(49, 8192, 1, &[]).unwrap()[0];
        assert!(!dot_mod(q, &[(x, x)], None, &mut out[..12]), "length not a multiple of 8");
        assert!(!dot_mod(q, &[(x, x); 6], None, &mut out), "too many terms");
        assert!(!dot_mod(q, &[(&x[..8], x)], None, &mut out), "short input");
        assert!(!dot_mod(q, &[], Some((x, q)), &mut out), "constant not reduced");
        assert_eq!(out, vec![9u64; 16]);
    }

    #[test]
    fn sub_mul_const_equals_scalar_mod_down() {
        let mut prg = Prg::new([5; 16]);
        let n = 8192;
        for (qb, pb) in [(50u32, 50u32), (49, 50), (50, 49), (40, 40)] {
            let ps = ntt_primes(qb.max(pb), n, 2, &[]).unwrap();
            let (q, p) = if qb == pb {
                (ps[0], ps[1])
            } else {
                let q = ntt_primes(qb, n, 1, &[]).unwrap()[0];
                let p = ntt_primes(pb, n, 1, &[q]).unwrap()[0];
                (q, p)
            };
            let m = Modulus::new(q).unwrap();
            let w = uniform_below(&mut prg, q);
            let x = residues(&mut prg, q, n);
            let mut y: Vec<u64> = (0..n).map(|_| uniform_below(&mut prg, p)).collect();
            y[..4].copy_from_slice(&[p - 1, 0, p / 2, p / 2 + 1]);
            let want: Vec<u64> = x
                .iter()
                .zip(&y)
                .map(|(&a, &b)| {
                    let r = if b > p / 2 { m.sub(m.reduce(b), m.reduce(p)) } else { m.reduce(b) };
                    m.mul(m.sub(a, r), w)
                })
                .collect();
            let mut got = x.clone();
            if sub_mul_const(q, p, &mut got, &y, w) {
                assert_eq!(got, want, "q {qb} bits, p {pb} bits");
            } else {
                assert!(!available(q) || p >= 2 * q);
                assert_eq!(got, x);
            }
        }
    }
}
