//! Slot packings of BLB's fused CKKS matmuls (BLB §4.2.1, §5.1, Fig. 6–7; REFERENCE.md §5.2),
//! as explicit index maps `tensor index → (ciphertext, slot)`, with pack / unpack of plaintext
//! matrices (to encode weights, to encrypt inputs, to check decrypted results).
//!
//! - [`Packing::SpatialFirst`] (column-major): `X[r][c]` at position `c·rows + r`, the spatial
//!   index consecutive, then the reduce index (§4.2.1). Position `p` lies in ciphertext
//!   `p / s`, slot `p mod s` (`s` slots).
//! - [`Packing::ReduceFirst`] (row-major): `X[r][c]` at `r·cols + c`. For `B = K^T` (`D × L`)
//!   this is `K` in spatial-first packing (§5.2: "K_h^T is in reduce-first packing").
//! - [`Packing::Diagonal`]: a square `C` (`n × n`) by diagonals, `C[i][j]` at `δ·n + i`,
//!   `δ = (j − i) mod n` (the output of the ct-ct matmul, §5.1 step 3).
//! - Multi-head packings (MHP, §5.1 "Multi-Head Optimization", Fig. 7e) on a [`MhLayout`]:
//!   blocks of `L` slots, block `β = h + hs·g` for head `h < hs` and column group `g < c`;
//!   [`Packing::MhSpatialFirst`] puts column `k` of `A_h` (`L × d`) in ciphertext `k / c`, group
//!   `k mod c`; [`Packing::MhReduceFirst`] puts row `k` of `B_h` (`d × L`) there;
//!   [`Packing::MhDiagonal`] puts diagonal `δ` of `C_h` (`L × L`) in ciphertext `δ mod ρ`,
//!   group `δ / ρ` (`ρ = L/c`): the strided order that makes step 3 rotation-cheap
//!   ([`crate::ckks_matmul`]).

use crate::LinearError;

/// A dense real matrix, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Mat {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// `rows·cols` entries, row-major.
    pub data: Vec<f64>,
}

impl Mat {
    /// The zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }
    /// `M[r][c] = f(r, c)`.
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> f64) -> Self {
        let mut data = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            for c in 0..cols {
                data.push(f(r, c));
            }
        }
        Self { rows, cols, data }
    }
    /// `M[r][c]`.
    pub fn get(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.cols + c]
    }
    /// The transpose.
    pub fn transpose(&self) -> Mat {
        Mat::from_fn(self.cols, self.rows, |r, c| self.get(c, r))
    }
    /// `self · o`.
    pub fn matmul(&self, o: &Mat) -> Result<Mat, LinearError> {
        if self.cols != o.rows {
            return Err(LinearError::BadShape(format!(
                "{}x{} times {}x{}",
                self.rows, self.cols, o.rows, o.cols
            )));
        }
        let mut out = Mat::zeros(self.rows, o.cols);
        for r in 0..self.rows {
            for k in 0..self.cols {
                let a = self.get(r, k);
                if a != 0.0 {
                    let row = &o.data[k * o.cols..(k + 1) * o.cols];
                    out.data[r * o.cols..(r + 1) * o.cols]
                        .iter_mut()
                        .zip(row)
                        .for_each(|(x, &b)| *x += a * b);
                }
            }
        }
        Ok(out)
    }
    /// Largest absolute entry-wise difference (shapes must agree).
    pub fn max_abs_diff(&self, o: &Mat) -> Result<f64, LinearError> {
        if (self.rows, self.cols) != (o.rows, o.cols) {
            return Err(LinearError::BadShape(format!(
                "{}x{} vs {}x{}",
                self.rows, self.cols, o.rows, o.cols
            )));
        }
        Ok(self
            .data
            .iter()
            .zip(&o.data)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs())))
    }
}

/// The multi-head geometry (BLB §5.1 MHP): `heads` tensors of `L × reduce` (or `reduce × L`)
/// packed as `(L, hs, c)` per ciphertext, `L·hs·c = s` exactly, so that a rotation by
/// `r·L·hs` slots moves column group `g` to `g + r mod c` (step 3) and by `L` moves a block.
/// AGREEMENT (both parties derive it from the public shapes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MhLayout {
    /// Spatial length `L` (tokens), a power of two.
    pub l: usize,
    /// Number of heads `H`.
    pub heads: usize,
    /// Reduce dimension per head (`d = D/H` for `Q_h·K_h^T`, `L` for `softmax·V_h`).
    pub reduce: usize,
    /// Column groups per ciphertext `c` (a power of two, `c <= L`).
    pub c: usize,
    /// Head slots per group `hs = s/(L·c) >= H` (unused head slots stay zero).
    pub hs: usize,
    /// Slots per ciphertext `s`.
    pub slots: usize,
}

