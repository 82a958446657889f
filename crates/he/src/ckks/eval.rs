//! CKKS evaluation (CKKS paper (BLB ref. 6) §3.4–3.5; BLB §2.4): addition and subtraction
//! (ciphertext / plaintext / constant), products with plaintexts and constants, ct-ct products
//! to a 3-component ciphertext, relinearisation by hybrid key switching (one special prime,
//! centred digits, the key `s² → s`),
//! rescaling (divide by the last prime with exact rounding, scale tracked as `f64`) and level
//! management. Every operation that BLB's cost model counts (Table 5 / Table 7: rotations,
//! key switches, ct-ct and ct-pt products, rescales) increments [`EvalStats`].
//!
//! Noise / error (slot domain, divided by the scale): add/sub add errors; a ct-pt product
//! multiplies the ciphertext error by the plaintext values and adds the plaintext's rounding
//! error times the values; rescaling by `q` divides the error by `q` and adds the rounding term
//! `(1 + |s|_1)/2` per coefficient (about `N/4` in the slots, i.e. `2^{log2 N − 2}/Δ'`); a key
//! switch adds about `√N·max q_j·σ/P` plus the same rounding term (negligible for `P >= q_j`).
//! Operands of `add` are brought to the lower level; their scales must agree to
//! [`SCALE_TOLERANCE`] (relative).

use super::ciphertext::CkksCiphertext;
use super::encoder::CkksPlaintext;
use super::keys::{CkksGaloisKeys, RelinKey};
use super::params::CkksParams;
use super::keyswitch::key_switch;
use crate::keyswitch::mod_down_limb;
use crate::params::Params;
use crate::poly::RnsPoly;
use crate::HeError;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest relative difference of two scales that `add`/`sub` accept (a mismatch of `ε`
/// makes the sum off by `ε` relative, so `2^−40` is below any precision CKKS reaches).
pub const SCALE_TOLERANCE: f64 = 9.094947017729282e-13; // 2^-40

/// Operation counters of an evaluator (atomic, so an evaluator can be shared across threads).
#[derive(Debug, Default)]
pub struct EvalStats {
    rotations: AtomicU64,
    conjugations: AtomicU64,
    key_switches: AtomicU64,
    ct_ct_mults: AtomicU64,
    ct_pt_mults: AtomicU64,
    rescales: AtomicU64,
}

/// A snapshot of [`EvalStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalCounts {
    /// Slot rotations (each one key switch).
    pub rotations: u64,
    /// Conjugations (each one key switch).
    pub conjugations: u64,
    /// Key switches: rotations, conjugations and relinearisations.
    pub key_switches: u64,
    /// Ciphertext × ciphertext products.
    pub ct_ct_mults: u64,
    /// Ciphertext × plaintext-polynomial products (products with constants are not counted).
    pub ct_pt_mults: u64,
    /// Rescales.
    pub rescales: u64,
}

impl std::ops::Sub for EvalCounts {
    type Output = EvalCounts;
    fn sub(self, o: EvalCounts) -> EvalCounts {
        EvalCounts {
            rotations: self.rotations.saturating_sub(o.rotations),
            conjugations: self.conjugations.saturating_sub(o.conjugations),
            key_switches: self.key_switches.saturating_sub(o.key_switches),
            ct_ct_mults: self.ct_ct_mults.saturating_sub(o.ct_ct_mults),
            ct_pt_mults: self.ct_pt_mults.saturating_sub(o.ct_pt_mults),
            rescales: self.rescales.saturating_sub(o.rescales),
        }
    }
}

impl EvalStats {
    /// The current counts.
    pub fn snapshot(&self) -> EvalCounts {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EvalCounts {
            rotations: g(&self.rotations),
            conjugations: g(&self.conjugations),
            key_switches: g(&self.key_switches),
            ct_ct_mults: g(&self.ct_ct_mults),
            ct_pt_mults: g(&self.ct_pt_mults),
            rescales: g(&self.rescales),
        }
    }
    /// Sets every counter to zero.
    pub fn reset(&self) {
        for a in [&self.rotations, &self.conjugations, &self.key_switches, &self.ct_ct_mults, &self.ct_pt_mults, &self.rescales] {
            a.store(0, Ordering::Relaxed);
        }
    }
    fn bump(a: &AtomicU64) {
        a.fetch_add(1, Ordering::Relaxed);
    }
}

