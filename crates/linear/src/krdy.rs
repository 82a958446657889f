//! KRDY / Cheetah coefficient encodings `π_lhs`, `π_rhs` and the block partition of a matrix
//! product (BumbleBee §III-A, Eq. (1), Prop. 1).
//!
//! For a block `Q ∈ Z^{k_w×m_w}`, `V ∈ Z^{m_w×n_w}` with `k_w·m_w·n_w ≤ N`, in
//! `Z_{2^64}[X]/(X^N + 1)`:
//! - `π_lhs(Q)[i·m_w·n_w − j] = Q[i, j]`, except row 0, `j > 0`, which wraps to `N − j` negated;
//! - `π_rhs(V)[k·m_w + j] = V[j, k]`;
//! - `(π_lhs(Q)·π_rhs(V))[i·m_w·n_w + k·m_w] = (Q·V)[i, k]`.
//!
//! The row offset is `i·m_w·n_w` (as in the toy example, Fig. 3, and the artifact); Eq. (1) of the
//! paper prints `i·k_w·m_w`, a typo (REFERENCE.md §1.4).
//!
//! All arithmetic is modulo `2^64` (wrapping `u64`); for a ring `Z_{2^l}`, `l ≤ 64`, reduce the
//! result modulo `2^l` at the end (exact since `2^l | 2^64`).
//!
//! A `(k, m, n)` product is cut into `k' × m'` lhs blocks and `m' × n'` rhs blocks
//! (`k' = ⌈k/k_w⌉`, ...); block products are summed over `β ∈ [m']`; margin blocks are zero-padded.

use crate::LinearError;

/// The shape `(k, m, n)` of a product `Q (k×m) · V (m×n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub k: usize,
    pub m: usize,
    pub n: usize,
}

impl Shape {
    pub fn new(k: usize, m: usize, n: usize) -> Result<Self, LinearError> {
        if k == 0 || m == 0 || n == 0 {
            return Err(LinearError::BadShape(format!(
                "({k}, {m}, {n}): dimensions must be >= 1"
            )));
        }
        Ok(Shape { k, m, n })
    }
}

/// Partition windows `(k_w, m_w, n_w)` (AGREEMENT: both parties must use the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Windows {
    pub kw: usize,
    pub mw: usize,
    pub nw: usize,
}

impl Windows {
    /// Checks `1 ≤ k_w·m_w·n_w ≤ N`; `pow2_mw` additionally requires `m_w` to be a power of two
    /// (needed by InterLeave, whose gap is `m_w`).
    pub fn new(
        kw: usize,
        mw: usize,
        nw: usize,
        n: usize,
        pow2_mw: bool,
    ) -> Result<Self, LinearError> {
        let w = Windows { kw, mw, nw };
        let bad = |why| LinearError::BadWindows {
            windows: (kw, mw, nw),
            n,
            why,
        };
        if kw == 0 || mw == 0 || nw == 0 {
            return Err(bad("windows must be >= 1"));
        }
        if kw
            .checked_mul(mw)
            .and_then(|x| x.checked_mul(nw))
            .is_none_or(|p| p > n)
        {
            return Err(bad("k_w * m_w * n_w exceeds N"));
        }
        if pow2_mw && !mw.is_power_of_two() {
            return Err(bad("m_w must be a power of two"));
        }
        Ok(w)
    }

    /// Number of blocks `(k', m', n')` along each axis.
    pub fn blocks(&self, s: Shape) -> (usize, usize, usize) {
        (
            s.k.div_ceil(self.kw),
            s.m.div_ceil(self.mw),
            s.n.div_ceil(self.nw),
        )
    }

    /// Coefficient of `(Q·V)[i, k]` (in-block indices) in the product polynomial.
    pub fn result_index(&self, i: usize, k: usize) -> usize {
        i * self.mw * self.nw + k * self.mw
    }
}

/// `π_lhs` of block `(α, β)` of the row-major `k×m` matrix `q`, as `N` coefficients mod 2^64.
pub fn encode_lhs_block(
    q: &[u64],
    s: Shape,
    w: Windows,
    alpha: usize,
    beta: usize,
    n: usize,
) -> Vec<u64> {
    let mut out = vec![0u64; n];
    encode_lhs_block_into(q, s, w, alpha, beta, &mut out);
    out
}

