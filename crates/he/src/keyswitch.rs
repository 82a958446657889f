//! Automorphisms `X -> X^g` with hybrid key switching (one special prime `P`).
//!
//! For `ct = (c0, c1)` under `s`, `(τ_g(c0), τ_g(c1))` decrypts under `τ_g(s)`; key switching
//! replaces `d = τ_g(c1)` by `(Σ_j [d]_{q_j}·b_j, Σ_j [d]_{q_j}·a_j) / P` (rounded, over
//! `q·P`), which decrypts to `d·τ_g(s) + Σ_j [d]_{q_j}·e_j / P`. Added noise:
//! `<= l·N·max q_j·B/P + (1 + |s|_1)/2` (about `2^10·sqrt(N)·B` for the OLT preset,
//! far below its `2^98` budget).
//! Cost at level `l`: `l·(l+1)` forward NTTs and `2(l+1)` inverse NTTs for a coefficient-form
//! input; for an NTT-form input `l` inverse NTTs (of `c1`) plus `l·l` forward and `2(l+1)`
//! inverse, `c0` being permuted in the evaluation domain. `2·l·(l+1)` point-wise
//! multiply-accumulates; parallel over the `l+1` target primes.

use crate::ciphertext::Ciphertext;
use crate::keys::{GaloisKey, GaloisKeys};
use crate::params::Params;
use crate::poly::{with_scratch, RnsPoly};
use crate::HeError;
use nectar_math::modulus::Modulus;
use nectar_math::ifma;
use rayon::prelude::*;

/// `dst ← τ_g(src)` for one coefficient-form limb: `dst[k·g mod 2N] = ±src[k]` (`X^N = −1`).
#[inline]
pub(crate) fn auto_coeff_limb(m: &Modulus, src: &[u64], dst: &mut [u64], g: u64) {
    let n = src.len();
    let mask = 2 * n - 1;
    let step = g as usize & mask;
    let mut j = 0usize;
    for &x in src {
        if j < n {
            dst[j] = x;
        } else {
            dst[j - n] = m.neg(x);
        }
        j = (j + step) & mask;
    }
}

/// `dst ← dst + τ_g(src)` for one coefficient-form limb.
#[inline]
fn auto_coeff_limb_add(m: &Modulus, src: &[u64], dst: &mut [u64], g: u64) {
    let n = src.len();
    let mask = 2 * n - 1;
    let step = g as usize & mask;
    let mut j = 0usize;
    for &x in src {
        if j < n {
            dst[j] = m.add(dst[j], x);
        } else {
            dst[j - n] = m.sub(dst[j - n], x);
        }
        j = (j + step) & mask;
    }
}

