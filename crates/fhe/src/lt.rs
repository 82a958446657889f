//! The baby-step giant-step linear transform on BFV slots (LEAF App. A, Alg. 5–7, with the
//! NTT-domain accumulation of Alg. 6), shared by the packing ([`crate::pack`]) and the
//! slots-to-coefficients transform ([`crate::s2c`]).
//!
//! Slots are named in the row layout of [`nectar_he::Params::encode_simd_rows`]: two rows of
//! `H = N/2`; `rot_k` moves the value of slot `(ρ, i)` to `(ρ, i − k mod H)`. For inputs
//! `x_0, x_1, …` (e.g. `m` and its row swap) and diagonals `d_{s,r}` the transform is
//!
//! `y = Σ_s Σ_{r<R} d_{s,r} ⊙ rot_r(x_s)
//!    = Σ_g rot_{gB}( Σ_s Σ_{b<B} rot_{−gB}(d_{s,gB+b}) ⊙ rot_b(x_s) )`,
//!
//! with the baby steps `rot_b(x_s)` given by the caller (NTT form) and the giant steps combined
//! by Horner's rule `inner_0 + rot_B(inner_1 + rot_B(…))`: `G − 1` rotations by `B`, one Galois
//! key, instead of one key per giant step (documented deviation: the rotation keys of Alg. 5's
//! `B + G` distinct steps would be ~95 MB each at `N = 32768`). Each giant step's inner sum is
//! computed in parallel (rayon), its diagonals encoded on the fly into buffers the giant step
//! reuses (slot values, then the SIMD encoding in place, then the lifted NTT limbs: no
//! allocation per diagonal).

use crate::FheError;
use nectar_he::{Ciphertext, GaloisKeys, Params, PlainNtt, Plaintext};
use rayon::prelude::*;

pub(crate) fn he(e: nectar_he::HeError) -> FheError {
    FheError::He(e.to_string())
}

/// `⌈√r⌉` rounded up to a power of two: the baby steps for `r` diagonals.
pub fn baby_steps(r: usize) -> usize {
    let mut b = 1;
    while b * b < r {
        b *= 2;
    }
    b
}

/// Row-layout SIMD encoding with the layout computed once (the per-call
/// [`Params::encode_simd_rows`] rebuilds it).
pub struct RowSlots {
    layout: Vec<usize>,
}

impl RowSlots {
    pub fn new(params: &Params) -> Result<Self, FheError> {
        Ok(Self { layout: params.simd_row_layout(0).map_err(he)? })
    }

    /// Encodes `N` row-layout slot values (each `< t`).
    pub fn encode(&self, params: &Params, values: &[u64]) -> Result<Plaintext, FheError> {
        let mut v = vec![0u64; self.layout.len()];
        for (s, &x) in values.iter().enumerate() {
            v[self.layout[s]] = x;
        }
        params.encode_simd(&v, 0).map_err(he)
    }

    /// The SIMD encoding's coefficients, in `out` (`N` entries), of the row-layout values
    /// `values` rotated by `−shift` (slot `(ρ, i)` moves to `(ρ, i + shift mod H)`).
    fn encode_rotated_into(&self, params: &Params, values: &[u64], shift: usize, out: &mut [u64]) -> Result<(), FheError> {
        let half = self.layout.len() / 2;
        if values.len() != 2 * half || out.len() != 2 * half || !half.is_power_of_two() {
            return Err(FheError::InvalidParams(format!("{} row-layout values for N = {}", values.len(), 2 * half)));
        }
        for (j, &x) in values.iter().enumerate() {
            let (row, col) = (j / half, j % half);
            out[self.layout[row * half + ((col + shift) & (half - 1))]] = x;
        }
        params.encode_simd_in_place(out, 0).map_err(he)
    }
}

/// Operation counts of one transform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LtStats {
    /// Key-switched rotations (giant steps here; the caller adds its baby steps).
    pub rotations: usize,
    /// Plaintext × ciphertext products (one per nonzero diagonal and input).
    pub products: usize,
    /// Diagonals encoded (SIMD encoding plus an NTT per prime).
    pub encodings: usize,
}

/// The transform above: `babies[s][b] = rot_b(x_s)` (NTT form, all at one level, `B` of
/// them), `diag(s, r, out)` writing the `N` row-layout values of `d_{s,r}` into `out` and
/// returning `false` for a zero diagonal (`out` then unused), `r_count` diagonals per input,
/// `keys` holding the rotation by `B`. Result in coefficient form.
pub fn bsgs<F>(
    params: &Params,
    enc: &RowSlots,
    babies: &[Vec<Ciphertext>],
    r_count: usize,
    diag: F,
    keys: &GaloisKeys,
) -> Result<(Ciphertext, LtStats), FheError>
where
    F: Fn(usize, usize, &mut [u64]) -> bool + Sync,
{
    let b = babies.first().map_or(0, |v| v.len());
    if b == 0 || babies.iter().any(|v| v.len() != b) || r_count == 0 {
        return Err(FheError::InvalidParams("linear transform without baby steps or diagonals".into()));
    }
    let level = babies[0][0].level();
    let half = params.n() / 2;
    let g_count = r_count.div_ceil(b);
    let inner: Vec<(Option<Ciphertext>, usize)> = (0..g_count)
        .into_par_iter()
        .map(|g| -> Result<(Option<Ciphertext>, usize), FheError> {
            let shift = g * b;
            let mut acc: Option<Ciphertext> = None;
            let mut used = 0;
            let (mut d, mut coeffs) = (vec![0u64; 2 * half], vec![0u64; 2 * half]);
            let mut pt: Option<PlainNtt> = None;
            for (s, xs) in babies.iter().enumerate() {
                for (bb, x) in xs.iter().enumerate() {
                    let r = shift + bb;
                    if r >= r_count {
                        break;
                    }
                    if !diag(s, r, &mut d) {
                        continue;
                    }
                    // pre-rotation by −gB: the value of slot (ρ, i) moves to (ρ, i + gB)
                    enc.encode_rotated_into(params, &d, shift, &mut coeffs)?;
                    let pt = match pt.as_mut() {
                        Some(p) => {
                            p.refill_coeffs(params, &coeffs, 0).map_err(he)?;
                            p
                        }
                        None => pt.insert(PlainNtt::from_coeffs(params, &coeffs, 0, level).map_err(he)?),
                    };
                    match acc.as_mut() {
                        None => acc = Some(x.mul_plain(params, pt).map_err(he)?),
                        Some(a) => a.mul_plain_accumulate(params, x, pt).map_err(he)?,
                    }
                    used += 1;
                }
            }
            Ok((acc, used))
        })
        .collect::<Result<_, _>>()?;
    let products: usize = inner.iter().map(|(_, u)| u).sum();
    let mut stats = LtStats { rotations: 0, products, encodings: products };
    let mut acc: Option<Ciphertext> = None;
    for (inner_g, _) in inner.into_iter().rev() {
        if let Some(mut a) = acc.take() {
            a.to_coeff(params);
            let mut r = a.rotate_rows(params, b as i64, keys).map_err(he)?;
            stats.rotations += 1;
            if let Some(i) = inner_g {
                r.add_assign(params, &i).map_err(he)?;
            }
            acc = Some(r);
        } else {
            acc = inner_g;
        }
    }
    let mut out = acc.ok_or_else(|| FheError::InvalidParams("every diagonal is zero".into()))?;
    out.to_coeff(params);
    Ok((out, stats))
}
