//! Paterson–Stockmeyer evaluation of `p(x) = Σ_i c_i·x^i` (coefficients mod `t`) with
//! `O(√d)` non-scalar multiplications (LEAF §3.3, Alg. 2; REFERENCE.md §6.4).
//!
//! With baby step `k` and `m = ceil((d+1)/k)` blocks:
//! `p(x) = Σ_{i<m} p_i(x)·y^i`, `y = x^k`, `p_i(x) = Σ_{j<k} c_{ik+j}·x^j`. Baby powers
//! `x^2..x^k` (`k − 1` products). **Giant steps by halves** (deviation from LEAF's Alg. 2, which
//! forms every `y^i` and multiplies each block by its own: `m − 2` + `m − 1` products): only the
//! squares `y^2, y^4, …, y^{2^(⌈log2 m⌉−1)}` are formed (`⌈log2 m⌉ − 1` products), and the
//! blocks are combined pairwise up a binary tree, `P_{[a, a+2h)} = P_{[a, a+h)} + y^h·P_{[a+h,
//! a+2h)}` — one product per internal node whose upper half is not a constant (`<= m − 1`).
//! At most `k + m + ⌈log2 m⌉ − 3` multiplications: 518 instead of 765 for LEAF's degree 65536
//! (`k = 256`, `m = 257`, the top block a constant), the same polynomial (exact mod `t`). Every
//! power `x^i` is formed as
//! `x^a·x^{i−a}` with `a` the largest power of two below `i`, so it has the minimal depth
//! `ceil(log2 i)`; a tree node of height `h` has depth at most `ceil(log2 k) + h`, so the
//! result's depth is at most `ceil(log2 k) + ceil(log2 m)`, never above Alg. 2's
//! `ceil(log2 k) + ceil(log2(m−1)) + 1`; LEAF's polynomial, whose top block is a constant
//! (a scalar times `y^256`), ends at depth 16 against Alg. 2's 17 (`nectar bench fhe --op poly`:
//! 136 bits of noise budget left against 114).
//! The blocks are scalar linear combinations of the same baby powers, computed
//! [`LEAF_GROUP`] at a time ([`PolyEvalOps::lin_combs`]: one pass over the powers per group):
//! `O(d)` scalar products, no key switching. LEAF's Alg. 3 (parallel powers) is left to the
//! caller's rayon pool inside each product.
//!
//! The engine is generic over [`PolyEvalOps`]: [`BfvPolyOps`] (ciphertexts, ct-ct products with
//! relinearisation) and [`SlotPolyOps`] (plaintext slot vectors mod `t`, the twin).

use crate::bfv::mul::{BfvMul, RelinKey};
use crate::ciphertext::Ciphertext;
use crate::encoding::Plaintext;
use crate::params::Params;
use crate::poly::RnsPoly;
use crate::HeError;
use nectar_math::small_comb::small_weight_combos;
use rayon::prelude::*;

/// Blocks computed together by one [`PolyEvalOps::lin_combs`] (each a full ciphertext held
/// until the tree consumes it: 32 × 6.8 MB at LEAF's top level).
pub const LEAF_GROUP: usize = 32;

/// The operations Paterson–Stockmeyer needs, on values of one kind.
pub trait PolyEvalOps {
    /// A ciphertext, or a plaintext vector.
    type Value: Clone;
    /// `a·b`: the non-scalar product that the algorithm economises.
    fn mul(&mut self, a: &Self::Value, b: &Self::Value) -> Result<Self::Value, HeError>;
    /// `Σ_j c_j·v_j + c` for scalars `c_j, c < t` (`terms` is never empty).
    fn lin_comb(&mut self, terms: &[(&Self::Value, u64)], constant: u64) -> Result<Self::Value, HeError>;
    /// `out_g = Σ_j weights[g][j]·values[j] + constants[g]` for every row `g` (scalars `< t`;
    /// every row as long as `values`, which is never empty). Default: one
    /// [`Self::lin_comb`] per row.
    fn lin_combs(&mut self, values: &[&Self::Value], weights: &[Vec<u64>], constants: &[u64]) -> Result<Vec<Self::Value>, HeError> {
        weights
            .iter()
            .zip(constants)
            .map(|(w, &c)| {
                let terms: Vec<(&Self::Value, u64)> = values.iter().copied().zip(w.iter().copied()).collect();
                self.lin_comb(&terms, c)
            })
            .collect()
    }
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
    /// Upper bound `k + m + ⌈log2 m⌉ − 3` (or `d − 1` with a single block) from the module
    /// docs.
    pub mults_bound: usize,
}

/// The default baby step for degree `d`: the power of two nearest `√(d+1)` (at least 2).
pub fn ps_default_baby(d: usize) -> usize {
    let r = ((d + 1) as f64).sqrt().log2().round().max(1.0) as u32;
    1usize << r.min(usize::BITS - 2)
}