/// `τ_g(ct)` key-switched back to `s` with `key` (coefficient-form result, level unchanged).
///
/// With `d = τ_g(c1)` and digits `d_j = [d]_{q_j}`, each target prime `t` (the level's primes
/// and `P`) accumulates `Σ_j NTT_t(d_j)·(b_j, a_j)` (lazily, in the evaluation domain) and is
/// transformed back once; the mod-down `round(·/P)` then adds `τ_g(c0)`. When the input is in
/// NTT form, `τ_g` is a slot permutation ([`Params::ntt_galois_perm`]): the diagonal digits
/// need no forward transform and `τ_g(c0)` enters as `P·τ_g(c0)` before the inverse transform
/// (`(x + P·c − [x]_P)/P = (x − [x]_P)/P + c` exactly), so `c0` is never transformed. Same
/// residues as transforming everything to coefficients first, bit for bit.
pub(crate) fn automorphism_key_switch(params: &Params, ct: &Ciphertext, g: u64, key: &GaloisKey) -> Result<Ciphertext, HeError> {
    let sp = params.special_modulus().copied().ok_or(HeError::NoSpecialPrime)?;
    let l = ct.level();
    let n = params.n();
    let sp_idx = params.max_level();
    // A key truncated to a lower level (`GaloisKeys::serialize_digits`) serves that level and
    // below: its digits and primes must cover this ciphertext's.
    let b: Vec<Vec<&[u64]>> = (0..l)
        .map(|j| {
            let k = key.b.get(j).ok_or_else(|| HeError::Mismatch(format!("Galois key {g} has {} digits, a ciphertext at level {l} needs {l}", key.b.len())))?;
            (0..l).chain([sp_idx]).map(|t| k.limb_of(t).ok_or_else(|| HeError::Mismatch(format!("Galois key {g} lacks prime {t} for level {l}")))).collect()
        })
        .collect::<Result<_, _>>()?;
    let perm = if ct.c0.ntt || ct.c1.ntt { params.ntt_galois_perm(g) } else { None };
    let perm = perm.as_deref().map(|p| &p[..]);
    // Digits: d = τ_g(c1) in coefficient form, and its NTT form when it comes for free.
    let mut d = vec![0u64; l * n];
    let mut d_ntt: Option<Vec<u64>> = None;
    match (ct.c1.ntt, perm) {
        // A coefficient permutation is ~10 µs per limb: not worth a parallel dispatch.
        (false, _) => d.chunks_mut(n).enumerate().for_each(|(j, dj)| {
            auto_coeff_limb(params.modulus(j), ct.c1.limb(j), dj, g);
        }),
        (true, Some(perm)) => {
            let mut dn = vec![0u64; l * n];
            dn.par_chunks_mut(n).zip(d.par_chunks_mut(n)).enumerate().for_each(|(j, (dnj, dj))| {
                let src = ct.c1.limb(j);
                dnj.iter_mut().zip(perm).for_each(|(o, &p)| *o = src[p as usize]);
                dj.copy_from_slice(dnj);
                params.plan(j).inverse(dj);
            });
            d_ntt = Some(dn);
        }
        (true, None) => {
            let mut c1 = ct.c1.clone();
            c1.to_coeff(params);
            d.par_chunks_mut(n).enumerate().for_each(|(j, dj)| {
                auto_coeff_limb(params.modulus(j), c1.limb(j), dj, g);
            });
        }
    }
    // c0 folded in the evaluation domain (NTT input with a permutation), else added after.
    let c0_perm = if ct.c0.ntt { perm } else { None };
    let c0_coeff = if ct.c0.ntt && c0_perm.is_none() {
        let mut c0 = ct.c0.clone();
        c0.to_coeff(params);
        Some(c0)
    } else {
        None
    };
    let mut acc0 = vec![0u64; (l + 1) * n];
    let mut acc1 = vec![0u64; (l + 1) * n];
    acc0.par_chunks_mut(n).zip(acc1.par_chunks_mut(n)).enumerate().for_each(|(ti, (a0, a1))| {
        with_scratch(l * n, |scratch| {
            let t = if ti < l { ti } else { sp_idx };
            let m = params.modulus(t);
            let plan = params.plan(t);
            // NTT_t of every digit (the diagonal one may already be at hand).
            for (j, tmp) in scratch.chunks_mut(n).enumerate() {
                if d_ntt.is_some() && t == j {
                    continue;
                }
                let dj = &d[j * n..(j + 1) * n];
                let (qj, qt) = (params.modulus(j).value(), m.value());
                if qj < qt {
                    tmp.copy_from_slice(dj);
                } else if qj <= 2 * qt {
                    // One branch-free conditional subtraction (about half the residues need it,
                    // so a branch would mispredict).
                    tmp.iter_mut().zip(dj).for_each(|(x, &y)| *x = y - (qt & !lt_mask(y, qt)));
                } else {
                    tmp.iter_mut().zip(dj).for_each(|(x, &y)| *x = m.reduce(y));
                }
                plan.forward(tmp);
            }
            let digits: Vec<&[u64]> = (0..l)
                .map(|j| match &d_ntt {
                    Some(dn) if t == j => &dn[j * n..(j + 1) * n],
                    _ => &scratch[j * n..(j + 1) * n],
                })
                .collect();
            let b: Vec<&[u64]> = (0..l).map(|j| b[j][ti]).collect();
            let a: Vec<&[u64]> = (0..l).map(|j| key.a[j].limb(t)).collect();
            let fold = if ti < l { c0_perm } else { None };
            inner_product(m, &digits, &b, &a, fold.map(|p| (p, ct.c0.limb(ti), m.reduce(sp.value()))), a0, a1);
            plan.inverse(a0);
            plan.inverse(a1);
        })
    });
    // Mod-down by P (exact rounding), plus τ_g(c0) in the coefficient domain if not folded.
    {
        let (k0, p0) = acc0.split_at_mut(l * n);
        let (k1, p1) = acc1.split_at_mut(l * n);
        let (p0, p1): (&[u64], &[u64]) = (p0, p1);
        let c0_src = c0_coeff.as_ref().unwrap_or(&ct.c0);
        k0.par_chunks_mut(n).zip(k1.par_chunks_mut(n)).enumerate().for_each(|(i, (o0, o1))| {
            let m = params.modulus(i);
            mod_down_limb(m, &sp, o0, p0);
            mod_down_limb(m, &sp, o1, p1);
            if c0_perm.is_none() {
                auto_coeff_limb_add(m, c0_src.limb(i), o0, g);
            }
        });
    }
    acc0.truncate(l * n);
    acc1.truncate(l * n);
    let mods: Vec<usize> = (0..l).collect();
    Ok(Ciphertext {
        c0: RnsPoly { n, data: acc0, ntt: false, mods: mods.clone() },
        c1: RnsPoly { n, data: acc1, ntt: false, mods },
        seed: None,
        plain_index: ct.plain_index,
    })
}