impl MhLayout {
    /// The layout for `heads` heads of `l × reduce`; `c` defaults to
    /// `min(L, reduce, s/(L·H'))` rounded to powers of two (`H'` = `H` rounded up), which
    /// fills the ciphertexts and keeps `hs` minimal. `c` may be forced (smaller `c` wastes
    /// head slots but exercises every step on small rings).
    pub fn new(
        l: usize,
        heads: usize,
        reduce: usize,
        slots: usize,
        c: Option<usize>,
    ) -> Result<Self, LinearError> {
        if !l.is_power_of_two() || !slots.is_power_of_two() || heads == 0 || reduce == 0 {
            return Err(LinearError::BadShape(format!(
                "multi-head layout L = {l}, H = {heads}, d = {reduce}, s = {slots}"
            )));
        }
        let hp = heads.next_power_of_two();
        if l * hp > slots {
            return Err(LinearError::BadShape(format!(
                "L·H = {} exceeds {slots} slots",
                l * hp
            )));
        }
        let c = c.unwrap_or_else(|| l.min(reduce.next_power_of_two()).min(slots / (l * hp)));
        if !c.is_power_of_two() || c > l || l * hp * c > slots {
            return Err(LinearError::BadShape(format!(
                "column groups c = {c} for L = {l}, H = {heads}, s = {slots}"
            )));
        }
        Ok(Self {
            l,
            heads,
            reduce,
            c,
            hs: slots / (l * c),
            slots,
        })
    }
    /// Ciphertexts per multi-head operand: `J = ⌈reduce / c⌉`.
    pub fn operand_cts(&self) -> usize {
        self.reduce.div_ceil(self.c)
    }
    /// Diagonal stride `ρ = L/c` (= output ciphertexts of the ct-ct matmul).
    pub fn rho(&self) -> usize {
        self.l / self.c
    }
    /// Blocks of `L` slots per ciphertext (`hs·c`).
    pub fn blocks(&self) -> usize {
        self.hs * self.c
    }
    /// The slot of element `e < L` of block `(h, g)`.
    pub fn slot(&self, h: usize, g: usize, e: usize) -> usize {
        e + self.l * (h + self.hs * g)
    }
    /// Column group of a slot.
    pub fn group_of(&self, slot: usize) -> usize {
        slot / self.l / self.hs
    }
    /// Where the value at `slot` goes when the operand is packed pre-rotated as step 1 of
    /// [`crate::ckks_matmul::matmul_cc`] leaves it: within its block of `L` slots, left by
    /// `ρ·g` for column group `g` ([`crate::ckks_matmul::matmul_cc_prerotated`]).
    pub fn prerotated_slot(&self, slot: usize) -> usize {
        let (block, e) = (slot / self.l, slot % self.l);
        let amt = self.rho() * self.group_of(slot);
        block * self.l + (e + self.l - amt % self.l) % self.l
    }
}

/// A packing: where each tensor element lives (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// `rows × cols`, column-major over consecutive ciphertexts.
    SpatialFirst {
        rows: usize,
        cols: usize,
        slots: usize,
    },
    /// `rows × cols`, row-major.
    ReduceFirst {
        rows: usize,
        cols: usize,
        slots: usize,
    },
    /// `n × n` by diagonals.
    Diagonal { n: usize, slots: usize },
    /// Per head `L × reduce` (`A_h`, e.g. `Q_h`).
    MhSpatialFirst(MhLayout),
    /// Per head `reduce × L` (`B_h`, e.g. `K_h^T`, or `V_h` padded to `L × L`).
    MhReduceFirst(MhLayout),
    /// Per head `L × L` by strided diagonals (the ct-ct matmul output).
    MhDiagonal(MhLayout),
}

impl Packing {
    /// Slots per ciphertext.
    pub fn slots(&self) -> usize {
        match *self {
            Packing::SpatialFirst { slots, .. }
            | Packing::ReduceFirst { slots, .. }
            | Packing::Diagonal { slots, .. } => slots,
            Packing::MhSpatialFirst(m) | Packing::MhReduceFirst(m) | Packing::MhDiagonal(m) => {
                m.slots
            }
        }
    }
    /// Number of matrices (heads) packed.
    pub fn heads(&self) -> usize {
        match self {
            Packing::MhSpatialFirst(m) | Packing::MhReduceFirst(m) | Packing::MhDiagonal(m) => {
                m.heads
            }
            _ => 1,
        }
    }
    /// Shape `(rows, cols)` of each matrix.
    pub fn dims(&self) -> (usize, usize) {
        match *self {
            Packing::SpatialFirst { rows, cols, .. } | Packing::ReduceFirst { rows, cols, .. } => {
                (rows, cols)
            }
            Packing::Diagonal { n, .. } => (n, n),
            Packing::MhSpatialFirst(m) => (m.l, m.reduce),
            Packing::MhReduceFirst(m) => (m.reduce, m.l),
            Packing::MhDiagonal(m) => (m.l, m.l),
        }
    }
    /// Number of ciphertexts.
    pub fn num_cts(&self) -> usize {
        match *self {
            Packing::SpatialFirst { rows, cols, slots }
            | Packing::ReduceFirst { rows, cols, slots } => (rows * cols).div_ceil(slots),
            Packing::Diagonal { n, slots } => (n * n).div_ceil(slots),
            Packing::MhSpatialFirst(m) | Packing::MhReduceFirst(m) => m.operand_cts(),
            Packing::MhDiagonal(m) => m.rho(),
        }
    }
    /// `(ciphertext, slot)` of element `[r][c]` of matrix (head) `h`.
    pub fn place(&self, h: usize, r: usize, c: usize) -> (usize, usize) {
        let split = |p: usize, s: usize| (p / s, p % s);
        match *self {
            Packing::SpatialFirst { rows, slots, .. } => split(c * rows + r, slots),
            Packing::ReduceFirst { cols, slots, .. } => split(r * cols + c, slots),
            Packing::Diagonal { n, slots } => split(((c + n - r) % n) * n + r, slots),
            Packing::MhSpatialFirst(m) => (c / m.c, m.slot(h, c % m.c, r)),
            Packing::MhReduceFirst(m) => (r / m.c, m.slot(h, r % m.c, c)),
            Packing::MhDiagonal(m) => {
                let d = (c + m.l - r) % m.l;
                (d % m.rho(), m.slot(h, d / m.rho(), r))
            }
        }
    }

