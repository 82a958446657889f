//! BFV ciphertext × ciphertext multiplication: tensor product, `t/Q` scale-and-round done
//! exactly in RNS, relinearisation by hybrid key switching (LEAF §2.3 `mul`, its scheme [14]).
//!
//! **Method: HPS** (Halevi–Polyakov–Shoup, CT-RSA 2019), with the double-precision estimates
//! replaced by 128-bit fixed-point fractions. Chosen over BEHZ because it needs no extra
//! correction moduli (`m_sk`, `m̃`) and no Montgomery step, and its only approximate steps have
//! an error of `l·2^−63` that cannot change a result beyond the noise:
//! 1. each input polynomial, taken as its centred representative in `(−Q/2, Q/2]`, is extended
//!    from `Q = q_0⋯q_{l−1}` to an auxiliary basis `B = b_0⋯b_{k−1}`:
//!    `x = Σ_i ỹ_i·(Q/q_i) − v·Q`, `ỹ_i = [x_i·(Q/q_i)^{−1}]_{q_i}`, `v = round(Σ_i ỹ_i/q_i)`;
//! 2. the tensor `d = (c0·c0', c0·c1' + c1·c0', c1·c1')` is computed in `Q∪B` (NTT domain,
//!    Karatsuba for the middle term); it is exact because `|d|_∞ <= N·Q²/2 < QB/2`;
//! 3. `y = round(t·d/Q)` in `B`: writing `x ≡ Σ_i x̃_i·QB/q_i + Σ_j x̃_j·QB/b_j (mod QB)`,
//!    every `QB/b_{j'}/Q = B/b_{j'}` term vanishes mod `b_j` for `j' ≠ j`, so
//!    `y mod b_j = x_j·t·Q^{−1} + Σ_i x̃_i·⌊tB/q_i⌋ + round(Σ_i x̃_i·frac(tB/q_i))`;
//! 4. `|y|_∞ <= t·N·Q/2 + 1 < B/32` (the size of `B` is chosen so), so `y` comes back to `Q`
//!    exactly by the conversion of step 1 in the other direction.
//!
//! Exactness: steps 2 and 4 are exact. Step 1 picks the wrong multiple of `Q`, or step 3
//! rounds the wrong way, only when a value lies within `l·2^−63` (relative) of a rounding
//! boundary: about `l·2^−62` per coefficient. A wrong rounding adds 1 to the noise; a wrong
//! lift adds `t·X^k·φ'` (`φ'` the other phase), i.e. at most `t·(|e'| + t)` — the size of the
//! product noise itself. Decryption is unaffected either way.
//!
//! **Noise** (`φ = c0 + c1·s = (Q/t)·m + e + Q·r` over the integers, `|r|_∞ <= (N+3)/2` for
//! ternary `s`): the product's noise is `m1·e2 + m2·e1 + t·(r1·e2 + r2·e1) + t·e1·e2/Q`
//! plus the rounding of step 3 (`<= (1 + N + N²)/2` through `s`, `s²`) plus the
//! relinearisation term below: worst case
//! `|e|_∞ <= t·N·(N + 4)/2·(|e1|_∞ + |e2|_∞) + N²`, i.e. `log2 t + 2·log2 N` bits per level;
//! for random ciphertexts the products behave like `√N` instead of `N`: measured
//! `≈ log2(t·N) − 1` bits per level (28 at `N = 8192`, 31 at `N = 32768`, `t = 65537`; the
//! depth tests of `tests/bfv_mul.rs`).
//!
//! **Relinearisation** switches `c2` from `s²` to `s` with the one-special-prime hybrid key
//! switching of [`crate::keyswitch`] (digits = the ciphertext primes): it adds at most
//! `l·N·max q_j·η/P + (1 + N)/2` (`η` = the error bound), about `2^23` for the LEAF set
//! (`P` ≥ every digit prime), far below the product noise (`>= t·N`), so one special prime
//! suffices.
//!
//! Cost at level `l` with `k` auxiliary primes: `4(l+k)` forward and `3(l+k)` inverse NTTs
//! (`2(l+k)` forward for a square), `O(N·l·k)` word products for the base conversions, then
//! one key switch (`l(l+1)` forward, `2(l+1)` inverse NTTs).