/// `(a0, a1) ← (Σ_j d_j ⊙ b_j, Σ_j d_j ⊙ a_j) (+ P·c0[perm] in a0)` modulo `m`, evaluation
/// domain, with lazy reduction: products are summed as 128-bit integers and reduced once per
/// output (in groups small enough not to overflow).
#[allow(clippy::type_complexity)]
fn inner_product(
    m: &Modulus,
    d: &[&[u64]],
    b_: &[&[u64]],
    a: &[&[u64]],
    fold: Option<(&[u32], &[u64], u64)>,
    a0: &mut [u64],
    a1: &mut [u64],
) {
    // AVX-512 IFMA ([`ifma::dot_mod`]) for primes below 2^50 (the narrow OLT set): eight 52-bit
    // products per instruction, the same residues. The fold's `c0[perm[k]]` are gathered first.
    // The two calls check the same things but for the scaled term; should the second refuse
    // after the first ran, the scalar loops below rewrite both outputs.
    if d.len() < ifma::MAX_TERMS && ifma::available(m.value()) {
        let q = m.value();
        let gathered: Option<(Vec<u64>, u64)> = fold.map(|(perm, c0, pm)| (perm.iter().map(|&i| c0[i as usize]).collect(), pm));
        let tb: Vec<(&[u64], &[u64])> = d.iter().zip(b_).map(|(x, y)| (*x, *y)).collect();
        let ta: Vec<(&[u64], &[u64])> = d.iter().zip(a).map(|(x, y)| (*x, *y)).collect();
        let scaled = gathered.as_ref().map(|(g, pm)| (&g[..], *pm));
        if ifma::dot_mod(q, &tb, scaled, a0) && ifma::dot_mod(q, &ta, None, a1) {
            return;
        }
    }
    let q1 = (m.value() - 1) as u128;
    let group = ((u128::MAX / (q1 * q1)) as usize).max(1);
    let l = d.len();
    let terms = l + fold.is_some() as usize;
    if terms <= group {
        // Common case: one reduction per output. With `x < 2^(2b+δ)` (`b` = bits of q,
        // `2^δ >= terms`) and `b + δ + 1 <= 64`, a one-word Barrett quotient
        // `⌊⌊x/2^(b−1)⌋·μ/2^(b+δ+1)⌋`, `μ = ⌊2^(2b+δ)/q⌋`, is at most 2 below `⌊x/q⌋`
        // (three truncations, each losing < 1), so two conditional subtractions finish it
        // (done with sign-bit masks, which needs `3q < 2^63`, i.e. `b <= 61`).
        let (q, b) = (m.value(), m.bits());
        let delta = (terms as u64).next_power_of_two().trailing_zeros();
        if b + delta < 64 && b <= 61 {
            let mu = ((1u128 << (2 * b + delta)) / q as u128) as u64;
            let (sh_in, sh_out) = (b - 1, b + delta + 1);
            let red = move |x: u128| {
                let q1 = (x >> sh_in) as u64;
                let qe = ((q1 as u128 * mu as u128) >> sh_out) as u64;
                let r = (x as u64).wrapping_sub(qe.wrapping_mul(q)); // < 3q < 2^63
                let r = r - (q & !lt_mask(r, q));
                r - (q & !lt_mask(r, q))
            };
            ip_loop(d, b_, a, fold, a0, a1, red);
        } else {
            ip_loop(d, b_, a, fold, a0, a1, |x| m.reduce_u128(x));
        }
        return;
    }
    for k in 0..a0.len() {
        let (mut r0, mut r1) = (0u64, 0u64);
        for js in (0..l).collect::<Vec<_>>().chunks(group) {
            let (mut s0, mut s1) = (0u128, 0u128);
            for &j in js {
                let x = d[j][k] as u128;
                s0 += x * b_[j][k] as u128;
                s1 += x * a[j][k] as u128;
            }
            r0 = m.add(r0, m.reduce_u128(s0));
            r1 = m.add(r1, m.reduce_u128(s1));
        }
        if let Some((perm, c0, pm)) = fold {
            r0 = m.add(r0, m.mul(c0[perm[k] as usize], pm));
        }
        a0[k] = r0;
        a1[k] = r1;
    }
}

