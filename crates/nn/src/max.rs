//! Row-wise max and argmax by a comparison tree (BumbleBee §V-B; CrypTFlow2 maxpool).
//!
//! Level by level, the row's elements are paired `(a, b)`; `s = MSB(a − b) = 1{a < b}` and
//! `max = a + s·(b − a)` (an odd element is carried to the next level). ⌈log2 cols⌉ levels, each
//! one `msb` call and one `mux` call over all rows at once. Ties keep the left element, so
//! [`argmax_rows`] returns the first index of the maximum and rows with equal maxima work.
//! Cost on rows × cols: msb and mux on < rows·cols elements in total (argmax: mux twice that).
//! Exact (MSB and mux are exact) for `|x| < 2^(l−2)` (differences must not wrap).

pub mod grid;

use crate::backend::{int, Backend};
use crate::poly::{less_than_in_ring, LessMode};
use crate::NnError;

/// The comparison of a coarse max tree (nectar, issue 17): `1{a < c}` as BumbleBee's
/// approximate less-than (§V-A1) on a `2^−precision` grid, in `Z_{2^l}` after local reduction
/// ([`less_than_in_ring`]). Valid for `|a − c| < 2^(l − 1 − f)`. Ignoring the low bits only
/// errs for `0 ≤ a − c < 2^−precision` (it may then report `a < c`), so each level keeps an
/// element within `2^−precision` of the larger one: the tree returns an element of the row
/// that is at most [`CoarseCompare::slack`] below the row's maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoarseCompare {
    /// Ring width of the comparisons.
    pub l: u32,
    /// Grid of the comparisons: `2^−precision`.
    pub precision: u32,
}

impl CoarseCompare {
    /// The grid for rows of `cols`: the coarsest `2^−p` (fewest compared bits) with
    /// `⌈log2 cols⌉ · 2^−p ≤ 1/2`, i.e. `p = 1 + ⌈log2 ⌈log2 cols⌉⌉`, so that the slack stays
    /// ≤ 1/2 (AGREEMENT: a public function of the row length).
    pub fn for_rows(l: u32, cols: usize) -> Self {
        let levels = levels(cols).max(1);
        let precision = 1 + (usize::BITS - (levels - 1).leading_zeros());
        CoarseCompare { l, precision }
    }

    /// Bound on `max(row) − coarse_max(row)` for rows of `cols`: `⌈log2 cols⌉ · 2^−precision`.
    pub fn slack(&self, cols: usize) -> f64 {
        levels(cols) as f64 * (-(self.precision as f64)).exp2()
    }
}

/// Levels of the comparison tree on rows of `cols`: `⌈log2 cols⌉`.
fn levels(cols: usize) -> usize {
    (usize::BITS - cols.max(1).saturating_sub(1).leading_zeros()) as usize
}

fn check_shape<B: Backend + ?Sized>(b: &B, x: &B::Val, rows: usize, cols: usize) -> Result<(), NnError> {
    if cols == 0 || rows.checked_mul(cols) != Some(b.len(x)) {
        return Err(NnError::Length { op: "row shape", a: b.len(x), b: rows.saturating_mul(cols) });
    }
    Ok(())
}

/// One tree: returns (max, index) if `with_index`, index as a ring integer.
fn tree<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    with_index: bool,
    coarse: Option<CoarseCompare>,
) -> Result<(B::Val, Option<B::Val>), NnError> {
    check_shape(b, x, rows, cols)?;
    ragged_tree(b, x, &vec![cols; rows], with_index, coarse)
}

