//! Matrix–vector products `y = M·x` on encrypted slots by the diagonal method with
//! baby-step / giant-step (BLB App. C.1; BOLT's ct-pt matmul, BLB §5.2).
//!
//! For a `d × d` matrix (`d` a power of two dividing `N/2`; `x` replicated with period `d` in
//! the slots, e.g. by [`replicate`]), `y = Σ_k diag_k ⊙ Rot_k(x)` with
//! `diag_k[i] = M[i][(i + k) mod d]`. Writing `k = g·B + b`,
//! `y = Σ_g Rot_{gB}( Σ_b Rot_{−gB}(diag_k) ⊙ Rot_b(x) )`: the diagonals are pre-rotated in
//! plaintext, so only the `B − 1` baby rotations of `x` and `G − 1` giant rotations are
//! homomorphic — `B + G − 2 ≈ 2√D` instead of `D − 1` (e.g. 14 for `D = 64`, `B = G = 8`).
//! `B` is a power of two chosen to minimise the count for the non-zero diagonals present.
//! Cost: those rotations (key switches), one ct-pt product per non-zero diagonal, depth one
//! ct-pt product (the output has scale `Δ_x·Δ_M`; rescale once).

use super::ciphertext::CkksCiphertext;
use super::encoder::CkksPlaintext;
use super::eval::CkksEvaluator;
use super::fft::C64;
use super::params::CkksParams;
use crate::HeError;
use std::collections::BTreeSet;

/// `values` (length `d`, dividing the slot count) repeated to fill `slots` slots.
pub fn replicate(values: &[C64], slots: usize) -> Vec<C64> {
    if values.is_empty() {
        return vec![C64::default(); slots];
    }
    (0..slots).map(|j| values[j % values.len()]).collect()
}

/// A plaintext matrix prepared for [`LinearTransform::apply`] at one level and scale.
#[derive(Clone, Debug)]
pub struct LinearTransform {
    dim: usize,
    baby: usize,
    level: usize,
    scale: f64,
    /// Per giant step `g`: `(b, Rot_{−gB}(diag_{gB+b}))` for the non-zero diagonals.
    giants: Vec<(usize, Vec<(usize, CkksPlaintext)>)>,
}

impl LinearTransform {
    /// From a dense `d × d` matrix (rows), encoding its non-zero diagonals at `level` with
    /// `scale` (choose `params.last_prime(level)` so that one rescale restores `x`'s scale).
    pub fn from_matrix(params: &CkksParams, matrix: &[Vec<C64>], level: usize, scale: f64) -> Result<Self, HeError> {
        let d = matrix.len();
        if matrix.iter().any(|r| r.len() != d) {
            return Err(HeError::Mismatch("matrix is not square".into()));
        }
        let diags: Vec<(usize, Vec<C64>)> = (0..d)
            .map(|k| (k, (0..d).map(|i| matrix[i][(i + k) % d]).collect::<Vec<C64>>()))
            .filter(|(_, v)| v.iter().any(|z| *z != C64::default()))
            .collect();
        Self::from_diagonals(params, d, &diags, level, scale)
    }

    /// From the non-zero diagonals `(k, diag_k)` of a `d × d` matrix (`k < d`, distinct;
    /// `diag_k[i] = M[i][(i + k) mod d]`, length `d`).
    pub fn from_diagonals(
        params: &CkksParams,
        dim: usize,
        diagonals: &[(usize, Vec<C64>)],
        level: usize,
        scale: f64,
    ) -> Result<Self, HeError> {
        let slots = params.slots();
        if !dim.is_power_of_two() || dim > slots {
            return Err(HeError::OutOfRange(format!("dimension {dim} must be a power of two <= {slots}")));
        }
        let mut seen = BTreeSet::new();
        for (k, v) in diagonals {
            if *k >= dim || v.len() != dim || !seen.insert(*k) {
                return Err(HeError::Mismatch(format!("diagonal {k} (length {}) of a {dim} x {dim} matrix", v.len())));
            }
        }
        let baby = best_baby_steps(dim, &seen);
        let mut giants: Vec<(usize, Vec<(usize, CkksPlaintext)>)> = Vec::new();
        for (k, v) in diagonals {
            let (g, b) = (k / baby, k % baby);
            let shift = g * baby;
            // Rot_{−gB}(diag)[j] = diag[(j − gB) mod d] over the period-d replicated slots.
            let rotated: Vec<C64> = (0..slots).map(|j| v[(j % dim + dim - shift) % dim]).collect();
            let pt = params.encode(&rotated, level, scale)?;
            match giants.iter_mut().find(|(gg, _)| *gg == g) {
                Some((_, list)) => list.push((b, pt)),
                None => giants.push((g, vec![(b, pt)])),
            }
        }
        giants.sort_by_key(|(g, _)| *g);
        Ok(Self { dim, baby, level, scale, giants })
    }

