//! Automorphisms `X -> X^g` with hybrid key switching (one special prime `P`).
//!
//! For `ct = (c0, c1)` under `s`, `(τ_g(c0), τ_g(c1))` decrypts under `τ_g(s)`; key switching
//! replaces `d = τ_g(c1)` by `(Σ_j [d]_{q_j}·b_j, Σ_j [d]_{q_j}·a_j) / P` (rounded, over
//! `q·P`), which decrypts to `d·τ_g(s) + Σ_j [d]_{q_j}·e_j / P`. Added noise:
//! `<= l·N·max q_j·B/P + (1 + |s|_1)/2` (about `2^10·sqrt(N)·B` for the OLT preset,
//! far below its `2^98` budget).
//! Cost at level `l`: `l·(l+1)` forward NTTs, `2(l+1)` inverse NTTs, `2·l·(l+1)` point-wise
//! multiply-accumulates; parallel over the `l+1` target primes.

use crate::ciphertext::Ciphertext;
use crate::keys::{GaloisKey, GaloisKeys};
use crate::params::Params;
use crate::poly::{automorphism, RnsPoly};
use crate::HeError;
use nectar_math::rns::div_round_by_last;
use rayon::prelude::*;

/// Key-switches the coefficient-form polynomial `d` (level `l`) with `key`; returns the pair
/// `(k0, k1)` in coefficient form at level `l` such that `k0 + k1·s ≈ d·s'`.
pub(crate) fn key_switch(params: &Params, d: &RnsPoly, key: &GaloisKey) -> Result<(RnsPoly, RnsPoly), HeError> {
    let sp = params.special_modulus().copied().ok_or(HeError::NoSpecialPrime)?;
    debug_assert!(!d.ntt);
    let l = d.limbs();
    let n = params.n();
    let sp_idx = params.max_level();
    let targets: Vec<usize> = (0..l).chain(std::iter::once(sp_idx)).collect();
    let accs: Vec<(Vec<u64>, Vec<u64>)> = targets
        .par_iter()
        .map(|&t| {
            let m = params.modulus(t);
            let plan = params.plan(t);
            let mut acc0 = vec![0u64; n];
            let mut acc1 = vec![0u64; n];
            let mut tmp = vec![0u64; n];
            for j in 0..l {
                let src = d.limb(j);
                if t == j {
                    tmp.copy_from_slice(src);
                } else {
                    tmp.iter_mut().zip(src).for_each(|(x, &y)| *x = m.reduce(y));
                }
                plan.forward(&mut tmp);
                plan.mul_accumulate(&mut acc0, &tmp, key.b[j].limb(t));
                plan.mul_accumulate(&mut acc1, &tmp, key.a[j].limb(t));
            }
            plan.inverse(&mut acc0);
            plan.inverse(&mut acc1);
            (acc0, acc1)
        })
        .collect();
    let (p0, p1) = &accs[l];
    let mut k0 = RnsPoly::zero_level(n, l, false);
    let mut k1 = RnsPoly::zero_level(n, l, false);
    for (out, pl, which) in [(&mut k0, p0, 0usize), (&mut k1, p1, 1usize)] {
        out.data.par_chunks_mut(n).enumerate().for_each(|(i, o)| {
            let m = params.modulus(i);
            let inv = m.inv(sp.value()).unwrap_or(0);
            let inv = (inv, m.shoup(inv));
            let src = if which == 0 { &accs[i].0 } else { &accs[i].1 };
            for k in 0..n {
                o[k] = div_round_by_last(src[k], pl[k], &sp, m, inv);
            }
        });
    }
    Ok((k0, k1))
}

impl Ciphertext {
    /// The automorphism `X -> X^g` (`g` odd, `< 2N`) applied to the plaintext, with key
    /// switching back to `s`. The result is in coefficient form.
    pub fn automorphism(&self, params: &Params, g: u64, keys: &GaloisKeys) -> Result<Ciphertext, HeError> {
        let key = keys.keys.get(&g).ok_or(HeError::MissingGaloisKey(g))?;
        let mut ct = self.clone();
        ct.to_coeff(params);
        let c0 = automorphism(params, &ct.c0, g);
        let c1 = automorphism(params, &ct.c1, g);
        let (mut k0, k1) = key_switch(params, &c1, key)?;
        k0.add_assign(params, &c0, false);
        Ok(Ciphertext { c0: k0, c1: k1, seed: None, plain_index: self.plain_index })
    }
}