/// The comparison tree on rows of lengths `lens` (each at least 1), stored one after another:
/// per level one comparison and one mux over the pairs of every row (a row of odd length
/// carries its last element), `⌈log2 max(lens)⌉` levels. Rows of equal length `cols` are
/// [`tree`]'s (the same vectors in the same order).
fn ragged_tree<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    lens: &[usize],
    with_index: bool,
    coarse: Option<CoarseCompare>,
) -> Result<(B::Val, Option<B::Val>), NnError> {
    let total: usize = lens.iter().sum();
    if lens.contains(&0) || total != b.len(x) {
        return Err(NnError::Length { op: "row lengths", a: b.len(x), b: total });
    }
    let mut v = x.clone();
    let mut idx = if with_index {
        let ids: Vec<u64> = lens.iter().flat_map(|&m| (0..m).map(|p| p as i64)).map(|p| int(b, p)).collect();
        Some(b.constant(&ids)?)
    } else {
        None
    };
    let mut m = lens.to_vec();
    while m.iter().any(|&k| k > 1) {
        let (mut ia, mut ib, mut carry) = (Vec::new(), Vec::new(), Vec::new());
        let mut off = 0;
        for &k in &m {
            for i in 0..k / 2 {
                ia.push(off + 2 * i);
                ib.push(off + 2 * i + 1);
            }
            if k % 2 == 1 {
                carry.push(off + k - 1);
            }
            off += k;
        }
        let a = b.gather(&v, &ia)?;
        let c = b.gather(&v, &ib)?;
        let d = b.sub(&a, &c)?;
        let s = match coarse {
            None => b.msb(&d)?, // a < c
            Some(c) => {
                let less = LessMode::Approx { precision: c.precision };
                let mut bits = less_than_in_ring(b, &d, c.l, &[0.0], less)?.into_iter();
                match (bits.next(), bits.next()) {
                    (Some(s), None) => s,
                    _ => return Err(NnError::BadArgument("expected one comparison bit vector".into())),
                }
            }
        };
        let ca = b.sub(&c, &a)?;
        let (mx, new_idx) = match &idx {
            None => {
                let t = b.mux(&s, &ca)?;
                (b.add(&a, &t)?, None)
            }
            Some(iv) => {
                let ja = b.gather(iv, &ia)?;
                let jc = b.gather(iv, &ib)?;
                let dj = b.sub(&jc, &ja)?;
                let ss = b.concat_bits(&[&s, &s])?;
                let both = b.concat(&[&ca, &dj])?;
                let t = b.mux(&ss, &both)?;
                let k = ia.len();
                let t0 = b.gather(&t, &(0..k).collect::<Vec<_>>())?;
                let t1 = b.gather(&t, &(k..2 * k).collect::<Vec<_>>())?;
                (b.add(&a, &t0)?, Some(b.add(&ja, &t1)?))
            }
        };
        // Reassemble the rows: each row's winners, then its carried element.
        let pairs = ia.len();
        let (mut perm, mut w, mut cr) = (Vec::with_capacity(pairs + carry.len()), 0, 0);
        for k in m.iter_mut() {
            perm.extend(w..w + *k / 2);
            w += *k / 2;
            if *k % 2 == 1 {
                perm.push(pairs + cr);
                cr += 1;
            }
            *k = *k / 2 + *k % 2;
        }
        if carry.is_empty() {
            v = mx;
            if new_idx.is_some() {
                idx = new_idx;
            }
        } else {
            let cv = b.gather(&v, &carry)?;
            let all = b.concat(&[&mx, &cv])?;
            v = b.gather(&all, &perm)?;
            if let (Some(ni), Some(iv)) = (new_idx, &idx) {
                let ci = b.gather(iv, &carry)?;
                let all = b.concat(&[&ni, &ci])?;
                idx = Some(b.gather(&all, &perm)?);
            }
        }
    }
    Ok((v, idx))
}

/// The maximum of each row of lengths `lens` stored one after another (a causal prompt's
/// visible scores), exact ([`max_rows`]) or coarse ([`max_rows_coarse`]) by `coarse`; a
/// row's comparisons are those of its own length.
pub fn max_ragged_rows<B: Backend + ?Sized>(b: &mut B, x: &B::Val, lens: &[usize], coarse: Option<CoarseCompare>) -> Result<B::Val, NnError> {
    Ok(ragged_tree(b, x, lens, false, coarse)?.0)
}