/// [`encode_lhs_block`] into `out` (`N` coefficients, overwritten: a buffer reused across
/// blocks).
pub fn encode_lhs_block_into(q: &[u64], s: Shape, w: Windows, alpha: usize, beta: usize, out: &mut [u64]) {
    debug_assert_eq!(q.len(), s.k * s.m);
    let n = out.len();
    out.fill(0);
    for i in 0..w.kw {
        let row = alpha * w.kw + i;
        if row >= s.k {
            break;
        }
        for j in 0..w.mw {
            let col = beta * w.mw + j;
            if col >= s.m {
                break;
            }
            let v = q[row * s.m + col];
            if i == 0 && j > 0 {
                out[n - j] = v.wrapping_neg();
            } else {
                out[i * w.mw * w.nw - j] = v;
            }
        }
    }
}

/// `π_rhs` of block `(β, γ)` of the row-major `m×n` matrix `v`, as `N` coefficients mod 2^64.
pub fn encode_rhs_block(
    v: &[u64],
    s: Shape,
    w: Windows,
    beta: usize,
    gamma: usize,
    n: usize,
) -> Vec<u64> {
    let mut out = vec![0u64; n];
    encode_rhs_block_into(v, s, w, beta, gamma, &mut out);
    out
}

/// [`encode_rhs_block`] into `out` (`N` coefficients, overwritten: a buffer reused across
/// blocks).
pub fn encode_rhs_block_into(v: &[u64], s: Shape, w: Windows, beta: usize, gamma: usize, out: &mut [u64]) {
    debug_assert_eq!(v.len(), s.m * s.n);
    out.fill(0);
    for j in 0..w.mw {
        let row = beta * w.mw + j;
        if row >= s.m {
            break;
        }
        for k in 0..w.nw {
            let col = gamma * w.nw + k;
            if col >= s.n {
                break;
            }
            out[k * w.mw + j] = v[row * s.n + col];
        }
    }
}

/// Read the `(α, γ)` result block out of a product polynomial `u` (mod 2^64) into the row-major
/// `k×n` matrix `out` (entries outside the matrix are ignored).
pub fn decode_result_block(
    u: &[u64],
    s: Shape,
    w: Windows,
    alpha: usize,
    gamma: usize,
    out: &mut [u64],
) {
    for i in 0..w.kw {
        let row = alpha * w.kw + i;
        if row >= s.k {
            break;
        }
        for k in 0..w.nw {
            let col = gamma * w.nw + k;
            if col >= s.n {
                break;
            }
            out[row * s.n + col] = u[w.result_index(i, k)];
        }
    }
}

/// Which party encrypts its matrix in an OLT: the one whose encoding needs fewer polynomials
/// (BumbleBee Alg. 1, "if k' > n' flip the roles"; lhs needs `k'·m'`, rhs `m'·n'`).
/// `true`: the rhs holder (`V`) encrypts.
pub fn rhs_encrypts(s: Shape, w: Windows) -> bool {
    let (kb, _, nb) = w.blocks(s);
    kb > nb
}

/// Naive negacyclic product in `Z_{2^64}[X]/(X^N+1)` (reference for tests and plaintext twins).
pub fn negacyclic_mul_u64(a: &[u64], b: &[u64]) -> Vec<u64> {
    let n = a.len();
    let mut out = vec![0u64; n];
    for (i, &x) in a.iter().enumerate() {
        if x == 0 {
            continue;
        }
        for (j, &y) in b.iter().enumerate() {
            if y == 0 {
                continue;
            }
            let p = x.wrapping_mul(y);
            let idx = i + j;
            if idx < n {
                out[idx] = out[idx].wrapping_add(p);
            } else {
                out[idx - n] = out[idx - n].wrapping_sub(p);
            }
        }
    }
    out
}