    /// The matrix dimension `d`.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The baby-step count `B`.
    pub fn baby_steps(&self) -> usize {
        self.baby
    }
    /// The level the diagonals are encoded at.
    pub fn level(&self) -> usize {
        self.level
    }
    /// The rotation steps [`Self::apply`] uses (for Galois key generation).
    pub fn rotation_steps(&self) -> Vec<i64> {
        let mut s: BTreeSet<i64> = self.babies().into_iter().filter(|&b| b != 0).map(|b| b as i64).collect();
        s.extend(self.giants.iter().filter(|(g, _)| *g != 0).map(|(g, _)| (g * self.baby) as i64));
        s.into_iter().collect()
    }
    /// The number of homomorphic rotations of [`Self::apply`] (`B + G − 2` when dense).
    pub fn rotation_count(&self) -> usize {
        self.rotation_steps().len()
    }

    fn babies(&self) -> BTreeSet<usize> {
        self.giants.iter().flat_map(|(_, l)| l.iter().map(|(b, _)| *b)).collect()
    }

    /// `M·x` for `x` replicated with period `d` in `ct`'s slots (`ct` at this transform's level
    /// or above). Output scale `Δ_x·Δ_M` at this level, not rescaled.
    pub fn apply(&self, eval: &CkksEvaluator, ct: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        if ct.level() < self.level {
            return Err(HeError::Mismatch(format!("ciphertext at level {} below the transform's {}", ct.level(), self.level)));
        }
        let x = eval.mod_drop_to(ct, self.level)?;
        let mut rots: Vec<(usize, CkksCiphertext)> = Vec::new();
        for b in self.babies() {
            let mut r = eval.rotate(&x, b as i64)?;
            r.ct.to_ntt(eval.params().engine());
            rots.push((b, r));
        }
        let mut acc: Option<CkksCiphertext> = None;
        for (g, list) in &self.giants {
            let mut inner: Option<CkksCiphertext> = None;
            for (b, pt) in list {
                let xb = rots.iter().find(|(bb, _)| bb == b).map(|(_, c)| c).ok_or_else(|| HeError::Mismatch("baby step".into()))?;
                let p = eval.mul_plain(xb, pt)?;
                match &mut inner {
                    None => inner = Some(p),
                    Some(i) => eval.add_assign(i, &p)?,
                }
            }
            let Some(inner) = inner else { continue };
            let part = eval.rotate(&inner, (g * self.baby) as i64)?;
            match &mut acc {
                None => acc = Some(part),
                Some(a) => eval.add_assign(a, &part)?,
            }
        }
        match acc {
            Some(a) => Ok(a),
            // The zero matrix: an encryption of zero at the output scale.
            None => {
                let mut z = eval.mul_int(&x, 0);
                z.scale = x.scale * self.scale;
                Ok(z)
            }
        }
    }
}

/// The power-of-two `B` minimising the rotations (distinct non-zero `k mod B`) + (distinct
/// non-zero `k / B`) for the diagonals `ks`.
fn best_baby_steps(dim: usize, ks: &BTreeSet<usize>) -> usize {
    let cost = |b: usize| {
        let babies: BTreeSet<usize> = ks.iter().map(|k| k % b).filter(|&x| x != 0).collect();
        let giants: BTreeSet<usize> = ks.iter().map(|k| k / b).filter(|&x| x != 0).collect();
        babies.len() + giants.len()
    };
    let mut best = (usize::MAX, 1);
    let mut b = 1;
    while b <= dim {
        let c = cost(b);
        if c < best.0 {
            best = (c, b);
        }
        b *= 2;
    }
    best.1
}