/// Maximum of each row of a row-major `rows × cols` matrix.
pub fn max_rows<B: Backend + ?Sized>(b: &mut B, x: &B::Val, rows: usize, cols: usize) -> Result<B::Val, NnError> {
    Ok(tree(b, x, rows, cols, false, None)?.0)
}

/// A coarse maximum of each row (nectar's `softmax = coarse`): an element of the row within
/// [`CoarseCompare::slack`] of its maximum, by the comparisons of `cmp` (cheaper than
/// [`max_rows`]'s exact MSBs on the full ring: 19 instead of 44 millionaire bits in softmax's
/// `Z_{2^45}` at f = 18). Inputs must satisfy `|x| < 2^(cmp.l − 2 − f)`.
pub fn max_rows_coarse<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    cmp: CoarseCompare,
) -> Result<B::Val, NnError> {
    Ok(tree(b, x, rows, cols, false, Some(cmp))?.0)
}

/// (max, first index of the max) of each row; the index is a ring integer (not scaled by 2^f).
pub fn argmax_rows<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
) -> Result<(B::Val, B::Val), NnError> {
    argmax_tree(b, x, rows, cols, None)
}

/// The argmax tree with `cmp`'s comparisons ([`tree`] with its index).
fn argmax_tree<B: Backend + ?Sized>(b: &mut B, x: &B::Val, rows: usize, cols: usize, cmp: Option<CoarseCompare>) -> Result<(B::Val, B::Val), NnError> {
    let (m, i) = tree(b, x, rows, cols, true, cmp)?;
    let i = i.ok_or_else(|| NnError::BadArgument("argmax index missing".into()))?;
    Ok((m, i))
}

/// Bits of [`argmax_rows_narrow`]'s comparison ring above the fractional bits (AGREEMENT):
/// its comparisons are exact for differences below `2^(ARGMAX_RANGE_BITS − 1) = 2^19` in real
/// units.
pub const ARGMAX_RANGE_BITS: u32 = 20;

/// [`argmax_rows`] with every comparison of the tree exact on all bits of the narrower ring
/// `Z_{2^(f + ARGMAX_RANGE_BITS)}` (the shares of `a − c` reduced locally,
/// [`less_than_in_ring`]) instead of the MSB of `Z_{2^l}`: the same result (ties keep the first
/// index) for rows whose entries differ by less than `2^19` (a language model's logits: tens),
/// with the millionaire on 37 bits instead of 63 at `(64, 18)`. A decoding step's argmax over
/// SmolLM2's 49 152 logits took 0.76 s of its 7.3 s (one process, loopback) on 64 bits.
/// Input domain: `|x_i − x_j| < 2^19` within a row (beyond it a comparison may be wrong);
/// formats where the narrow ring is not narrower than `l` run [`argmax_rows`].
pub fn argmax_rows_narrow<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
) -> Result<(B::Val, B::Val), NnError> {
    let fp = b.format();
    let cmp_l = fp.f() + ARGMAX_RANGE_BITS;
    if cmp_l >= fp.l() {
        return argmax_rows(b, x, rows, cols);
    }
    // `precision = f`: no low bit ignored, an exact comparison in the narrow ring.
    argmax_tree(b, x, rows, cols, Some(CoarseCompare { l: cmp_l, precision: fp.f() }))
}

/// Broadcast one value per row to every element of its row.
pub fn broadcast_rows<B: Backend + ?Sized>(b: &mut B, v: &B::Val, rows: usize, cols: usize) -> Result<B::Val, NnError> {
    if b.len(v) != rows {
        return Err(NnError::Length { op: "broadcast_rows", a: b.len(v), b: rows });
    }
    b.gather(v, &(0..rows * cols).map(|p| p / cols).collect::<Vec<_>>())
}