/// A block or a partial sum of the tree: zero, a constant, or a value.
enum Node<V> {
    Zero,
    Const(u64),
    Val(V),
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
    // Giant squares y^(2^j), y = x^k, for 2^j < m.
    let mut giants: Vec<O::Value> = Vec::new();
    if m >= 2 {
        giants.push(pows[k].clone());
        while (1usize << giants.len()) < m {
            let last = &giants[giants.len() - 1];
            let v = ops.mul(last, last)?;
            mults += 1;
            giants.push(v);
        }
    }
    let mut tree = Tree { coeffs, d, k, m, top, pows: &pows, giants: &giants, group: (0, Vec::new()), mults: 0 };
    let node = tree.combine(ops, 0, m.next_power_of_two())?;
    mults += tree.mults;
    let out = match node {
        Node::Val(v) => v,
        Node::Const(c) => ops.lin_comb(&[(&pows[1], 0)], c)?,
        Node::Zero => ops.lin_comb(&[(&pows[1], 0)], 0)?,
    };
    let mults_bound = if m >= 2 { k + m + m.next_power_of_two().trailing_zeros() as usize - 3 } else { top.saturating_sub(1) };
    Ok((out, PsStats { degree: d, baby: k, blocks: m, mults, mults_bound }))
}

/// The block tree of one evaluation: the baby powers, the giant squares, and the group of
/// blocks last computed.
struct Tree<'a, V> {
    coeffs: &'a [u64],
    d: usize,
    k: usize,
    m: usize,
    top: usize,
    pows: &'a [V],
    giants: &'a [V],
    /// `(first block, blocks)` of the current group; each taken once.
    group: (usize, Vec<Option<Node<V>>>),
    mults: usize,
}

impl<V: Clone> Tree<'_, V> {
    fn c(&self, i: usize) -> u64 {
        self.coeffs.get(i).copied().unwrap_or(0)
    }

    /// `P_{[lo, lo+size)}(x) = Σ_{i} p_{lo+i}(x)·y^i` (`size` a power of two; blocks past `m`
    /// are zero).
    fn combine<O: PolyEvalOps<Value = V>>(&mut self, ops: &mut O, lo: usize, size: usize) -> Result<Node<V>, HeError> {
        if size == 1 {
            return self.block(ops, lo);
        }
        let half = size / 2;
        let a = self.combine(ops, lo, half)?;
        if lo + half >= self.m {
            return Ok(a);
        }
        let b = self.combine(ops, lo + half, half)?;
        let z = &self.giants[half.trailing_zeros() as usize];
        let upper = match b {
            Node::Zero => return Ok(a),
            Node::Const(c) => ops.lin_comb(&[(z, c)], 0)?,
            Node::Val(v) => {
                self.mults += 1;
                ops.mul(&v, z)?
            }
        };
        Ok(Node::Val(match a {
            Node::Zero => upper,
            Node::Const(c) => ops.lin_comb(&[(&upper, 1)], c)?,
            Node::Val(mut v) => {
                ops.add_assign(&mut v, &upper)?;
                v
            }
        }))
    }

    /// Block `i`, computing its group of [`LEAF_GROUP`] blocks on first use.
    fn block<O: PolyEvalOps<Value = V>>(&mut self, ops: &mut O, i: usize) -> Result<Node<V>, HeError> {
        if i < self.group.0 || i >= self.group.0 + self.group.1.len() {
            let lo = i - i % LEAF_GROUP;
            let hi = (lo + LEAF_GROUP).min(self.m);
            // Baby powers x^1..x^{min(k−1, top)} and each block's weights on them.
            let span = (self.k - 1).min(self.top);
            let weights: Vec<Vec<u64>> =
                (lo..hi).map(|b| (1..=span).map(|j| if b * self.k + j <= self.d { self.c(b * self.k + j) } else { 0 }).collect()).collect();
            let consts: Vec<u64> = (lo..hi).map(|b| self.c(b * self.k)).collect();
            let live: Vec<usize> = (0..hi - lo).filter(|&r| weights[r].iter().any(|&w| w != 0)).collect();
            let mut computed = if live.is_empty() {
                Vec::new()
            } else {
                let values: Vec<&V> = self.pows[1..=span].iter().collect();
                let w: Vec<Vec<u64>> = live.iter().map(|&r| weights[r].clone()).collect();
                let c: Vec<u64> = live.iter().map(|&r| consts[r]).collect();
                ops.lin_combs(&values, &w, &c)?
            }
            .into_iter();
            let mut nodes = Vec::with_capacity(hi - lo);
            for r in 0..hi - lo {
                nodes.push(Some(if live.contains(&r) {
                    Node::Val(computed.next().ok_or_else(|| HeError::Mismatch("lin_combs returned too few values".into()))?)
                } else if consts[r] != 0 {
                    Node::Const(consts[r])
                } else {
                    Node::Zero
                }));
            }
            self.group = (lo, nodes);
        }
        let (first, blocks) = &mut self.group;
        blocks[i - *first].take().ok_or_else(|| HeError::Mismatch(format!("Paterson–Stockmeyer block {i} taken twice")))
    }
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
    fn lin_combs(&mut self, values: &[&Ciphertext], weights: &[Vec<u64>], constants: &[u64]) -> Result<Vec<Ciphertext>, HeError> {
        Ciphertext::linear_combinations(self.params, values, weights, constants)
    }
    fn add_assign(&mut self, acc: &mut Ciphertext, v: &Ciphertext) -> Result<(), HeError> {
        acc.add_assign(self.params, v)
    }
}