/// Plaintext matrix product mod 2^64 (row-major), the twin every OLT test compares against and
/// the evaluator's local `X_S·W`. Rows in parallel once the product is large enough to pay for
/// the threads (a BERT-base FFN matmul is 3·10^8 multiply-adds: 0.3 to 0.5 s on one core).
pub fn matmul_u64(q: &[u64], v: &[u64], s: Shape) -> Vec<u64> {
    use rayon::prelude::*;
    const PAR_MACS: usize = 1 << 22;
    let mut out = vec![0u64; s.k * s.n];
    let row = |(i, o): (usize, &mut [u64])| {
        for j in 0..s.m {
            let a = q[i * s.m + j];
            if a == 0 {
                continue;
            }
            for (x, &w) in o.iter_mut().zip(&v[j * s.n..(j + 1) * s.n]) {
                *x = x.wrapping_add(a.wrapping_mul(w));
            }
        }
    };
    if s.n == 0 {
        return out;
    }
    if s.k * s.m * s.n >= PAR_MACS {
        out.par_chunks_mut(s.n).enumerate().for_each(row);
    } else {
        out.chunks_mut(s.n).enumerate().for_each(row);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::Prg;
    use rand_core::RngCore;

    #[test]
    fn fig3_toy_example() {
        // BumbleBee Fig. 3: N = 16, l = 5.
        let s = Shape::new(4, 2, 2).unwrap();
        let w = Windows::new(4, 2, 2, 16, true).unwrap();
        let q = [1u64, 2, 3, 4, 5, 6, 7, 8];
        let v = [9u64, 10, 11, 12];
        let qh = encode_lhs_block(&q, s, w, 0, 0, 16);
        let vh = encode_rhs_block(&v, s, w, 0, 0, 16);
        let mut want_q = [0u64; 16];
        want_q[0] = 1;
        want_q[15] = 2u64.wrapping_neg();
        want_q[4] = 3;
        want_q[3] = 4;
        want_q[8] = 5;
        want_q[7] = 6;
        want_q[12] = 7;
        want_q[11] = 8;
        assert_eq!(qh, want_q);
        let mut want_v = [0u64; 16];
        want_v[0] = 9;
        want_v[1] = 11;
        want_v[2] = 10;
        want_v[3] = 12;
        assert_eq!(vh, want_v);
        let u: Vec<u64> = negacyclic_mul_u64(&qh, &vh)
            .iter()
            .map(|x| x & 31)
            .collect();
        let got: Vec<u64> = (0..8).map(|i| u[2 * i]).collect();
        assert_eq!(got, vec![31, 2, 7, 14, 15, 26, 23, 6]);
        let mut out = vec![0u64; 8];
        decode_result_block(&u, s, w, 0, 0, &mut out);
        assert_eq!(out, vec![31, 2, 7, 14, 15, 26, 23, 6]);
    }

    /// Blockwise KRDY (plaintext) equals the matrix product, for shapes that are not multiples
    /// of the windows, k = 1, n = 1 and m > N.
    #[test]
    fn blockwise_product_matches_matmul() {
        let mut prg = Prg::new([3; 16]);
        let n = 32;
        for &(k, m, nn, kw, mw, nw) in &[
            (3, 5, 7, 2, 4, 4),
            (1, 70, 3, 1, 8, 4),
            (5, 40, 1, 4, 8, 1),
            (2, 3, 2, 1, 2, 16),
            (6, 9, 10, 3, 2, 5),
        ] {
            let s = Shape::new(k, m, nn).unwrap();
            let w = Windows::new(kw, mw, nw, n, true).unwrap();
            let q: Vec<u64> = (0..k * m).map(|_| prg.next_u64()).collect();
            let v: Vec<u64> = (0..m * nn).map(|_| prg.next_u64()).collect();
            let (kb, mb, nb) = w.blocks(s);
            let mut out = vec![0u64; k * nn];
            for a in 0..kb {
                for g in 0..nb {
                    let mut acc = vec![0u64; n];
                    for b in 0..mb {
                        let p = negacyclic_mul_u64(
                            &encode_lhs_block(&q, s, w, a, b, n),
                            &encode_rhs_block(&v, s, w, b, g, n),
                        );
                        for (x, y) in acc.iter_mut().zip(p) {
                            *x = x.wrapping_add(y);
                        }
                    }
                    decode_result_block(&acc, s, w, a, g, &mut out);
                }
            }
            assert_eq!(out, matmul_u64(&q, &v, s), "shape ({k},{m},{nn})");
        }
    }

    #[test]
    fn window_validation_and_flip() {
        assert!(Windows::new(2, 3, 2, 16, true).is_err());
        assert!(Windows::new(2, 4, 4, 16, true).is_err());
        assert!(Windows::new(0, 4, 4, 16, false).is_err());
        assert!(Windows::new(1, 3, 5, 16, false).is_ok());
        let w = Windows::new(2, 2, 2, 16, true).unwrap();
        assert!(rhs_encrypts(Shape::new(8, 4, 2).unwrap(), w));
        assert!(!rhs_encrypts(Shape::new(2, 4, 8).unwrap(), w));
    }
}