/// Tile a per-column vector (length `cols`) over `rows` rows.
pub fn tile_cols<B: Backend + ?Sized>(b: &mut B, v: &B::Val, rows: usize, cols: usize) -> Result<B::Val, NnError> {
    if b.len(v) != cols {
        return Err(NnError::Length { op: "tile_cols", a: b.len(v), b: cols });
    }
    b.gather(v, &(0..rows * cols).map(|p| p % cols).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plain::PlainBackend;

    /// Ragged rows (lengths 1, 2, odd and even) give each row's own maximum, exact and coarse;
    /// rows of one length give the equal-row tree's result.
    #[test]
    fn ragged_rows_give_each_rows_maximum() {
        let fp = nectar_math::FixedPoint::BUMBLEBEE;
        let mut b = PlainBackend::new(fp).unwrap();
        let lens = [1usize, 2, 5, 8, 3, 7];
        let xs: Vec<f64> = (0..lens.iter().sum::<usize>()).map(|i| ((i * 29) % 17) as f64 * 0.75 - 6.0).collect();
        let x = b.encode(&xs).unwrap();
        let want: Vec<f64> = lens
            .iter()
            .scan(0, |off, &k| {
                let m = xs[*off..*off + k].iter().copied().fold(f64::MIN, f64::max);
                *off += k;
                Some(m)
            })
            .collect();
        let exact = fp.decode_vec::<u64>(&max_ragged_rows(&mut b, &x, &lens, None).unwrap());
        assert_eq!(exact, want);
        let cmp = CoarseCompare::for_rows(34, 8);
        let coarse = fp.decode_vec::<u64>(&max_ragged_rows(&mut b, &x, &lens, Some(cmp)).unwrap());
        for (g, w) in coarse.iter().zip(&want) {
            assert!(*g <= *w && *w - *g <= cmp.slack(8), "{g} vs {w}");
        }
        let equal = [4usize; 6];
        let x = b.encode(&xs[..24]).unwrap();
        let r = max_ragged_rows(&mut b, &x, &equal, None).unwrap();
        assert_eq!(r, max_rows(&mut b, &x, 6, 4).unwrap());
        assert!(max_ragged_rows(&mut b, &x, &[4, 0, 20], None).is_err());
    }

    /// The narrow argmax equals the full one (maximum and first index, ties included) on rows
    /// whose entries differ by up to just below 2^19, and errs only beyond its domain.
    #[test]
    fn narrow_argmax_equals_the_full_one_in_its_domain() {
        let fp = nectar_math::FixedPoint::BUMBLEBEE;
        let mut b = PlainBackend::new(fp).unwrap();
        let edge = (1u64 << 19) as f64 - 1.0;
        let rows: Vec<Vec<f64>> = vec![
            vec![-30.5, 12.25, 12.25, -0.001, 11.999, 3.0, 12.25],
            vec![edge / 2.0, -edge / 2.0, 0.0, edge / 2.0 - 1e-4, -7.0, 1.0, 2.0],
            vec![-edge / 2.0, -edge / 2.0 + 2f64.powi(-18), 0.5, -1.0, 0.25, 0.5, -3.0],
            vec![4.0; 7],
        ];
        let xs: Vec<f64> = rows.concat();
        let x = b.encode(&xs).unwrap();
        let (m_full, i_full) = argmax_rows(&mut b, &x, rows.len(), 7).unwrap();
        let (m, i) = argmax_rows_narrow(&mut b, &x, rows.len(), 7).unwrap();
        assert_eq!((&m, &i), (&m_full, &i_full));
        assert_eq!(i, vec![1, 0, 2, 0]);
        // Beyond the domain (a difference of 2^19 and more) the narrow comparison wraps.
        let far = b.encode(&[-(2f64.powi(18)) - 1.0, 2f64.powi(18) + 1.0]).unwrap();
        assert_eq!(argmax_rows(&mut b, &far, 1, 2).unwrap().1, vec![1]);
        assert_eq!(argmax_rows_narrow(&mut b, &far, 1, 2).unwrap().1, vec![0]);
    }
}
