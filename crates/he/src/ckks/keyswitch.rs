//! Hybrid key switching with **centred** digits for CKKS (one special prime `P`; keys in the
//! layout of [`crate::keys`]).
//!
//! `τ_g(c0, c1)` under `τ_g(s)` becomes `(τ_g(c0) + ⌊Σ_j D_j·b_j / P⌉, ⌊Σ_j D_j·a_j / P⌉)`
//! under `s`, with digits `D_j = [τ_g(c1)]_{q_j}` lifted to `(−q_j/2, q_j/2]`. Centring matters
//! for CKKS and not for BFV: digits in `[0, q_j)` have mean `q_j/2` in every coefficient, and
//! `(q_j/2)·(1 + X + … + X^{N−1})·e_j / P` puts an error of about `(N/π)·σ√N` into the few slots
//! near `ζ^{±1}` (measured: 4 bits of slot precision lost at `N = 2^13`); centred digits leave a
//! white error of about `√(l·N/12)·σ·max q_j / P` per coefficient plus the rounding term.
//! Cost at level `l`: `l·(l+1)` forward and `2(l+1)` inverse NTTs, parallel over the `l+1`
//! target primes.

use crate::keys::GaloisKey;
use crate::keyswitch::{auto_coeff_limb, mod_down_limb};
use crate::params::Params;
use crate::poly::{with_scratch, RnsPoly};
use crate::HeError;
use rayon::prelude::*;

/// Key-switches `(τ_g(c0), τ_g(c1))` back to `s` with `key` (`g = 1`: no automorphism, as in
/// relinearisation). Inputs in either form on the first `l` primes; outputs in coefficient form.
pub(crate) fn key_switch(params: &Params, c0: &RnsPoly, c1: &RnsPoly, g: u64, key: &GaloisKey) -> Result<(RnsPoly, RnsPoly), HeError> {
    let sp = *params.special_modulus().ok_or(HeError::NoSpecialPrime)?;
    let sp_idx = params.max_level();
    let n = params.n();
    let l = c1.limbs();
    if c0.limbs() != l || key.b.len() < l {
        return Err(HeError::Mismatch(format!("key switch: a key of {} digits for a ciphertext at level {l}", key.b.len())));
    }
    // A key truncated to a lower level (`GaloisKeys::serialize_digits`) lacks the upper
    // primes: its limbs are found by modulus.
    let b: Vec<Vec<&[u64]>> = key.b[..l]
        .iter()
        .map(|k| (0..l).chain([sp_idx]).map(|t| k.limb_of(t).ok_or_else(|| HeError::Mismatch(format!("key switch: the key lacks prime {t} for level {l}")))).collect())
        .collect::<Result<_, _>>()?;
    let coeff = |p: &RnsPoly| {
        let mut c = p.clone();
        c.to_coeff(params);
        c
    };
    let (c0, c1) = (coeff(c0), coeff(c1));
    // τ_g in the coefficient domain.
    let auto = |p: &RnsPoly| -> RnsPoly {
        if g == 1 {
            return p.clone();
        }
        let mut out = RnsPoly::zero_level(n, l, false);
        out.data.par_chunks_mut(n).enumerate().for_each(|(i, o)| auto_coeff_limb(params.modulus(i), p.limb(i), o, g));
        out
    };
    let (c0g, d) = (auto(&c0), auto(&c1));
    // Centred digits as signed integers (|D_j| <= q_j/2 < 2^61).
    let digits: Vec<Vec<i64>> = (0..l).map(|j| {
        let m = params.modulus(j);
        d.limb(j).iter().map(|&x| m.center(x)).collect()
    }).collect();
    let mut acc0 = vec![0u64; (l + 1) * n];
    let mut acc1 = vec![0u64; (l + 1) * n];
    acc0.par_chunks_mut(n).zip(acc1.par_chunks_mut(n)).enumerate().for_each(|(ti, (a0, a1))| {
        let t = if ti < l { ti } else { sp_idx };
        let m = params.modulus(t);
        let plan = params.plan(t);
        with_scratch(n, |tmp| {
            for (j, dj) in digits.iter().enumerate() {
                tmp.iter_mut().zip(dj).for_each(|(x, &v)| *x = m.reduce_i64(v));
                plan.forward(tmp);
                plan.mul_accumulate(a0, tmp, b[j][ti]);
                plan.mul_accumulate(a1, tmp, key.a[j].limb(t));
            }
        });
        plan.inverse(a0);
        plan.inverse(a1);
    });
    let (k0, p0) = acc0.split_at_mut(l * n);
    let (k1, p1) = acc1.split_at_mut(l * n);
    let (p0, p1): (&[u64], &[u64]) = (p0, p1);
    k0.par_chunks_mut(n).zip(k1.par_chunks_mut(n)).enumerate().for_each(|(i, (o0, o1))| {
        let m = params.modulus(i);
        mod_down_limb(m, &sp, o0, p0);
        mod_down_limb(m, &sp, o1, p1);
        o0.iter_mut().zip(c0g.limb(i)).for_each(|(x, &y)| *x = m.add(*x, y));
    });
    acc0.truncate(l * n);
    acc1.truncate(l * n);
    let mods: Vec<usize> = (0..l).collect();
    Ok((RnsPoly { n, data: acc0, ntt: false, mods: mods.clone() }, RnsPoly { n, data: acc1, ntt: false, mods }))
}