    /// Packs one matrix per head into slot vectors (unused slots zero).
    pub fn pack(&self, mats: &[Mat]) -> Result<Vec<Vec<f64>>, LinearError> {
        let (rows, cols) = self.dims();
        if mats.len() != self.heads() || mats.iter().any(|m| (m.rows, m.cols) != (rows, cols)) {
            return Err(LinearError::BadShape(format!(
                "{} matrices for {} heads of {rows}x{cols}",
                mats.len(),
                self.heads()
            )));
        }
        let mut out = vec![vec![0.0; self.slots()]; self.num_cts()];
        for (h, m) in mats.iter().enumerate() {
            for r in 0..rows {
                for c in 0..cols {
                    let (ct, slot) = self.place(h, r, c);
                    out[ct][slot] = m.get(r, c);
                }
            }
        }
        Ok(out)
    }

    /// Reads the matrices back from slot vectors.
    pub fn unpack(&self, cts: &[Vec<f64>]) -> Result<Vec<Mat>, LinearError> {
        if cts.len() != self.num_cts() || cts.iter().any(|v| v.len() < self.slots()) {
            return Err(LinearError::BadShape(format!(
                "{} slot vectors for a packing of {} ciphertexts",
                cts.len(),
                self.num_cts()
            )));
        }
        let (rows, cols) = self.dims();
        Ok((0..self.heads())
            .map(|h| {
                Mat::from_fn(rows, cols, |r, c| {
                    let (ct, slot) = self.place(h, r, c);
                    cts[ct][slot]
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(rows: usize, cols: usize, base: f64) -> Mat {
        Mat::from_fn(rows, cols, |r, c| base + (r * cols + c) as f64)
    }

    /// Every packing is a bijection onto distinct slots and round-trips.
    #[test]
    fn packings_round_trip_and_are_injective() {
        let lay = MhLayout::new(8, 3, 4, 256, None).unwrap();
        assert_eq!((lay.c, lay.hs), (4, 8));
        let lay2 = MhLayout::new(8, 3, 8, 256, None).unwrap();
        for p in [
            Packing::SpatialFirst {
                rows: 8,
                cols: 12,
                slots: 32,
            },
            Packing::ReduceFirst {
                rows: 12,
                cols: 8,
                slots: 32,
            },
            Packing::Diagonal { n: 8, slots: 16 },
            Packing::MhSpatialFirst(lay),
            Packing::MhReduceFirst(lay),
            Packing::MhDiagonal(lay),
            Packing::MhSpatialFirst(lay2),
        ] {
            let (rows, cols) = p.dims();
            let mats: Vec<Mat> = (0..p.heads())
                .map(|h| ramp(rows, cols, 1000.0 * h as f64))
                .collect();
            let v = p.pack(&mats).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            for h in 0..p.heads() {
                for r in 0..rows {
                    for c in 0..cols {
                        assert!(seen.insert(p.place(h, r, c)), "{p:?} collides");
                    }
                }
            }
            assert_eq!(p.unpack(&v).unwrap(), mats);
        }
        // Spatial-first: column k of X is the k-th block of L slots (Fig. 6).
        let p = Packing::SpatialFirst {
            rows: 4,
            cols: 2,
            slots: 8,
        };
        assert_eq!(
            p.pack(&[ramp(4, 2, 0.0)]).unwrap()[0],
            vec![0.0, 2.0, 4.0, 6.0, 1.0, 3.0, 5.0, 7.0]
        );
        // Diagonal: slot δ·n + i holds C[i][i+δ].
        let p = Packing::Diagonal { n: 2, slots: 4 };
        assert_eq!(
            p.pack(&[ramp(2, 2, 0.0)]).unwrap()[0],
            vec![0.0, 3.0, 1.0, 2.0]
        );
        assert!(MhLayout::new(8, 3, 4, 16, None).is_err());
        assert!(Packing::Diagonal { n: 2, slots: 4 }.unpack(&[]).is_err());
    }
}