/// A CKKS evaluator: parameters, the public evaluation keys, and the operation counters.
#[derive(Debug)]
pub struct CkksEvaluator {
    params: CkksParams,
    relin: Option<RelinKey>,
    galois: CkksGaloisKeys,
    stats: EvalStats,
}

/// `dst ± src` limb-wise on `dst`'s limbs, converting a copy of `src` to `dst`'s form if needed.
fn add_poly(e: &Params, dst: &mut RnsPoly, src: &RnsPoly, neg: bool) {
    if dst.ntt == src.ntt {
        dst.add_assign(e, src, neg);
    } else {
        let mut s = src.clone();
        s.truncate_limbs(dst.limbs());
        if dst.ntt {
            s.to_ntt(e);
        } else {
            s.to_coeff(e);
        }
        dst.add_assign(e, &s, neg);
    }
}

/// Multiplies every limb `i` of `p` by `scalars[i]`.
fn mul_limb_scalars(e: &Params, p: &mut RnsPoly, scalars: &[u64]) {
    let n = e.n();
    let mods = p.mods.clone();
    p.data.par_chunks_mut(n).zip(mods.par_iter()).for_each(|(l, &mi)| {
        let m = e.modulus(mi);
        let (w, ws) = (scalars[mi], m.shoup(scalars[mi]));
        l.iter_mut().for_each(|x| *x = m.mul_shoup(*x, w, ws));
    });
}

/// `p` in NTT form: borrowed when it already is (no copy), else a transformed copy of its
/// first `level` limbs.
fn ntt_view<'a>(e: &Params, p: &'a RnsPoly, level: usize) -> Cow<'a, RnsPoly> {
    if p.ntt {
        return Cow::Borrowed(p);
    }
    let mut c = p.clone();
    c.truncate_limbs(level);
    c.to_ntt(e);
    Cow::Owned(c)
}

/// Point-wise `Σ_t a_t ⊙ b_t` (NTT form, `a_t`/`b_t` on the first `level` primes, or more:
/// only the first `level` limbs are read). Each product is the NTT plan's fused
/// multiply-accumulate (SIMD, fully reduced: the same residues as a scalar `add(mul)` loop).
fn pointwise_sum(e: &Params, level: usize, terms: &[(&RnsPoly, &RnsPoly)]) -> RnsPoly {
    let n = e.n();
    let mut out = RnsPoly::zero_level(n, level, true);
    out.data.par_chunks_mut(n).enumerate().for_each(|(i, o)| {
        let plan = e.plan(i);
        for (a, b) in terms {
            plan.mul_accumulate(o, a.limb(i), b.limb(i));
        }
    });
    out
}

impl CkksEvaluator {
    /// An evaluator without evaluation keys (add, products with plaintexts, rescale).
    pub fn new(params: &CkksParams) -> Self {
        Self { params: params.clone(), relin: None, galois: CkksGaloisKeys::default(), stats: EvalStats::default() }
    }
    /// Adds the relinearisation key.
    pub fn with_relin_key(mut self, rk: RelinKey) -> Self {
        self.relin = Some(rk);
        self
    }
    /// Adds Galois keys (rotations / conjugation).
    pub fn with_galois_keys(mut self, gk: CkksGaloisKeys) -> Self {
        self.galois = gk;
        self
    }
    /// Adds Galois keys to those held ([`CkksGaloisKeys::merge`]).
    pub fn add_galois_keys(&mut self, gk: CkksGaloisKeys) {
        self.galois.merge(gk);
    }
    /// The parameter set.
    pub fn params(&self) -> &CkksParams {
        &self.params
    }
    /// The operation counters.
    pub fn stats(&self) -> &EvalStats {
        &self.stats
    }
    /// The Galois keys held.
    pub fn galois_keys(&self) -> &CkksGaloisKeys {
        &self.galois
    }
    fn e(&self) -> &Params {
        self.params.engine()
    }

