//! BFV slot rotations in the two-row layout (LEAF §2.3, §3.4: slots `ζ^{5^j}` and `ζ^{−5^j}`).
//!
//! For a prime `t ≡ 1 (mod 2N)` the `N` slots of [`Params::encode_simd`] are the evaluations at
//! the primitive `2N`-th roots of unity mod `t`, in the NTT's (bit-reversed) order. The **row
//! layout** names the same slots by `(row, column)`: slot `r·N/2 + i` of
//! [`Params::encode_simd_rows`] is the evaluation at `ζ^{(−1)^r·5^i}`, with `ζ` the root of
//! `encode_simd`'s slot 0 (so both layouts agree on slot 0, and products stay slot-wise in
//! either). `X → X^{5^k}` then rotates both rows left by `k`
//! (`m(ζ^{5^i·5^k}) = m(ζ^{5^{i+k}})`, `5` has order `N/2` mod `2N`) and `X → X^{2N−1}`
//! swaps the rows. Both are automorphisms with key switching ([`Ciphertext::automorphism`]):
//! the Galois keys come from [`row_galois_elements`].

use crate::ciphertext::Ciphertext;
use crate::encoding::Plaintext;
use crate::keys::GaloisKeys;
use crate::params::Params;
use crate::HeError;
use std::collections::HashMap;

/// The Galois element rotating both rows left by `k` (any sign): `5^(k mod N/2) mod 2N`.
pub fn row_rotation_element(n: usize, k: i64) -> u64 {
    let half = (n / 2) as i64;
    let e = k.rem_euclid(half) as u64;
    let two_n = 2 * n as u64;
    let mut g = 1u64;
    for _ in 0..e {
        g = g * 5 % two_n;
    }
    g
}

/// The Galois element swapping the two rows: `2N − 1` (complex conjugation).
pub fn row_swap_element(n: usize) -> u64 {
    2 * n as u64 - 1
}

/// The Galois elements for rotations by each of `steps` (identity steps dropped) and, if
/// `swap`, the row swap — what [`crate::SecretKey::galois_keys`] needs for
/// [`Ciphertext::rotate_rows`] / [`Ciphertext::swap_rows`].
pub fn row_galois_elements(n: usize, steps: &[i64], swap: bool) -> Vec<u64> {
    let mut v: Vec<u64> = steps.iter().map(|&k| row_rotation_element(n, k)).filter(|&g| g != 1).collect();
    if swap {
        v.push(row_swap_element(n));
    }
    v.sort_unstable();
    v.dedup();
    v
}

impl Params {
    /// `layout[r·N/2 + i]` = the `encode_simd` slot holding row `r`, column `i`.
    pub fn simd_row_layout(&self, j: usize) -> Result<Vec<usize>, HeError> {
        self.check_plain_index(j)?;
        let plan = self.0.t_plans[j]
            .as_ref()
            .ok_or_else(|| HeError::Mismatch("row layout needs a prime t ≡ 1 (mod 2N)".into()))?;
        let n = self.n();
        let m = *plan.modulus();
        // Root of each NTT slot: the transform of X.
        let mut x = vec![0u64; n];
        x[1] = 1;
        plan.forward(&mut x);
        let pos: HashMap<u64, usize> = x.iter().enumerate().map(|(i, &v)| (v, i)).collect();
        if pos.len() != n {
            return Err(HeError::InvalidParams("NTT slots are not distinct roots".into()));
        }
        let zeta = x[0];
        let two_n = 2 * n as u64;
        let mut layout = vec![0usize; n];
        let mut e = 1u64; // 5^i mod 2N
        for i in 0..n / 2 {
            for (r, exp) in [(0, e), (1, two_n - e)] {
                let root = m.pow(zeta, exp);
                layout[r * n / 2 + i] =
                    *pos.get(&root).ok_or_else(|| HeError::InvalidParams("root missing from the NTT slots".into()))?;
            }
            e = e * 5 % two_n;
        }
        Ok(layout)
    }

    /// SIMD encoding in the row layout: `values[r·N/2 + i]` (at most `N`, each `< t_j`) goes to
    /// row `r`, column `i`.
    pub fn encode_simd_rows(&self, values: &[u64], j: usize) -> Result<Plaintext, HeError> {
        let n = self.n();
        if values.len() > n {
            return Err(HeError::OutOfRange(format!("{} slot values > N = {n}", values.len())));
        }
        let layout = self.simd_row_layout(j)?;
        let mut v = vec![0u64; n];
        for (s, &x) in values.iter().enumerate() {
            v[layout[s]] = x;
        }
        self.encode_simd(&v, j)
    }

    /// The `N` slot values in the row layout (inverse of [`Params::encode_simd_rows`]).
    pub fn decode_simd_rows(&self, pt: &Plaintext) -> Result<Vec<u64>, HeError> {
        let layout = self.simd_row_layout(pt.plain_index)?;
        let d = self.decode_simd(pt)?;
        Ok(layout.iter().map(|&p| d[p]).collect())
    }
}

impl Ciphertext {
    /// Rotates both rows left by `k` (slot `(r, i)` receives `(r, i + k mod N/2)`); needs the
    /// Galois key of [`row_rotation_element`]`(N, k)`. The result is in coefficient form.
    pub fn rotate_rows(&self, params: &Params, k: i64, keys: &GaloisKeys) -> Result<Ciphertext, HeError> {
        let g = row_rotation_element(params.n(), k);
        if g == 1 {
            return Ok(self.clone());
        }
        self.automorphism(params, g, keys)
    }

    /// Swaps the two rows; needs the Galois key of [`row_swap_element`].
    pub fn swap_rows(&self, params: &Params, keys: &GaloisKeys) -> Result<Ciphertext, HeError> {
        self.automorphism(params, row_swap_element(params.n()), keys)
    }
}