use crate::ciphertext::Ciphertext;
use crate::keys::{GaloisKey, GaloisKeys, SecretKey};
use crate::keyswitch::automorphism_key_switch;
use crate::params::Params;
use crate::poly::RnsPoly;
use crate::HeError;
use nectar_math::modulus::{ntt_primes, Modulus};
use nectar_math::ntt::NttPlan;
use nectar_math::rns::BigUint;
use nectar_math::Prg;
use rayon::prelude::*;

/// Bits of each auxiliary prime (below the 62-bit limit of `Modulus`, so that 15 products of
/// residues sum in a `u128`).
const AUX_BITS: u32 = 61;

/// Extra bits of `B` beyond `t·N·Q` (step 4 needs `|y| < B/32`, see the module docs).
const AUX_SLACK_BITS: u32 = 6;

/// Products of two residues `< 2^62` that fit a `u128` sum.
const LAZY_GROUP: usize = 15;

/// A relinearisation key: a key-switching key from `s²` to `s` (same shape as a Galois key:
/// one digit per ciphertext prime, over `Q·P`). Wire size `L·N·Σ_i ceil(log2 q_i)` bits + seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelinKey {
    pub(crate) key: GaloisKey,
}

impl RelinKey {
    /// Wire form: that of a [`GaloisKeys`] set holding one key under element `1` (the identity
    /// automorphism, which no Galois key set needs), i.e. seed + `L` polynomials `b_j`.
    pub fn serialize(&self, params: &Params) -> Vec<u8> {
        let keys = GaloisKeys { keys: std::iter::once((1u64, self.key.clone())).collect() };
        keys.serialize(params)
    }

    /// Parses [`RelinKey::serialize`]'s output.
    pub fn deserialize(params: &Params, bytes: &[u8]) -> Result<RelinKey, HeError> {
        let mut keys = GaloisKeys::deserialize(params, bytes)?.keys;
        if keys.len() != 1 {
            return Err(HeError::Malformed("a relinearisation key holds exactly one key".into()));
        }
        let key = keys.remove(&1).ok_or_else(|| HeError::Malformed("relinearisation key not under element 1".into()))?;
        Ok(RelinKey { key })
    }
}

impl SecretKey {
    /// The relinearisation key for `s²` (needs a special prime).
    pub fn relin_key(&self, params: &Params, prg: &mut Prg) -> Result<RelinKey, HeError> {
        let mut s2 = self.s_ntt.clone();
        let n = params.n();
        for (i, &mi) in self.s_ntt.mods.iter().enumerate() {
            let m = params.modulus(mi);
            let s = self.s_ntt.limb(i);
            s2.data[i * n..(i + 1) * n].iter_mut().zip(s).for_each(|(x, &y)| *x = m.mul(y, y));
        }
        s2.to_coeff(params);
        Ok(RelinKey { key: self.switch_key(params, &s2, prg)? })
    }
}

/// Constants of one fast base conversion `src → dst`:
/// `x mod d = Σ_i [x_i·ĥ_i^{−1}]_{s_i}·[ĥ_i]_d − v·[S]_d`, `ĥ_i = S/s_i`, `v = round(Σ_i ỹ_i/s_i)`.
#[derive(Debug)]
struct BaseConv {
    /// `(ĥ_i^{−1} mod s_i, Shoup)` per source prime.
    hat_inv: Vec<(u64, u64)>,
    /// `floor(2^128 / s_i)` (the fraction `1/s_i`).
    inv_frac: Vec<u128>,
    /// `[ĥ_i]_{d}` per destination `d`, per source `i`.
    hat_mod: Vec<Vec<u64>>,
    /// `[S]_d` per destination.
    prod_mod: Vec<u64>,
}

