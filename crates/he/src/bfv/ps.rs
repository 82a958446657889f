//! Paterson–Stockmeyer evaluation of `p(x) = Σ_i c_i·x^i` (coefficients mod `t`) with
//! `O(√d)` non-scalar multiplications (LEAF §3.3, Alg. 2; REFERENCE.md §6.4).
//!
//! With baby step `k` and `m = ceil((d+1)/k)` blocks:
//! `p(x) = Σ_{i<m} p_i(x)·(x^k)^i`, `p_i(x) = Σ_{j<k} c_{ik+j}·x^j`. Baby powers
//! `x^2..x^k` (`k − 1` products), giant powers `(x^k)^2..(x^k)^{m−1}` (`m − 2`), one product per
//! block `i >= 1` whose `p_i` is not a constant (`<= m − 1`): at most `k + 2m − 4`
//! multiplications, minimal near `k = √(2d)` (`≈ 2√(2d)`); the default `k` is the power of two
//! nearest `√(d+1)` (LEAFc's 256 for `d = 65536`). Every power `x^i` is formed as
//! `x^a·x^{i−a}` with `a` the largest power of two below `i`, so it has the minimal depth
//! `ceil(log2 i)`; the result has depth `ceil(log2 k) + ceil(log2(m−1)) + 1`.
//! The blocks are scalar linear combinations ([`PolyEvalOps::lin_comb`]): `O(d)` scalar
//! products, no key switching. LEAF's Alg. 3 (parallel powers) is left to the caller's
//! rayon pool inside each product.
//!
//! The engine is generic over [`PolyEvalOps`]: [`BfvPolyOps`] (ciphertexts, ct-ct products with
//! relinearisation) and [`SlotPolyOps`] (plaintext slot vectors mod `t`, the twin).

use crate::bfv::mul::{BfvMul, RelinKey};
use crate::ciphertext::Ciphertext;
use crate::encoding::Plaintext;
use crate::params::Params;
use crate::poly::RnsPoly;
use crate::HeError;
use rayon::prelude::*;

/// The operations Paterson–Stockmeyer needs, on values of one kind.
pub trait PolyEvalOps {
    /// A ciphertext, or a plaintext vector.
    type Value: Clone;
    /// `a·b`: the non-scalar product that the algorithm economises.
    fn mul(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, HeError>;
    /// `Σ_j c_j·v_j + c` for scalars `c_j, c < t` (`terms` is never empty).
    fn lin_comb(&mut self, terms: &[(&Self::Value, u64)], constant: u64) -> Result<Self::Value, HeError>;
    /// `acc += v`.
    fn add_assign(&mut self, acc: &mut Self::Value, v: &Self::Value) -> Result<(), HeError>;
}

/// What one evaluation did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PsStats {
    /// Degree `d` of the polynomial (after dropping zero leading coefficients).
    pub degree: usize,
    /// Baby step `k`.
    pub baby: usize,
    /// Number of blocks `m = ceil((d+1)/k)`.
    pub blocks: usize,
    /// Non-scalar multiplications performed.
    pub mults: usize,
    /// Upper bound `k + 2m − 4` (or `d − 1` with a single block) from the module docs.
    pub mults_bound: usize,
}

/// The default baby step for degree `d`: the power of two nearest `√(d+1)` (at least 2).
pub fn ps_default_baby(d: usize) -> usize {
    let r = ((d + 1) as f64).sqrt().log2().round().max(1.0) as u32;
    1usize << r.min(usize::BITS - 2)
}