/// The common-case loop of [`inner_product`] with the reduction `red` (monomorphised per
/// reduction so the hot loop has no branch on it). With more than four digits it is blocked over
/// `IP_BLOCK` coefficients: per block, the 128-bit sums are accumulated two digits per pass
/// (six sequential streams, no bounds checks, instead of `3·l` interleaved streams per
/// coefficient), then reduced once (~30% less time at `N = 16384`, eight digits).
#[inline(always)]
fn ip_loop(
    d: &[&[u64]],
    b: &[&[u64]],
    a: &[&[u64]],
    fold: Option<(&[u32], &[u64], u64)>,
    a0: &mut [u64],
    a1: &mut [u64],
    red: impl Fn(u128) -> u64,
) {
    // Few digits: coefficient by coefficient, the sums stay in registers (measured faster than
    // the blocked loop below at N = 4096 / 8192 with two to four digits); the digit count is a
    // const generic so the digit loop unrolls and the slices are pre-cut to `N` (no bounds checks).
    match d.len() {
        1 => return ip_small::<1>(d, b, a, fold, a0, a1, red),
        2 => return ip_small::<2>(d, b, a, fold, a0, a1, red),
        3 => return ip_small::<3>(d, b, a, fold, a0, a1, red),
        4 => return ip_small::<4>(d, b, a, fold, a0, a1, red),
        _ => {}
    }
    const IP_BLOCK: usize = 256;
    let n = a0.len();
    let (mut s0, mut s1) = ([0u128; IP_BLOCK], [0u128; IP_BLOCK]);
    let mut start = 0;
    while start < n {
        let end = (start + IP_BLOCK).min(n);
        let (s0, s1) = (&mut s0[..end - start], &mut s1[..end - start]);
        // Two digits per pass (half the accumulator read-modify-writes; four were not faster);
        // the first pass stores instead of adding.
        let r = start..end;
        let mut first = true;
        let mut j = 0;
        while j < d.len() {
            let two = j + 1 < d.len();
            let k = if two { j + 1 } else { j };
            let (d0, d1) = (&d[j][r.clone()], &d[k][r.clone()]);
            let (b0, b1) = (&b[j][r.clone()], &b[k][r.clone()]);
            let (a0_, a1_) = (&a[j][r.clone()], &a[k][r.clone()]);
            let it =
                s0.iter_mut().zip(s1.iter_mut()).zip(d0.iter().zip(d1)).zip(b0.iter().zip(b1)).zip(a0_.iter().zip(a1_));
            match (first, two) {
                (true, true) => it.for_each(|((((x0, x1), (&u, &v)), (&p, &q)), (&e, &f))| {
                    let (u, v) = (u as u128, v as u128);
                    *x0 = u * p as u128 + v * q as u128;
                    *x1 = u * e as u128 + v * f as u128;
                }),
                (false, true) => it.for_each(|((((x0, x1), (&u, &v)), (&p, &q)), (&e, &f))| {
                    let (u, v) = (u as u128, v as u128);
                    *x0 += u * p as u128 + v * q as u128;
                    *x1 += u * e as u128 + v * f as u128;
                }),
                (true, false) => it.for_each(|((((x0, x1), (&u, _)), (&p, _)), (&e, _))| {
                    *x0 = u as u128 * p as u128;
                    *x1 = u as u128 * e as u128;
                }),
                (false, false) => it.for_each(|((((x0, x1), (&u, _)), (&p, _)), (&e, _))| {
                    *x0 += u as u128 * p as u128;
                    *x1 += u as u128 * e as u128;
                }),
            }
            first = false;
            j += 1 + two as usize;
        }
        if let Some((perm, c0, pm)) = fold {
            for (x0, &p) in s0.iter_mut().zip(&perm[start..end]) {
                *x0 += c0[p as usize] as u128 * pm as u128;
            }
        }
        for (((o0, o1), &x0), &x1) in a0[start..end].iter_mut().zip(&mut a1[start..end]).zip(s0.iter()).zip(s1.iter()) {
            *o0 = red(x0);
            *o1 = red(x1);
        }
        start = end;
    }
}