impl BaseConv {
    fn new(src: &[Modulus], dst: &[Modulus]) -> Result<Self, HeError> {
        let prod_mod_of = |m: &Modulus, skip: Option<usize>| {
            src.iter().enumerate().filter(|(i, _)| Some(*i) != skip).fold(1u64, |acc, (_, s)| m.mul(acc, m.reduce(s.value())))
        };
        let mut hat_inv = Vec::with_capacity(src.len());
        for (i, s) in src.iter().enumerate() {
            let h = prod_mod_of(s, Some(i));
            let inv = s.inv(h).ok_or_else(|| HeError::InvalidParams("auxiliary basis not coprime".into()))?;
            hat_inv.push((inv, s.shoup(inv)));
        }
        let inv_frac = src.iter().map(|s| u128::MAX / s.value() as u128).collect();
        let hat_mod = dst.iter().map(|d| (0..src.len()).map(|i| prod_mod_of(d, Some(i))).collect()).collect();
        let prod_mod = dst.iter().map(|d| prod_mod_of(d, None)).collect();
        Ok(Self { hat_inv, inv_frac, hat_mod, prod_mod })
    }
}

/// Constants of step 3 (`round(t·x/Q)` from `Q∪B` into `B`) for one level and plaintext modulus.
#[derive(Debug)]
struct ScaleConsts {
    /// `((Q/q_i)·B)^{−1} mod q_i` (+ Shoup).
    qb_hat_inv: Vec<(u64, u64)>,
    /// `frac(t·B/q_i)` as a 128-bit binary fraction.
    theta: Vec<u128>,
    /// `[⌊t·B/q_i⌋]_{b_j}` per aux prime `j`, per `i`.
    omega: Vec<Vec<u64>>,
    /// `[t·Q^{−1}]_{b_j}` (+ Shoup).
    t_q_inv: Vec<(u64, u64)>,
}

impl ScaleConsts {
    fn new(q: &[Modulus], aux: &[Modulus], b_big: &BigUint, t: u64) -> Result<Self, HeError> {
        let bad = || HeError::InvalidParams("auxiliary basis not coprime".into());
        let tb = b_big.mul_u64(t);
        let l = q.len();
        let mut qb_hat_inv = Vec::with_capacity(l);
        let mut theta = Vec::with_capacity(l);
        let mut omega = vec![Vec::with_capacity(l); aux.len()];
        for (i, qi) in q.iter().enumerate() {
            // (Q/q_i)·B mod q_i.
            let h = q.iter().enumerate().filter(|(i2, _)| *i2 != i).fold(1u64, |a, (_, m)| qi.mul(a, qi.reduce(m.value())));
            let inv = qi.inv(qi.mul(h, b_big.rem_modulus(qi))).ok_or_else(bad)?;
            qb_hat_inv.push((inv, qi.shoup(inv)));
            // t·B = quot·q_i + rem: ⌊tB/q_i⌋ mod b_j and frac = rem/q_i in 128 bits.
            let (quot, rem) = tb.divrem_u64(qi.value());
            let (p, r) = (qi.value() as u128, rem as u128);
            let hi = (r << 64) / p;
            let lo = (((r << 64) % p) << 64) / p;
            theta.push((hi << 64) | lo);
            for (jb, b) in aux.iter().enumerate() {
                omega[jb].push(quot.rem_modulus(b));
            }
        }
        let mut t_q_inv = Vec::with_capacity(aux.len());
        for b in aux {
            let qm = q.iter().fold(1u64, |a, m| b.mul(a, b.reduce(m.value())));
            let v = b.mul(b.reduce(t), b.inv(qm).ok_or_else(bad)?);
            t_q_inv.push((v, b.shoup(v)));
        }
        Ok(Self { qb_hat_inv, theta, omega, t_q_inv })
    }
}

/// Per-level constants.
#[derive(Debug)]
struct LevelMul {
    /// `Q → B` (step 1).
    q_to_b: BaseConv,
    /// `B → Q` (step 4).
    b_to_q: BaseConv,
    /// Step 3, per plaintext component.
    scale: Vec<ScaleConsts>,
}