    fn check_scales(a: f64, b: f64) -> Result<(), HeError> {
        if ((a - b) / a.max(b)).abs() > SCALE_TOLERANCE {
            return Err(HeError::Mismatch(format!("scales 2^{:.3} and 2^{:.3} differ", a.log2(), b.log2())));
        }
        Ok(())
    }

    /// Drops `ct` to `level` (discards primes; the value and scale are unchanged).
    pub fn mod_drop_to(&self, ct: &CkksCiphertext, level: usize) -> Result<CkksCiphertext, HeError> {
        let mut c = ct.clone();
        self.mod_drop_to_assign(&mut c, level)?;
        Ok(c)
    }

    /// In-place [`Self::mod_drop_to`].
    pub fn mod_drop_to_assign(&self, ct: &mut CkksCiphertext, level: usize) -> Result<(), HeError> {
        if level == 0 || level > ct.level() {
            return Err(HeError::OutOfRange(format!("mod drop to level {level} from {}", ct.level())));
        }
        if level < ct.level() {
            ct.ct.c0.truncate_limbs(level);
            ct.ct.c1.truncate_limbs(level);
            if let Some(c2) = &mut ct.c2 {
                c2.truncate_limbs(level);
            }
            ct.ct.seed = None;
        }
        Ok(())
    }

    fn add_sub_assign(&self, a: &mut CkksCiphertext, b: &CkksCiphertext, neg: bool) -> Result<(), HeError> {
        Self::check_scales(a.scale, b.scale)?;
        let level = a.level().min(b.level());
        self.mod_drop_to_assign(a, level)?;
        let e = self.e();
        add_poly(e, &mut a.ct.c0, &b.ct.c0, neg);
        add_poly(e, &mut a.ct.c1, &b.ct.c1, neg);
        match (&mut a.c2, &b.c2) {
            (Some(x), Some(y)) => add_poly(e, x, y, neg),
            (None, Some(y)) => {
                let mut y = y.clone();
                y.truncate_limbs(level);
                if neg {
                    y.neg_assign(e);
                }
                a.c2 = Some(y);
            }
            _ => {}
        }
        a.ct.seed = None;
        Ok(())
    }

    /// `a += b` (brought to the lower level; scales must match).
    pub fn add_assign(&self, a: &mut CkksCiphertext, b: &CkksCiphertext) -> Result<(), HeError> {
        self.add_sub_assign(a, b, false)
    }
    /// `a −= b`.
    pub fn sub_assign(&self, a: &mut CkksCiphertext, b: &CkksCiphertext) -> Result<(), HeError> {
        self.add_sub_assign(a, b, true)
    }
    /// `a + b`.
    pub fn add(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        let mut c = a.clone();
        self.add_assign(&mut c, b)?;
        Ok(c)
    }
    /// `a − b`.
    pub fn sub(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        let mut c = a.clone();
        self.sub_assign(&mut c, b)?;
        Ok(c)
    }
    /// `−a`.
    pub fn negate(&self, a: &CkksCiphertext) -> CkksCiphertext {
        let mut c = a.clone();
        let e = self.e();
        c.ct.c0.neg_assign(e);
        c.ct.c1.neg_assign(e);
        if let Some(c2) = &mut c.c2 {
            c2.neg_assign(e);
        }
        c.ct.seed = None;
        c
    }