/// [`ip_loop`] for exactly `L <= 4` digits, coefficient by coefficient.
#[inline(always)]
fn ip_small<const L: usize>(
    d: &[&[u64]],
    b: &[&[u64]],
    a: &[&[u64]],
    fold: Option<(&[u32], &[u64], u64)>,
    a0: &mut [u64],
    a1: &mut [u64],
    red: impl Fn(u128) -> u64,
) {
    let n = a0.len().min(a1.len());
    let d: [&[u64]; L] = std::array::from_fn(|j| &d[j][..n]);
    let b: [&[u64]; L] = std::array::from_fn(|j| &b[j][..n]);
    let a: [&[u64]; L] = std::array::from_fn(|j| &a[j][..n]);
    let (a0, a1) = (&mut a0[..n], &mut a1[..n]);
    for k in 0..n {
        let (mut s0, mut s1) = (0u128, 0u128);
        for j in 0..L {
            let x = d[j][k] as u128;
            s0 += x * b[j][k] as u128;
            s1 += x * a[j][k] as u128;
        }
        if let Some((perm, c0, pm)) = fold {
            s0 += c0[perm[k] as usize] as u128 * pm as u128;
        }
        a0[k] = red(s0);
        a1[k] = red(s1);
    }
}

/// `x ← round(x / P) mod q_i` given `x mod q_i` (in `x`) and `x mod P` (in `xp`), coefficient
/// form: `(x − [x]_P) · P^{-1}` with `[x]_P` the centred residue.
pub(crate) fn mod_down_limb(m: &Modulus, p: &Modulus, x: &mut [u64], xp: &[u64]) {
    let (pv, q) = (p.value(), m.value());
    let half = pv / 2;
    let p_mod = m.reduce(pv);
    let inv = m.inv(pv).unwrap_or(0);
    // IFMA for primes below 2^50 (the narrow OLT set): the same residues, eight at a time.
    if ifma::sub_mul_const(q, pv, x, xp, inv) {
        return;
    }
    let inv_s = m.shoup(inv);
    // Branch-free arithmetic (the residues are uniform, so branches would mispredict about half
    // the time; masks from the sign bit of a wrapping difference, all values < 2^62, so that
    // the compiler emits neither branches nor cmovs that it might turn back into branches).
    let sub = |a: u64, b: u64| {
        let d = a.wrapping_sub(b);
        d.wrapping_add(q & lt_mask(a, b))
    };
    let mul_inv = |a: u64| {
        let qt = ((a as u128 * inv_s as u128) >> 64) as u64;
        let r = a.wrapping_mul(inv).wrapping_sub(qt.wrapping_mul(q)); // < 2q
        r - (q & !lt_mask(r, q))
    };
    if pv < 2 * q {
        for (x, &y) in x.iter_mut().zip(xp) {
            let r = y - (q & !lt_mask(y, q));
            let r = sub(r, p_mod & lt_mask(half, y));
            *x = mul_inv(sub(*x, r));
        }
    } else {
        for (x, &y) in x.iter_mut().zip(xp) {
            let r = sub(m.reduce(y), p_mod & lt_mask(half, y));
            *x = mul_inv(sub(*x, r));
        }
    }
}