/// The BFV multiplier of one parameter set: the auxiliary basis `B` and the per-level
/// constants of the HPS scale-and-round (see the module docs). Built once, shared freely.
#[derive(Debug)]
pub struct BfvMul {
    params: Params,
    aux: Vec<Modulus>,
    aux_plans: Vec<NttPlan>,
    levels: Vec<LevelMul>,
}

/// A degree-2 ciphertext `(d0, d1, d2)` (coefficient form, level `l`) decrypting under
/// `(1, s, s²)`: the product before relinearisation.
#[derive(Clone, Debug)]
pub struct Ciphertext3 {
    pub(crate) d: [RnsPoly; 3],
    pub(crate) plain_index: usize,
}

impl Ciphertext3 {
    /// Number of ciphertext primes in use.
    pub fn level(&self) -> usize {
        self.d[0].limbs()
    }

    /// Relinearisation: `(d0, d1) + KeySwitch_{s²→s}(d2)` (coefficient form result).
    pub fn relinearize(&self, params: &Params, rk: &RelinKey) -> Result<Ciphertext, HeError> {
        let tmp = Ciphertext { c0: self.d[0].clone(), c1: self.d[2].clone(), seed: None, plain_index: self.plain_index };
        // g = 1: the identity automorphism, i.e. a plain key switch with the key for s².
        let mut out = automorphism_key_switch(params, &tmp, 1, &rk.key)?;
        out.c1.add_assign(params, &self.d[1], false);
        Ok(out)
    }
}

impl BfvMul {
    /// Chooses the auxiliary primes (`AUX_BITS`-bit, `≡ 1 mod 2N`, distinct from every
    /// parameter prime) so that `B > 2^6·t·N·Q` at the top level, and precomputes every level.
    /// Plaintext moduli must be below `2^64` (not `PowerOfTwo(64)`).
    pub fn new(params: &Params) -> Result<Self, HeError> {
        let n = params.n();
        let t_max = (0..params.plain_count()).map(|j| params.plain_modulus(j)).max().unwrap_or(2);
        if t_max > u64::MAX as u128 {
            return Err(HeError::InvalidParams("ct-ct multiplication needs t < 2^64".into()));
        }
        let t_bits = 128 - t_max.leading_zeros();
        let need = params.q_bits(params.max_level()) + t_bits + n.trailing_zeros() + AUX_SLACK_BITS;
        let k = need.div_ceil(AUX_BITS - 1) as usize;
        let mut exclude: Vec<u64> = params.0.moduli.iter().map(|m| m.value()).collect();
        exclude.extend((0..params.plain_count()).map(|j| params.plain_modulus(j) as u64));
        let aux_vals = ntt_primes(AUX_BITS, n, k, &exclude)
            .ok_or_else(|| HeError::InvalidParams(format!("no {k} auxiliary {AUX_BITS}-bit NTT primes for N = {n}")))?;
        let aux: Vec<Modulus> = aux_vals.iter().map(|&p| Modulus::new(p)).collect::<Option<_>>()
            .ok_or_else(|| HeError::InvalidParams("auxiliary prime".into()))?;
        let aux_plans: Vec<NttPlan> = aux_vals.iter().map(|&p| NttPlan::new(n, p)).collect::<Option<_>>()
            .ok_or_else(|| HeError::InvalidParams("auxiliary NTT plan".into()))?;
        let mut b_big = BigUint::from_u64(1);
        for m in &aux {
            b_big = b_big.mul_u64(m.value());
        }
        let mut levels = Vec::with_capacity(params.max_level());
        for l in 1..=params.max_level() {
            let q = &params.q_moduli()[..l];
            let q_to_b = BaseConv::new(q, &aux)?;
            let b_to_q = BaseConv::new(&aux, q)?;
            let scale = (0..params.plain_count())
                .map(|j| ScaleConsts::new(q, &aux, &b_big, params.plain_modulus(j) as u64))
                .collect::<Result<_, _>>()?;
            levels.push(LevelMul { q_to_b, b_to_q, scale });
        }
        Ok(Self { params: params.clone(), aux, aux_plans, levels })
    }