/// Evaluates `p(x) = Σ coeffs[i]·x^i` (coefficients `< t`) with baby step `baby` (default
/// [`ps_default_baby`]).
pub fn paterson_stockmeyer<O: PolyEvalOps>(
    ops: &mut O,
    x: &O::Value,
    coeffs: &[u64],
    baby: Option<usize>,
) -> Result<(O::Value, PsStats), HeError> {
    let d = coeffs.iter().rposition(|&c| c != 0).unwrap_or(0);
    let c = |i: usize| coeffs.get(i).copied().unwrap_or(0);
    let k = baby.unwrap_or_else(|| ps_default_baby(d)).clamp(1, d + 1);
    let m = (d + 1).div_ceil(k);
    let mut mults = 0usize;
    // Baby powers x^1..x^top (x^k only when there is a second block).
    let top = if m >= 2 { k } else { d.max(1) };
    let mut pows: Vec<O::Value> = Vec::with_capacity(top + 1);
    pows.push(x.clone()); // index 0 unused (placeholder)
    pows.push(x.clone());
    for i in 2..=top {
        let a = prev_pow2(i);
        let v = ops.mul(&pows[a], &pows[i - a])?;
        mults += 1;
        pows.push(v);
    }
    // Giant powers y^1..y^{m−1}, y = x^k.
    let mut giant: Vec<O::Value> = Vec::with_capacity(m);
    if m >= 2 {
        giant.push(pows[k].clone()); // index 0 unused
        giant.push(pows[k].clone());
        for i in 2..m {
            let a = prev_pow2(i);
            let v = ops.mul(&giant[a], &giant[i - a])?;
            mults += 1;
            giant.push(v);
        }
    }
    let block_terms = |i: usize| -> Vec<(usize, u64)> {
        (1..k.min(top + 1)).filter(|&j| i * k + j <= d && c(i * k + j) != 0).map(|j| (j, c(i * k + j))).collect()
    };
    // Block 0 (always present; a zero-weight x keeps the value well-formed for constants).
    let t0 = block_terms(0);
    let refs: Vec<(&O::Value, u64)> =
        if t0.is_empty() { vec![(&pows[1], 0)] } else { t0.iter().map(|&(j, w)| (&pows[j], w)).collect() };
    let mut acc = ops.lin_comb(&refs, c(0))?;
    for (i, y_i) in giant.iter().enumerate().skip(1) {
        let terms = block_terms(i);
        let c0 = c(i * k);
        if terms.is_empty() {
            if c0 != 0 {
                let v = ops.lin_comb(&[(y_i, c0)], 0)?;
                ops.add_assign(&mut acc, &v)?;
            }
            continue;
        }
        let refs: Vec<(&O::Value, u64)> = terms.iter().map(|&(j, w)| (&pows[j], w)).collect();
        let inner = ops.lin_comb(&refs, c0)?;
        let v = ops.mul(&inner, y_i)?;
        mults += 1;
        ops.add_assign(&mut acc, &v)?;
    }
    let mults_bound = if m >= 2 { k + 2 * m - 4 } else { top.saturating_sub(1) };
    Ok((acc, PsStats { degree: d, baby: k, blocks: m, mults, mults_bound }))
}

/// The largest power of two strictly below `i >= 2`.
fn prev_pow2(i: usize) -> usize {
    1usize << (usize::BITS - 1 - (i - 1).leading_zeros())
}

/// Plaintext twin: slot vectors mod `t`.
#[derive(Clone, Copy, Debug)]
pub struct SlotPolyOps {
    /// The plaintext modulus (`< 2^63`).
    pub t: u64,
}

impl PolyEvalOps for SlotPolyOps {
    type Value = Vec<u64>;
    fn mul(&mut self, a: &Vec<u64>, b: &Vec<u64>) -> Result<Vec<u64>, HeError> {
        if a.len() != b.len() {
            return Err(HeError::Mismatch("slot vector lengths".into()));
        }
        let t = self.t as u128;
        Ok(a.iter().zip(b).map(|(&x, &y)| (x as u128 * y as u128 % t) as u64).collect())
    }
    fn lin_comb(&mut self, terms: &[(&Vec<u64>, u64)], constant: u64) -> Result<Vec<u64>, HeError> {
        let len = terms.first().map(|v| v.0.len()).unwrap_or(0);
        let t = self.t as u128;
        let mut out = vec![constant as u128 % t; len];
        for (v, w) in terms {
            if v.len() != len {
                return Err(HeError::Mismatch("slot vector lengths".into()));
            }
            out.iter_mut().zip(v.iter()).for_each(|(o, &x)| *o = (*o + x as u128 * *w as u128) % t);
        }
        Ok(out.into_iter().map(|x| x as u64).collect())
    }
    fn add_assign(&mut self, acc: &mut Vec<u64>, v: &Vec<u64>) -> Result<(), HeError> {
        if acc.len() != v.len() {
            return Err(HeError::Mismatch("slot vector lengths".into()));
        }
        acc.iter_mut().zip(v).for_each(|(a, &b)| *a = ((*a as u128 + b as u128) % self.t as u128) as u64);
        Ok(())
    }
}

/// BFV ciphertexts: products by [`BfvMul`] with relinearisation (squares detected by identity).
#[derive(Clone, Copy, Debug)]
pub struct BfvPolyOps<'a> {
    pub params: &'a Params,
    pub mul: &'a BfvMul,
    pub rk: &'a RelinKey,
}

