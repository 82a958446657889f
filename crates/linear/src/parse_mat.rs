//! ParseMat (BumbleBee App. E, Fig. 8): where each entry of a (batched) OLT result sits in the
//! returned polynomials, for each compression.
//!
//! Block products are numbered `b = h·k'n' + α·n' + γ` (product `h` of a batch, block row `α`,
//! block column `γ`); entry `(r, c)` of block `b` sits at coefficient `(r·n_w + c)·m_w` of product
//! polynomial `b` (Prop. 1). Then:
//! - no compression: polynomial `b`, coefficient `(r·n_w + c)·m_w`;
//! - InterLeave (groups of `m_w` consecutive products): polynomial `⌊b/m_w⌋`, coefficient
//!   `(r·n_w + c)·m_w + (b mod m_w)` — from InterLeave's rule `ĉ[i] = â_{i mod m_w}[⌊i/m_w⌋·m_w]`.
//!   Fig. 8 of the paper writes the offset as `(j + pidx) mod m_w` and derives block row/column from
//!   `m'`; both are typos (REFERENCE.md §1.5), the rule above is what the tests check;
//! - PackLWEs: the `H·k·n` entries in row-major order are packed `N` per polynomial; entry `e`
//!   goes to polynomial `⌊e/N⌋` at coefficient `(e mod N)·N/n_g`, `n_g` = that polynomial's
//!   entry count rounded up to a power of two.

use crate::krdy::{Shape, Windows};
use crate::window::Compression;
use crate::LinearError;

/// The public layout of a (batched) OLT result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultLayout {
    pub shape: Shape,
    pub windows: Windows,
    pub degree: usize,
    pub compression: Compression,
    /// Number of products `H` (1 for a single OLT).
    pub batch: usize,
}

impl ResultLayout {
    /// Block products per matrix product (`k'n'`).
    pub fn blocks_per_product(&self) -> usize {
        let (kb, _, nb) = self.windows.blocks(self.shape);
        kb * nb
    }

    /// Block products in total (`H·k'n'`), the inputs of the compression.
    pub fn products(&self) -> usize {
        self.batch * self.blocks_per_product()
    }

    fn entries(&self) -> usize {
        self.batch * self.shape.k * self.shape.n
    }

    /// Automorphisms the evaluator's compression runs ([`crate::interleave::interleave_autos`]
    /// per group, plus PackLWEs' trace): [`crate::OltPlan::autos`] is the paper's bound, a
    /// partial group runs fewer.
    pub fn automorphisms(&self) -> usize {
        use crate::interleave::interleave_autos;
        match self.compression {
            Compression::None => 0,
            Compression::Interleave => {
                let (mw, products) = (self.windows.mw, self.products());
                let log = mw.trailing_zeros();
                let full = products / mw * interleave_autos(&vec![true; mw], log);
                full + if products % mw > 0 { interleave_autos(&vec![true; products % mw], log) } else { 0 }
            }
            Compression::PackLwes => (0..self.num_polys())
                .map(|g| {
                    let count = (self.entries() - g * self.degree).min(self.degree);
                    let n = count.next_power_of_two();
                    interleave_autos(&vec![true; count], n.trailing_zeros()) + (self.degree / n).trailing_zeros() as usize
                })
                .sum(),
        }
    }

    /// Number of returned polynomials.
    pub fn num_polys(&self) -> usize {
        match self.compression {
            Compression::None => self.products(),
            Compression::Interleave => self.products().div_ceil(self.windows.mw),
            Compression::PackLwes => self.entries().div_ceil(self.degree),
        }
    }

    /// Block product and coefficient holding entry `(row, col)` of product `h`, before compression.
    pub fn source(&self, h: usize, row: usize, col: usize) -> (usize, usize) {
        let w = self.windows;
        let (_, _, nb) = w.blocks(self.shape);
        let b = h * self.blocks_per_product() + (row / w.kw) * nb + col / w.nw;
        (b, w.result_index(row % w.kw, col % w.nw))
    }

    /// Returned polynomial and coefficient holding entry `(row, col)` of product `h`.
    pub fn locate(&self, h: usize, row: usize, col: usize) -> (usize, usize) {
        let (b, p) = self.source(h, row, col);
        match self.compression {
            Compression::None => (b, p),
            Compression::Interleave => (b / self.windows.mw, p + b % self.windows.mw),
            Compression::PackLwes => {
                let e = (h * self.shape.k + row) * self.shape.n + col;
                let g = e / self.degree;
                let in_g = (self.entries() - g * self.degree).min(self.degree);
                (
                    g,
                    crate::interleave::pack_lwes_position(e % self.degree, in_g, self.degree),
                )
            }
        }
    }

    /// PackLWEs inputs of returned polynomial `g`: `(block product, coefficient)` in packing order.
    pub fn pack_sources(&self, g: usize) -> Vec<(usize, usize)> {
        let (k, n) = (self.shape.k, self.shape.n);
        let lo = g * self.degree;
        let hi = ((g + 1) * self.degree).min(self.entries());
        (lo..hi)
            .map(|e| {
                let (h, rc) = (e / (k * n), e % (k * n));
                self.source(h, rc / n, rc % n)
            })
            .collect()
    }