    /// The auxiliary primes `b_j` of `B`.
    pub fn aux_moduli(&self) -> Vec<u64> {
        self.aux.iter().map(|m| m.value()).collect()
    }

    fn check(&self, params: &Params, a: &Ciphertext, b: &Ciphertext) -> Result<(), HeError> {
        if params.fingerprint() != self.params.fingerprint() {
            return Err(HeError::Mismatch("multiplier built for other parameters".into()));
        }
        if a.level() != b.level() || a.plain_index != b.plain_index {
            return Err(HeError::Mismatch(format!(
                "ciphertexts at level {}/{} for plaintext components {}/{}",
                a.level(),
                b.level(),
                a.plain_index,
                b.plain_index
            )));
        }
        params.check_plain_index(a.plain_index)?;
        Ok(())
    }

    /// The tensor product scaled by `t/Q` (steps 1–4), before relinearisation.
    pub fn tensor(&self, params: &Params, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext3, HeError> {
        self.check(params, a, b)?;
        let l = a.level();
        let lv = &self.levels[l - 1];
        let ea = [self.extend_ntt(lv, &a.c0), self.extend_ntt(lv, &a.c1)];
        let d = if std::ptr::eq(a, b) {
            self.tensor_ntt(l, &ea, None)
        } else {
            let eb = [self.extend_ntt(lv, &b.c0), self.extend_ntt(lv, &b.c1)];
            self.tensor_ntt(l, &ea, Some(&eb))
        };
        let sc = &lv.scale[a.plain_index];
        let d = d.map(|x| self.scale_down(l, lv, sc, x));
        Ok(Ciphertext3 { d, plain_index: a.plain_index })
    }

    /// `a · b` relinearised (coefficient-form result at the inputs' level).
    pub fn multiply(&self, params: &Params, a: &Ciphertext, b: &Ciphertext, rk: &RelinKey) -> Result<Ciphertext, HeError> {
        self.tensor(params, a, b)?.relinearize(params, rk)
    }

    /// `a²` relinearised (half the forward transforms of [`Self::multiply`]).
    pub fn square(&self, params: &Params, a: &Ciphertext, rk: &RelinKey) -> Result<Ciphertext, HeError> {
        self.tensor(params, a, a)?.relinearize(params, rk)
    }

    fn n(&self) -> usize {
        self.params.n()
    }

    fn plan(&self, l: usize, idx: usize) -> &NttPlan {
        if idx < l {
            self.params.plan(idx)
        } else {
            &self.aux_plans[idx - l]
        }
    }

    fn modulus(&self, l: usize, idx: usize) -> &Modulus {
        if idx < l {
            self.params.modulus(idx)
        } else {
            &self.aux[idx - l]
        }
    }

    /// Step 1: `p` (level `l`, either form) extended to `Q∪B`, returned in NTT form
    /// (`(l + k)·N` words, `Q` limbs first).
    fn extend_ntt(&self, lv: &LevelMul, p: &RnsPoly) -> Vec<u64> {
        let n = self.n();
        let l = p.limbs();
        let k = self.aux.len();
        let mut coeff;
        let src = if p.ntt {
            coeff = p.clone();
            coeff.to_coeff(&self.params);
            &coeff
        } else {
            p
        };
        let mut out = vec![0u64; (l + k) * n];
        out[..l * n].copy_from_slice(&src.data[..l * n]);
        // fast_convert consumes its source: give it a copy of the Q limbs.
        let mut tmp = src.data[..l * n].to_vec();
        fast_convert(&lv.q_to_b, &self.params.q_moduli()[..l], &self.aux, &mut tmp, &mut out[l * n..], n);
        out.par_chunks_mut(n).enumerate().for_each(|(idx, limb)| self.plan(l, idx).forward(limb));
        out
    }

    /// Step 2: the tensor in NTT form, then back to coefficients: `[d0, d1, d2]`, each
    /// `(l + k)·N` words.
    fn tensor_ntt(&self, l: usize, a: &[Vec<u64>; 2], b: Option<&[Vec<u64>; 2]>) -> [Vec<u64>; 3] {
        let n = self.n();
        let total = a[0].len();
        let mut d0 = vec![0u64; total];
        let mut d1 = vec![0u64; total];
        let mut d2 = vec![0u64; total];
        d0.par_chunks_mut(n)
            .zip(d1.par_chunks_mut(n))
            .zip(d2.par_chunks_mut(n))
            .enumerate()
            .for_each(|(idx, ((o0, o1), o2))| {
                let m = *self.modulus(l, idx);
                let r = idx * n..(idx + 1) * n;
                let (a0, a1) = (&a[0][r.clone()], &a[1][r.clone()]);
                match b {
                    None => {
                        for k in 0..n {
                            let (x, y) = (a0[k], a1[k]);
                            o0[k] = m.mul(x, x);
                            let xy = m.mul(x, y);
                            o1[k] = m.add(xy, xy);
                            o2[k] = m.mul(y, y);
                        }
                    }
                    Some(b) => {
                        let (b0, b1) = (&b[0][r.clone()], &b[1][r]);
                        for k in 0..n {
                            let p0 = m.mul(a0[k], b0[k]);
                            let p2 = m.mul(a1[k], b1[k]);
                            // Karatsuba: (a0 + a1)(b0 + b1) − a0b0 − a1b1.
                            let s = m.mul(m.add(a0[k], a1[k]), m.add(b0[k], b1[k]));
                            o0[k] = p0;
                            o1[k] = m.sub(m.sub(s, p0), p2);
                            o2[k] = p2;
                        }
                    }
                }
                let plan = self.plan(l, idx);
                plan.inverse(o0);
                plan.inverse(o1);
                plan.inverse(o2);
            });
        [d0, d1, d2]
    }

    /// Steps 3–4 on the basis of level `l`.
    fn scale_down(&self, l: usize, lv: &LevelMul, sc: &ScaleConsts, x: Vec<u64>) -> RnsPoly {
        let n = self.n();
        let data = scale_down_on(lv, sc, &self.params.q_moduli()[..l], &self.aux, x, n);
        RnsPoly { n, data, ntt: false, mods: (0..l).collect() }
    }
}

/// Steps 3–4: `round(t·x/Q)` for `x` given over `Q∪B` (coefficient form, `Q` limbs first),
/// returned over `Q` (`l·N` words).
fn scale_down_on(lv: &LevelMul, sc: &ScaleConsts, q: &[Modulus], aux: &[Modulus], mut x: Vec<u64>, n: usize) -> Vec<u64> {
    let l = q.len();
    // x̃_i = [x_i·((Q/q_i)·B)^{−1}]_{q_i}, in place over the Q limbs.
    let (xq, xb) = x.split_at_mut(l * n);
    xq.par_chunks_mut(n).zip(q.par_iter()).zip(sc.qb_hat_inv.par_iter()).for_each(|((limb, m), &(w, ws))| {
        limb.iter_mut().for_each(|v| *v = m.mul_shoup(*v, w, ws));
    });
    let xq: &[u64] = xq;
    // round(Σ_i x̃_i·θ_i) per coefficient (< l·2^62, kept as u128).
    let mut frac_round = vec![0u128; n];
    frac_round.par_chunks_mut(1024).enumerate().for_each(|(c, out)| {
        for (o, kk) in out.iter_mut().zip(c * 1024..) {
            *o = frac_sum_round(l, |i| xq[i * n + kk], &sc.theta);
        }
    });
    // y_j = x_j·t·Q^{−1} + Σ_i x̃_i·ω_{j,i} + round(...) mod b_j, in place over the B limbs.
    let srcs: Vec<&[u64]> = xq.chunks(n).collect();
    xb.par_chunks_mut(n).enumerate().for_each(|(j, limb)| {
        let b = &aux[j];
        let (w, ws) = sc.t_q_inv[j];
        lazy_lin_comb(b, &srcs, &sc.omega[j], limb, |kk, acc, own| {
            let extra = b.mul_shoup(own, w, ws);
            b.add(b.add(acc, extra), b.reduce_u128(frac_round[kk]))
        });
    });
    // Step 4: B → Q.
    let mut out = vec![0u64; l * n];
    fast_convert(&lv.b_to_q, aux, q, xb, &mut out, n);
    out
}

/// `round(Σ_i x_i·f_i / 2^128)` (ties up) for `x_i < 2^62` and 128-bit fractions `f_i`, with
/// an error below `count·2^−63` before rounding.
#[inline]
fn frac_sum_round(count: usize, x: impl Fn(usize) -> u64, f: &[u128]) -> u128 {
    let mut int_acc: u128 = 0;
    let mut frac_acc: u128 = 0;
    for (i, &fi) in f.iter().enumerate().take(count) {
        let xi = x(i) as u128;
        // units of 2^−64: x·f_hi + ⌊x·f_lo / 2^64⌋ (< 2^127)
        let s = xi * (fi >> 64) + ((xi * (fi as u64 as u128)) >> 64);
        int_acc += s >> 64;
        frac_acc += s as u64 as u128;
    }
    int_acc + ((frac_acc + (1u128 << 63)) >> 64)
}

/// `out[k] = post(k, Σ_i src[i][k]·row[i] mod m, own[k])` where `own` is `out`'s previous
/// content; the sum is accumulated lazily in `u128` (one reduction per `LAZY_GROUP` terms).
#[inline]
fn lazy_lin_comb(m: &Modulus, src: &[&[u64]], row: &[u64], out: &mut [u64], post: impl Fn(usize, u64, u64) -> u64) {
    for (kk, o) in out.iter_mut().enumerate() {
        let mut r = 0u64;
        for (s_chunk, w_chunk) in src.chunks(LAZY_GROUP).zip(row.chunks(LAZY_GROUP)) {
            let mut acc = 0u128;
            for (s, &w) in s_chunk.iter().zip(w_chunk) {
                acc += s[kk] as u128 * w as u128;
            }
            r = m.add(r, m.reduce_u128(acc));
        }
        *o = post(kk, r, *o);
    }
}

/// Fast base conversion with the exact `v` correction (steps 1 and 4): `src` limbs over
/// `src_m` (consumed: multiplied in place by `ĥ_i^{−1}`), centred result written to `dst`.
fn fast_convert(bc: &BaseConv, src_m: &[Modulus], dst_m: &[Modulus], src: &mut [u64], dst: &mut [u64], n: usize) {
    let l = src_m.len();
    src.par_chunks_mut(n).zip(src_m.par_iter()).zip(bc.hat_inv.par_iter()).for_each(|((limb, m), &(w, ws))| {
        limb.iter_mut().for_each(|v| *v = m.mul_shoup(*v, w, ws));
    });
    let src: &[u64] = src;
    let mut v = vec![0u64; n];
    v.par_chunks_mut(1024).enumerate().for_each(|(c, out)| {
        for (o, kk) in out.iter_mut().zip(c * 1024..) {
            *o = frac_sum_round(l, |i| src[i * n + kk], &bc.inv_frac) as u64;
        }
    });
    let srcs: Vec<&[u64]> = src.chunks(n).collect();
    dst.par_chunks_mut(n).zip(dst_m.par_iter()).enumerate().for_each(|(j, (limb, m))| {
        let pm = bc.prod_mod[j];
        let ps = m.shoup(pm);
        lazy_lin_comb(m, &srcs, &bc.hat_mod[j], limb, |kk, acc, _| m.sub(acc, m.mul_shoup(v[kk], pm, ps)));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::rns::RnsBasis;
    use rand_core::RngCore;

    fn big_mod(x: &BigUint, neg: bool, m: &Modulus) -> u64 {
        let r = x.rem_modulus(m);
        if neg {
            m.neg(r)
        } else {
            r
        }
    }

    /// Steps 1 and 3–4 against big-integer references: the centred lift `Q → B`, and
    /// `round(t·x/Q)` for `|x| < N·Q²/2` given over `Q∪B`.
    #[test]
    fn base_extension_and_scale_round_are_exact() {
        let n = 1024;
        // Bases built directly (no `Params`), so a wide `Q` can be tested at a small `N`.
        let mut prg = Prg::new([11; 16]);
        for qbits in [vec![27u32], vec![30, 60, 28, 55, 56]] {
            let mut used = vec![12289u64];
            let q: Vec<Modulus> = qbits
                .iter()
                .map(|&b| {
                    let p = ntt_primes(b, n, 1, &used).unwrap()[0];
                    used.push(p);
                    Modulus::new(p).unwrap()
                })
                .collect();
            let l = q.len();
            let qb = RnsBasis::new(&q).unwrap();
            let t = 12289u64;
            let kbits = qb.total_bits() + 14 + 10 + AUX_SLACK_BITS;
            let aux: Vec<Modulus> = ntt_primes(AUX_BITS, n, kbits.div_ceil(AUX_BITS - 1) as usize, &used)
                .unwrap()
                .into_iter()
                .map(|p| Modulus::new(p).unwrap())
                .collect();
            let k = aux.len();
            let q_to_b = BaseConv::new(&q, &aux).unwrap();
            let b_to_q = BaseConv::new(&aux, &q).unwrap();
            // Step 1: random residues mod Q, centred lift into B.
            let mut src: Vec<u64> = (0..l * n).map(|i| prg.next_u64() % q[i / n].value()).collect();
            let orig = src.clone();
            let mut dst = vec![0u64; k * n];
            fast_convert(&q_to_b, &q, &aux, &mut src, &mut dst, n);
            for c in 0..n {
                let r: Vec<u64> = (0..l).map(|i| orig[i * n + c]).collect();
                let (mag, neg) = qb.compose_centered(&r);
                for (j, b) in aux.iter().enumerate() {
                    assert_eq!(dst[j * n + c], big_mod(&mag, neg, b), "lift, coefficient {c}");
                }
            }
            // Steps 3–4 through a BfvMul-shaped context with this Q and B.
            let mut b_big = BigUint::from_u64(1);
            aux.iter().for_each(|m| b_big = b_big.mul_u64(m.value()));
            let sc = ScaleConsts::new(&q, &aux, &b_big, t).unwrap();
            let xbits = 2 * qb.total_bits() + 9;
            let mut x = vec![0u64; (l + k) * n];
            let mut want = Vec::with_capacity(n);
            for c in 0..n {
                let words = xbits.div_ceil(64) as usize;
                let mut w: Vec<u64> = (0..words).map(|_| prg.next_u64()).collect();
                let top = xbits - 64 * (words as u32 - 1);
                w[words - 1] &= (1u64 << top) - 1;
                let mag = BigUint { words: w };
                let neg = prg.next_u64() & 1 == 1;
                for (i, m) in q.iter().chain(&aux).enumerate() {
                    x[i * n + c] = big_mod(&mag, neg, m);
                }
                // |y| = ⌊(2t|x| + Q)/(2Q)⌋ with the sign of x.
                let mut num = mag.mul_u64(2 * t).add(qb.product());
                num = num.divrem_u64(2).0;
                for m in &q {
                    num = num.divrem_u64(m.value()).0;
                }
                want.push((num, neg));
            }
            let lv = LevelMul { q_to_b, b_to_q, scale: vec![] };
            let out = scale_down_on(&lv, &sc, &q, &aux, x, n);
            for (c, (mag, neg)) in want.iter().enumerate() {
                for (i, m) in q.iter().enumerate() {
                    assert_eq!(out[i * n + c], big_mod(mag, *neg, m), "scale, coefficient {c}, limb {i}");
                }
            }
        }
    }
}