    fn add_plain_sign(&self, a: &CkksCiphertext, pt: &CkksPlaintext, neg: bool) -> Result<CkksCiphertext, HeError> {
        Self::check_scales(a.scale, pt.scale)?;
        let level = a.level().min(pt.level());
        let mut c = self.mod_drop_to(a, level)?;
        add_poly(self.e(), &mut c.ct.c0, &pt.poly, neg);
        Ok(c)
    }
    /// `a + pt` (touches `c0` only; a seeded ciphertext stays seeded).
    pub fn add_plain(&self, a: &CkksCiphertext, pt: &CkksPlaintext) -> Result<CkksCiphertext, HeError> {
        self.add_plain_sign(a, pt, false)
    }
    /// `a − pt`.
    pub fn sub_plain(&self, a: &CkksCiphertext, pt: &CkksPlaintext) -> Result<CkksCiphertext, HeError> {
        self.add_plain_sign(a, pt, true)
    }

    /// `a + c` in every slot (`round(c·Δ_a)` added to the constant term).
    pub fn add_const(&self, a: &CkksCiphertext, c: f64) -> Result<CkksCiphertext, HeError> {
        let v = c * a.scale;
        if !v.is_finite() || v.abs() >= 2f64.powi(126) {
            return Err(HeError::OutOfRange(format!("constant {c} at scale 2^{:.1}", a.scale.log2())));
        }
        let v = v.round() as i128;
        let mut out = a.clone();
        let e = self.e();
        let n = e.n();
        let ntt = out.ct.c0.ntt;
        for i in 0..out.level() {
            let m = e.modulus(i);
            let r = m.reduce_i128(v);
            let l = out.ct.c0.limb_mut(i);
            // A constant polynomial is the constant at every evaluation point.
            if ntt {
                l.iter_mut().for_each(|x| *x = m.add(*x, r));
            } else {
                l[0] = m.add(l[0], r);
            }
            debug_assert_eq!(l.len(), n);
        }
        Ok(out)
    }

    /// `a·c` for a real constant `c`, encoded as the integer `round(c·q_last)` (`q_last` the prime
    /// the next rescale divides by, or `Δ` at level 1), so that [`Self::rescale`] restores `a`'s
    /// scale exactly. The result's scale is `Δ_a·q_last`. Not counted as a ct-pt product.
    pub fn mul_const(&self, a: &CkksCiphertext, c: f64) -> Result<CkksCiphertext, HeError> {
        let cs = match a.level() {
            1 => self.params.default_scale(),
            l => self.params.last_prime(l).map_or(self.params.default_scale(), |q| q as f64),
        };
        let v = c * cs;
        if !v.is_finite() || v.abs() >= 2f64.powi(126) {
            return Err(HeError::OutOfRange(format!("constant {c}")));
        }
        let v = v.round() as i128;
        let e = self.e();
        let scalars: Vec<u64> = (0..a.level()).map(|i| e.modulus(i).reduce_i128(v)).collect();
        let mut out = self.mul_components(a, &scalars);
        out.scale = a.scale * cs;
        Ok(out)
    }

    /// Every component of `a` times the per-prime scalars (scale unchanged).
    fn mul_components(&self, a: &CkksCiphertext, scalars: &[u64]) -> CkksCiphertext {
        let e = self.e();
        let mut out = a.clone();
        mul_limb_scalars(e, &mut out.ct.c0, scalars);
        mul_limb_scalars(e, &mut out.ct.c1, scalars);
        if let Some(c2) = &mut out.c2 {
            mul_limb_scalars(e, c2, scalars);
        }
        out.ct.seed = None;
        out
    }

    /// `i·a` in every slot: the product with the monomial `X^(N/2)`, which is `i` at every
    /// slot's evaluation point (`ζ^(5^j·N/2) = i^(5^j) = i`, `ζ = e^(iπ/N)`). Exact: a signed
    /// permutation of the coefficients; no level, no key, scale unchanged. Coefficient form.
    pub fn mul_i(&self, a: &CkksCiphertext) -> CkksCiphertext {
        let e = self.e();
        let half = e.n() / 2;
        let mut out = a.clone();
        for p in std::iter::once(&mut out.ct.c0).chain(std::iter::once(&mut out.ct.c1)).chain(out.c2.as_mut()) {
            p.to_coeff(e);
            p.mul_monomial(e, half);
        }
        out.ct.seed = None;
        out
    }