impl PolyEvalOps for BfvPolyOps<'_> {
    type Value = Ciphertext;
    fn mul(&mut self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, HeError> {
        self.mul.multiply(self.params, a, b, self.rk)
    }
    fn lin_comb(&mut self, terms: &[(&Ciphertext, u64)], constant: u64) -> Result<Ciphertext, HeError> {
        Ciphertext::linear_combination(self.params, terms, constant)
    }
    fn add_assign(&mut self, acc: &mut Ciphertext, v: &Ciphertext) -> Result<(), HeError> {
        acc.add_assign(self.params, v)
    }
}

impl Ciphertext {
    /// `Σ_j c_j·ct_j + c` with plaintext scalars `c_j, c < t` (SIMD: every slot gets the same
    /// scalar). Scalars are taken centred in `(−t/2, t/2]`, so the noise is at most
    /// `Σ_j |c_j|·|e_j| <= (t/2)·Σ_j |e_j|` (+ nothing for the constant, which is added as an
    /// exact `round(Q·c/t)`). Accumulated lazily in 128 bits: one reduction per 15 terms.
    /// The result has the form (NTT / coefficient) of the first term.
    pub fn linear_combination(params: &Params, terms: &[(&Ciphertext, u64)], constant: u64) -> Result<Ciphertext, HeError> {
        let (first, _) = *terms.first().ok_or_else(|| HeError::Mismatch("empty linear combination".into()))?;
        let j = first.plain_index;
        params.check_plain_index(j)?;
        let t = params.plain_modulus(j);
        let l = first.level();
        let ntt = first.c0.ntt;
        for (ct, w) in terms {
            if ct.level() != l || ct.plain_index != j {
                return Err(HeError::Mismatch("linear combination of ciphertexts at different levels".into()));
            }
            if *w as u128 >= t {
                return Err(HeError::OutOfRange(format!("scalar {w} >= t = {t}")));
            }
        }
        if constant as u128 >= t {
            return Err(HeError::OutOfRange(format!("constant {constant} >= t = {t}")));
        }
        // Bring every polynomial to the first term's form (copies only when needed).
        let conv = |p: &RnsPoly| -> Option<RnsPoly> {
            (p.ntt != ntt).then(|| {
                let mut q = p.clone();
                if ntt {
                    q.to_ntt(params)
                } else {
                    q.to_coeff(params)
                }
                q
            })
        };
        let owned: Vec<[Option<RnsPoly>; 2]> = terms.iter().map(|(ct, _)| [conv(&ct.c0), conv(&ct.c1)]).collect();
        let polys: Vec<[&RnsPoly; 2]> = terms
            .iter()
            .zip(&owned)
            .map(|((ct, _), o)| [o[0].as_ref().unwrap_or(&ct.c0), o[1].as_ref().unwrap_or(&ct.c1)])
            .collect();
        let centred: Vec<i64> = terms
            .iter()
            .map(|(_, w)| if 2 * (*w as u128) > t { (*w as i128 - t as i128) as i64 } else { *w as i64 })
            .collect();
        let n = params.n();
        let mut out = Ciphertext {
            c0: RnsPoly::zero_level(n, l, ntt),
            c1: RnsPoly::zero_level(n, l, ntt),
            seed: None,
            plain_index: j,
        };
        out.c0.data.par_chunks_mut(n).chain(out.c1.data.par_chunks_mut(n)).enumerate().for_each(|(idx, limb)| {
            let (part, i) = (idx / l, idx % l);
            let m = params.modulus(i);
            let ws: Vec<u64> = centred.iter().map(|&c| m.reduce_i64(c)).collect();
            let mut acc = vec![0u128; n];
            for (chunk, wchunk) in polys.chunks(15).zip(ws.chunks(15)) {
                for (p, &w) in chunk.iter().zip(wchunk) {
                    acc.iter_mut().zip(p[part].limb(i)).for_each(|(a, &x)| *a += x as u128 * w as u128);
                }
                limb.iter_mut().zip(acc.iter_mut()).for_each(|(o, a)| {
                    *o = m.add(*o, m.reduce_u128(*a));
                    *a = 0;
                });
            }
        });
        if constant != 0 {
            let pt = Plaintext::from_coeffs(params, &[constant], j)?;
            out.add_plain_assign(params, &pt)?;
        }
        Ok(out)
    }

    /// `c·self` for a plaintext scalar `c < t`, taken centred (noise × `min(c, t − c)`).
    pub fn mul_plain_scalar(&self, params: &Params, c: u64) -> Result<Ciphertext, HeError> {
        Ciphertext::linear_combination(params, &[(self, c)], 0)
    }
}