    /// For each returned polynomial, the sorted coefficient positions that hold matrix entries
    /// (the only `b`-coefficients that need to travel, REFERENCE.md §1.3).
    pub fn positions(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.num_polys()];
        for h in 0..self.batch {
            for r in 0..self.shape.k {
                for c in 0..self.shape.n {
                    let (g, p) = self.locate(h, r, c);
                    out[g].push(p);
                }
            }
        }
        for v in &mut out {
            v.sort_unstable();
            v.dedup();
        }
        out
    }

    /// ParseMat: read the `H` row-major `k×n` matrices (concatenated) out of the returned
    /// polynomials (mod 2^64).
    pub fn parse(&self, polys: &[Vec<u64>]) -> Result<Vec<u64>, LinearError> {
        if polys.len() != self.num_polys() || polys.iter().any(|p| p.len() != self.degree) {
            return Err(LinearError::Malformed(format!(
                "expected {} polynomials of degree {}",
                self.num_polys(),
                self.degree
            )));
        }
        let (k, n) = (self.shape.k, self.shape.n);
        let mut out = Vec::with_capacity(self.entries());
        for h in 0..self.batch {
            for r in 0..k {
                for c in 0..n {
                    let (g, p) = self.locate(h, r, c);
                    out.push(polys[g][p]);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interleave::{interleave, pack_lwes, AutoRing, PlainRing};
    use crate::krdy::{encode_lhs_block, encode_rhs_block, matmul_u64};
    use nectar_math::{sample::uniform_below, Prg};

    const Q: u64 = (1 << 61) - 1;

    /// Plaintext simulation of a batched OLT over `Z_q` with small entries (no wrap-around), all
    /// three compressions, then ParseMat; compared with the plain products.
    fn simulate(
        shape: Shape,
        w: Windows,
        degree: usize,
        batch: usize,
        compression: Compression,
        prg: &mut Prg,
    ) {
        let ring = PlainRing { n: degree, q: Q };
        let lay = ResultLayout {
            shape,
            windows: w,
            degree,
            compression,
            batch,
        };
        let (kb, mb, nb) = w.blocks(shape);
        let mut want = Vec::new();
        let mut products = Vec::new();
        for _ in 0..batch {
            let q: Vec<u64> = (0..shape.k * shape.m)
                .map(|_| uniform_below(prg, 100))
                .collect();
            let v: Vec<u64> = (0..shape.m * shape.n)
                .map(|_| uniform_below(prg, 100))
                .collect();
            want.extend(matmul_u64(&q, &v, shape));
            for a in 0..kb {
                for g in 0..nb {
                    let mut acc = vec![0u64; degree];
                    for b in 0..mb {
                        // entries < 100, so the u64 product polynomial has no wrap; lift negatives.
                        let l = encode_lhs_block(&q, shape, w, a, b, degree);
                        let l: Vec<u64> = l
                            .iter()
                            .map(|&x| if x > 1 << 62 { Q - x.wrapping_neg() } else { x })
                            .collect();
                        let r = encode_rhs_block(&v, shape, w, b, g, degree);
                        acc = ring.add(&acc, &plain_mul(&ring, &l, &r)).unwrap();
                    }
                    products.push(acc);
                }
            }
        }
        let mut autos = 0;
        let polys: Vec<Vec<u64>> = match compression {
            Compression::None => products,
            Compression::Interleave => products
                .chunks(w.mw)
                .map(|ch| {
                    let (p, a) = interleave(
                        &ring,
                        ch.iter().cloned().map(Some).collect(),
                        w.mw.trailing_zeros(),
                    )
                    .unwrap();
                    autos += a;
                    p
                })
                .collect(),
            Compression::PackLwes => (0..lay.num_polys())
                .map(|g| {
                    let ins = lay
                        .pack_sources(g)
                        .into_iter()
                        .map(|(b, p)| {
                            Some(ring.mul_monomial(&products[b], 2 * degree - p).unwrap())
                        })
                        .collect();
                    let (p, a) = pack_lwes(&ring, ins).unwrap();
                    autos += a;
                    p
                })
                .collect(),
        };
        assert_eq!(autos, lay.automorphisms(), "{shape:?} {w:?} batch {batch} {compression:?}");
        let got = lay.parse(&polys).unwrap();
        assert_eq!(got, want, "{shape:?} {w:?} batch {batch} {compression:?}");
    }

    fn plain_mul(ring: &PlainRing, a: &[u64], b: &[u64]) -> Vec<u64> {
        let n = ring.n;
        let mut out = vec![0u64; n];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                let p = ((x as u128 * y as u128) % Q as u128) as u64;
                let idx = i + j;
                if idx < n {
                    out[idx] = (out[idx] + p) % Q;
                } else {
                    out[idx - n] = (out[idx - n] + Q - p) % Q;
                }
            }
        }
        out
    }

    #[test]
    fn parse_after_each_compression() {
        let mut prg = Prg::new([9; 16]);
        let n = 64;
        for &(k, m, nn, kw, mw, nw, batch) in &[
            (5, 9, 7, 2, 4, 8, 1),  // margins, k'n' = 3·1 < m_w
            (9, 6, 9, 2, 4, 4, 1),  // k'n' = 5·3 = 15 (not a multiple of m_w)
            (1, 70, 3, 1, 8, 8, 1), // k = 1, m > N
            (6, 5, 1, 4, 2, 1, 2),  // n = 1, batched
            (3, 4, 3, 2, 2, 4, 3),  // batch 3
        ] {
            let s = Shape::new(k, m, nn).unwrap();
            let w = Windows::new(kw, mw, nw, n, true).unwrap();
            for c in [
                Compression::None,
                Compression::Interleave,
                Compression::PackLwes,
            ] {
                simulate(s, w, n, batch, c, &mut prg);
            }
        }
    }
}