    /// `a·k` for an integer `k` (exact; the scale is unchanged).
    pub fn mul_int(&self, a: &CkksCiphertext, k: i64) -> CkksCiphertext {
        let e = self.e();
        let scalars: Vec<u64> = (0..a.level()).map(|i| e.modulus(i).reduce_i64(k)).collect();
        self.mul_components(a, &scalars)
    }

    /// `a ⊙ pt` (slot-wise product; scale `Δ_a·Δ_pt`, level the lower of the two). NTT form.
    pub fn mul_plain(&self, a: &CkksCiphertext, pt: &CkksPlaintext) -> Result<CkksCiphertext, HeError> {
        let level = a.level().min(pt.level());
        let a = self.mod_drop_to(a, level)?;
        let e = self.e();
        let c0 = pointwise_sum(e, level, &[(&*ntt_view(e, &a.ct.c0, level), &pt.poly)]);
        let c1 = pointwise_sum(e, level, &[(&*ntt_view(e, &a.ct.c1, level), &pt.poly)]);
        let c2 = a.c2.as_ref().map(|c| pointwise_sum(e, level, &[(&*ntt_view(e, c, level), &pt.poly)]));
        EvalStats::bump(&self.stats.ct_pt_mults);
        Ok(CkksCiphertext::from_parts(c0, c1, c2, a.scale * pt.scale))
    }

    /// `a ⊙ b` as a 3-component ciphertext `(a0·b0, a0·b1 + a1·b0, a1·b1)` (scale `Δ_a·Δ_b`,
    /// the lower level). NTT form. Both inputs must be relinearised.
    pub fn mul(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        if a.c2.is_some() || b.c2.is_some() {
            return Err(HeError::Mismatch("ct-ct product of an unrelinearised ciphertext".into()));
        }
        let level = a.level().min(b.level());
        let e = self.e();
        let (a0, a1) = (ntt_view(e, &a.ct.c0, level), ntt_view(e, &a.ct.c1, level));
        let (b0, b1) = (ntt_view(e, &b.ct.c0, level), ntt_view(e, &b.ct.c1, level));
        let (a0, a1, b0, b1): (&RnsPoly, &RnsPoly, &RnsPoly, &RnsPoly) = (&a0, &a1, &b0, &b1);
        let d0 = pointwise_sum(e, level, &[(a0, b0)]);
        let d1 = pointwise_sum(e, level, &[(a0, b1), (a1, b0)]);
        let d2 = pointwise_sum(e, level, &[(a1, b1)]);
        EvalStats::bump(&self.stats.ct_ct_mults);
        Ok(CkksCiphertext::from_parts(d0, d1, Some(d2), a.scale * b.scale))
    }

    /// Relinearises a 3-component ciphertext: `(d0, d1) + KeySwitch_{s²→s}(d2)` (one key
    /// switch). A 2-component ciphertext is returned unchanged. Coefficient form.
    pub fn relinearize(&self, a: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        let Some(d2) = &a.c2 else {
            return Ok(a.clone());
        };
        let rk = self.relin.as_ref().ok_or(HeError::MissingRelinKey)?;
        let e = self.e();
        // g = 1: a plain key switch of d2 from s² to s, d0 folded in.
        let (c0, mut c1) = key_switch(e, &a.ct.c0, d2, 1, &rk.key)?;
        add_poly(e, &mut c1, &a.ct.c1, false);
        EvalStats::bump(&self.stats.key_switches);
        Ok(CkksCiphertext::from_parts(c0, c1, None, a.scale))
    }

    /// [`Self::mul`] then [`Self::relinearize`].
    pub fn mul_relin(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        self.relinearize(&self.mul(a, b)?)
    }