impl Ciphertext {
    /// `Σ_j c_j·ct_j + c` with plaintext scalars `c_j, c < t` (SIMD: every slot gets the same
    /// scalar): [`Self::linear_combinations`] with one row.
    pub fn linear_combination(params: &Params, terms: &[(&Ciphertext, u64)], constant: u64) -> Result<Ciphertext, HeError> {
        let values: Vec<&Ciphertext> = terms.iter().map(|(c, _)| *c).collect();
        let weights = vec![terms.iter().map(|(_, w)| *w).collect::<Vec<u64>>()];
        let mut out = Ciphertext::linear_combinations(params, &values, &weights, &[constant])?;
        out.pop().ok_or_else(|| HeError::Mismatch("empty linear combination".into()))
    }

    /// `out_g = Σ_j weights[g][j]·values[j] + constants[g]` for every row `g`, with plaintext
    /// scalars `< t` (SIMD: every slot gets the same scalar). Scalars are taken centred in
    /// `(−t/2, t/2]`, so the noise is at most `Σ_j |c_j|·|e_j| <= (t/2)·Σ_j |e_j|` (+ nothing
    /// for the constant, which is added as an exact `round(Q·c/t)`). The residues run through
    /// [`small_weight_combos`] (every row per pass over the values; 32-bit split products for
    /// `|c| < 2^24`, e.g. LEAF's `t = 65537`). The results have the form (NTT / coefficient)
    /// of the first value.
    pub fn linear_combinations(params: &Params, values: &[&Ciphertext], weights: &[Vec<u64>], constants: &[u64]) -> Result<Vec<Ciphertext>, HeError> {
        let first = *values.first().ok_or_else(|| HeError::Mismatch("empty linear combination".into()))?;
        if weights.len() != constants.len() || weights.iter().any(|w| w.len() != values.len()) {
            return Err(HeError::Mismatch("linear combination weights do not match the values".into()));
        }
        let j = first.plain_index;
        params.check_plain_index(j)?;
        let t = params.plain_modulus(j);
        let l = first.level();
        let ntt = first.c0.ntt;
        if values.iter().any(|ct| ct.level() != l || ct.plain_index != j) {
            return Err(HeError::Mismatch("linear combination of ciphertexts at different levels".into()));
        }
        if let Some(&w) = weights.iter().flatten().chain(constants).find(|&&w| w as u128 >= t) {
            return Err(HeError::OutOfRange(format!("scalar {w} >= t = {t}")));
        }
        // Bring every polynomial to the first value's form (copies only when needed).
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
        let owned: Vec<[Option<RnsPoly>; 2]> = values.iter().map(|ct| [conv(&ct.c0), conv(&ct.c1)]).collect();
        let polys: Vec<[&RnsPoly; 2]> = values
            .iter()
            .zip(&owned)
            .map(|(ct, o)| [o[0].as_ref().unwrap_or(&ct.c0), o[1].as_ref().unwrap_or(&ct.c1)])
            .collect();
        let centred: Vec<Vec<i64>> = weights
            .iter()
            .map(|row| row.iter().map(|&w| if 2 * (w as u128) > t { (w as i128 - t as i128) as i64 } else { w as i64 }).collect())
            .collect();
        let cw: Vec<&[i64]> = centred.iter().map(Vec::as_slice).collect();
        let n = params.n();
        let mut outs: Vec<Ciphertext> = weights
            .iter()
            .map(|_| Ciphertext { c0: RnsPoly::zero_level(n, l, ntt), c1: RnsPoly::zero_level(n, l, ntt), seed: None, plain_index: j })
            .collect();
        // One task per (part, limb): every row's limb of that part.
        let mut limbs: Vec<Vec<&mut [u64]>> = (0..2 * l).map(|_| Vec::with_capacity(outs.len())).collect();
        for o in outs.iter_mut() {
            for (idx, limb) in o.c0.data.chunks_mut(n).chain(o.c1.data.chunks_mut(n)).enumerate() {
                limbs[idx].push(limb);
            }
        }
        limbs.par_iter_mut().enumerate().try_for_each(|(idx, rows)| {
            let (part, i) = (idx / l, idx % l);
            let xs: Vec<&[u64]> = polys.iter().map(|p| p[part].limb(i)).collect();
            if small_weight_combos(params.modulus(i), &xs, &cw, rows) {
                Ok(())
            } else {
                Err(HeError::Mismatch("linear combination shapes".into()))
            }
        })?;
        for (o, &c) in outs.iter_mut().zip(constants) {
            if c != 0 {
                o.add_plain_assign(params, &Plaintext::from_coeffs(params, &[c], j)?)?;
            }
        }
        Ok(outs)
    }

    /// `c·self` for a plaintext scalar `c < t`, taken centred (noise × `min(c, t − c)`).
    pub fn mul_plain_scalar(&self, params: &Params, c: u64) -> Result<Ciphertext, HeError> {
        Ciphertext::linear_combination(params, &[(self, c)], 0)
    }
}