/// All ones if `a < b`, else zero, for `a, b < 2^63`: the sign bit of `a − b`, as arithmetic.
#[inline(always)]
fn lt_mask(a: u64, b: u64) -> u64 {
    (a.wrapping_sub(b) >> 63).wrapping_neg()
}

impl Ciphertext {
    /// The automorphism `X -> X^g` (`g` odd, `< 2N`) applied to the plaintext, with key
    /// switching back to `s`. The input may be in either form (NTT form saves the transforms
    /// of `c0` and of the diagonal digits); the result is in coefficient form.
    pub fn automorphism(&self, params: &Params, g: u64, keys: &GaloisKeys) -> Result<Ciphertext, HeError> {
        let key = keys.keys.get(&g).ok_or(HeError::MissingGaloisKey(g))?;
        automorphism_key_switch(params, self, g, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::modulus::ntt_primes;
    use nectar_math::Prg;
    use rand_core::RngCore;

    fn refs(v: &[Vec<u64>]) -> Vec<&[u64]> {
        v.iter().map(|x| &x[..]).collect()
    }

    /// The lazy inner product against a term-by-term reference, including all-maximal inputs
    /// (the worst case of the one-word Barrett bound) and moduli where it falls back.
    #[test]
    fn inner_product_matches_reference() {
        let n = 512; // two blocks of the blocked loop
        let mut prg = Prg::new([3; 16]);
        for bits in [30u32, 49, 55, 59, 61, 62] {
            let m = Modulus::new(ntt_primes(bits, n, 1, &[]).unwrap()[0]).unwrap();
            let q = m.value();
            for l in [1usize, 3, 5, 8] {
                for extreme in [false, true] {
                    let gen = |prg: &mut Prg| -> Vec<u64> {
                        (0..n).map(|_| if extreme { q - 1 } else { prg.next_u64() % q }).collect()
                    };
                    let d: Vec<Vec<u64>> = (0..l).map(|_| gen(&mut prg)).collect();
                    let b: Vec<Vec<u64>> = (0..l).map(|_| gen(&mut prg)).collect();
                    let a: Vec<Vec<u64>> = (0..l).map(|_| gen(&mut prg)).collect();
                    let c0 = gen(&mut prg);
                    let perm: Vec<u32> = (0..n as u32).rev().collect();
                    let pm = q - 1;
                    for fold in [None, Some((&perm[..], &c0[..], pm))] {
                        let (mut a0, mut a1) = (vec![0; n], vec![0; n]);
                        inner_product(&m, &refs(&d), &refs(&b), &refs(&a), fold, &mut a0, &mut a1);
                        for k in 0..n {
                            let mut r0 = 0;
                            let mut r1 = 0;
                            for j in 0..l {
                                r0 = m.add(r0, m.mul(d[j][k], b[j][k]));
                                r1 = m.add(r1, m.mul(d[j][k], a[j][k]));
                            }
                            if let Some((p, c, w)) = fold {
                                r0 = m.add(r0, m.mul(c[p[k] as usize], w));
                            }
                            assert_eq!((a0[k], a1[k]), (r0, r1), "bits {bits} l {l} k {k}");
                        }
                    }
                }
            }
        }
    }
}
