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
/// checked, the entries are the caller's promise: reduced residues), every slice at least `out.len()` long,
/// `out.len()` a multiple of 8. Returns `false` (and leaves `out`) when it cannot run.
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