    /// Rescale: divides by the last prime `q_{l−1}` with exact rounding, level `l → l − 1`,
    /// scale `Δ → Δ/q_{l−1}`. Coefficient form.
    pub fn rescale(&self, a: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        let l = a.level();
        if l <= 1 {
            return Err(HeError::OutOfRange("cannot rescale below the base prime".into()));
        }
        let e = self.e();
        let n = e.n();
        let last = *e.modulus(l - 1);
        let mut out = a.clone();
        let mut polys: Vec<&mut RnsPoly> = vec![&mut out.ct.c0, &mut out.ct.c1];
        if let Some(c2) = out.c2.as_mut() {
            polys.push(c2);
        }
        for p in polys {
            p.to_coeff(e);
            let (keep, tail) = p.data.split_at_mut((l - 1) * n);
            let tail: &[u64] = tail;
            keep.par_chunks_mut(n).enumerate().for_each(|(i, limb)| mod_down_limb(e.modulus(i), &last, limb, tail));
            p.truncate_limbs(l - 1);
        }
        out.ct.seed = None;
        out.scale = a.scale / last.value() as f64;
        EvalStats::bump(&self.stats.rescales);
        Ok(out)
    }

    pub(crate) fn count_rotation(&self, conjugation: bool) {
        EvalStats::bump(if conjugation { &self.stats.conjugations } else { &self.stats.rotations });
        EvalStats::bump(&self.stats.key_switches);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CkksParamsLiteral, CkksSecretKey};
    use super::*;
    use nectar_math::Prg;

    /// `mul` and `mul_plain` (the plan's SIMD multiply-accumulate) give exactly the residues
    /// of the scalar `add(mul)` reference, 60- and 40-bit primes (IFMA and non-IFMA paths).
    #[test]
    fn products_match_scalar_reference() {
        let p = CkksParams::new(CkksParamsLiteral::from_bit_sizes(8192, &[60, 40], Some(60), 40).unwrap()).unwrap();
        let e = p.engine();
        let n = p.n();
        let mut prg = Prg::new([7; 16]);
        let sk = CkksSecretKey::generate(&p, &mut prg);
        let ev = CkksEvaluator::new(&p);
        let v: Vec<f64> = (0..p.slots()).map(|i| (i as f64 * 0.37).sin()).collect();
        let pt = p.encode_real(&v, 2, p.default_scale()).unwrap();
        let a = sk.encrypt(&p, &pt, &mut prg).unwrap();
        let b = sk.encrypt(&p, &pt, &mut prg).unwrap();
        let reference = |terms: &[(&RnsPoly, &RnsPoly)]| -> Vec<u64> {
            let mut out = vec![0u64; 2 * n];
            for (i, o) in out.chunks_mut(n).enumerate() {
                let m = e.modulus(i);
                for (x, y) in terms {
                    for k in 0..n {
                        o[k] = m.add(o[k], m.mul(x.limb(i)[k], y.limb(i)[k]));
                    }
                }
            }
            out
        };
        let prod = ev.mul(&a, &b).unwrap();
        assert_eq!(prod.ct.c0.data, reference(&[(&a.ct.c0, &b.ct.c0)]));
        assert_eq!(prod.ct.c1.data, reference(&[(&a.ct.c0, &b.ct.c1), (&a.ct.c1, &b.ct.c0)]));
        assert_eq!(prod.c2.as_ref().unwrap().data, reference(&[(&a.ct.c1, &b.ct.c1)]));
        let pp = ev.mul_plain(&a, &pt).unwrap();
        assert_eq!(pp.ct.c0.data, reference(&[(&a.ct.c0, &pt.poly)]));
        // Coefficient-form input: transformed first, same residues.
        let r = ev.rescale(&a).unwrap();
        assert!(!r.ct.c1.ntt);
        let mut rn = r.ct.c1.clone();
        rn.to_ntt(e);
        let pt1 = p.encode_real(&v, r.level(), p.default_scale()).unwrap();
        let pr = ev.mul_plain(&r, &pt1).unwrap();
        let mut want = vec![0u64; r.level() * n];
        for (i, o) in want.chunks_mut(n).enumerate() {
            let m = e.modulus(i);
            for k in 0..n {
                o[k] = m.mul(rn.limb(i)[k], pt1.poly.limb(i)[k]);
            }
        }
        assert_eq!(pr.ct.c1.data, want);
    }
}
