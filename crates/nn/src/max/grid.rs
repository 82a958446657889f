//! The row max of `softmax = grid` (nectar, issue 48): one rounding to a grid, then groups of
//! several elements compared all pairs at once — fewer rounds than the binary tree of
//! [`super::max_rows_coarse`].
//!
//! A binary tree pays one comparison (2 rounds) and one mux (1 round) per halving: 3 rounds per
//! factor 2, 15–16 for rows of 25–32. Here a level takes groups of `r` elements, compares every
//! pair of a group in one `msb` call, finds the group's winner by an AND of its `r − 1`
//! outcomes (⌈log2(r − 1)⌉ rounds of [`crate::Backend::and`]) and selects it with one mux:
//! `3 + ⌈log2(r − 1)⌉` rounds per factor `r` — 5 per factor 4 or 5, 6 per factor 8 — so rows
//! of 25 take two levels of 5 (10 rounds) and rows of 32 take 4 then 8 (11 rounds); the cost is
//! more comparisons (`r(r − 1)/2` per group: 60 per row of 25 instead of 24).
//!
//! An AND of pairwise outcomes names exactly one winner only if the comparisons are a
//! consistent order, which BumbleBee's approximate comparisons (a lost carry near the
//! threshold) are not. So every element is first rounded once, by one truncation to the grid
//! `2^−p`: `g = ⌊x·2^p⌋ − c`, `c ∈ {0, 1}` fixed per element by its shares. The comparisons
//! `1{g_i < g_j}` are exact MSBs of the differences in a small ring (`g` is an integer of a
//! few bits), hence a total preorder; ties go to the first element of the group (`i` beats
//! `j > i` on `g_i ≥ g_j`, `j < i` only on `g_j < g_i`). The winner's `x` is within
//! `2^(1 − p)` of the row maximum (one rounding on either side) — the slack, at every level
//! the same, since later levels compare the winners' own grid values (muxed along with `x`).

use crate::backend::Backend;
use crate::NnError;
use nectar_math::FixedPoint;
use std::collections::HashMap;

/// Largest group of a level (AGREEMENT): 28 comparisons and an AND tree of depth 3.
pub const GRID_MAX_RADIX: usize = 8;

/// The grid row max ([`max_rows_grid`]): comparisons of the grid values in `Z_{2^l}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridMax {
    /// Ring of the comparisons: differences of two grid values must stay below `2^(l − 1)`.
    pub l: u32,
    /// The grid `2^−precision`.
    pub precision: u32,
}

impl GridMax {
    /// Bound on `max(row) − grid_max(row)`: `2^(1 − precision)` (the winner's grid value is at
    /// least the maximum's, and each is its element's `⌊x·2^p⌋` or one less).
    pub fn slack(&self) -> f64 {
        (1.0 - self.precision as f64).exp2()
    }
}

/// `⌈log2 k⌉` (0 for `k ≤ 1`).
fn ceil_log2(k: usize) -> usize {
    (usize::BITS - k.saturating_sub(1).leading_zeros()) as usize
}

/// Rounds of one level whose largest group has `r ≥ 2` elements: the comparisons (2), the AND
/// tree of the winner's `r − 1` outcomes, the mux (1).
pub fn level_rounds(r: usize) -> usize {
    3 + ceil_log2(r.saturating_sub(1))
}

/// Comparisons of one level of radix `r` on rows of `m`: `r(r − 1)/2` per full group, and the
/// pairs of the last, smaller one.
fn level_pairs(m: usize, r: usize) -> usize {
    let s = m % r;
    (m / r) * r * (r - 1) / 2 + s * s.saturating_sub(1) / 2
}

/// The group sizes of the levels of [`max_rows_grid`] on rows of `cols` (AGREEMENT: a public
/// function of the row length): fewest rounds ([`level_rounds`] summed), then fewest
/// comparisons per row. Rows of 25: `[5, 5]` (10 rounds, 60 comparisons); of 32: `[4, 8]` (11,
/// 76); of 128: `[2, 8, 8]` (15, 316) — against the binary tree's 15, 15 and 21 rounds and
/// 24, 31 and 127 comparisons.
pub fn grid_radices(cols: usize) -> Vec<usize> {
    fn best(m: usize, memo: &mut HashMap<usize, (usize, usize, Vec<usize>)>) -> (usize, usize, Vec<usize>) {
        if m <= 1 {
            return (0, 0, Vec::new());
        }
        if let Some(v) = memo.get(&m) {
            return v.clone();
        }
        let mut out: Option<(usize, usize, Vec<usize>)> = None;
        for r in 2..=GRID_MAX_RADIX.min(m) {
            let (rounds, pairs, mut rest) = best(m.div_ceil(r), memo);
            let cand = (rounds + level_rounds(r), pairs + level_pairs(m, r));
            if out.as_ref().is_none_or(|o| cand < (o.0, o.1)) {
                rest.insert(0, r);
                out = Some((cand.0, cand.1, rest));
            }
        }
        let v = out.unwrap_or((0, 0, Vec::new()));
        memo.insert(m, v.clone());
        v
    }
    best(cols, &mut HashMap::new()).2
}

/// An element of each row within [`GridMax::slack`] of the row's maximum (the first of the
/// row's elements with the largest grid value), by [`grid_radices`]' levels. Inputs must
/// satisfy `|x| ≤ 2^(l − 3 − p)` in real value (`g.l`, `g.precision`: grid values then differ by
/// less than `2^(l − 1)`) and `p ≤ f`.
/// Cost: one truncation of `rows·cols` elements; per level one `msb` of the group pairs in
/// `Z_{2^l}`, the AND tree and one mux of `2·(r − 1)` values per group.
pub fn max_rows_grid<B: Backend + ?Sized>(b: &mut B, x: &B::Val, rows: usize, cols: usize, g: GridMax) -> Result<B::Val, NnError> {
    super::check_shape(b, x, rows, cols)?;
    let fp = b.format();
    if g.precision > fp.f() || g.l < 3 || g.l >= fp.l() {
        return Err(NnError::BadArgument(format!(
            "grid max: grid 2^-{} and comparison ring Z_2^{} need p <= f and 3 <= l' < l in {fp:?}",
            g.precision, g.l
        )));
    }
    let plan = grid_radices(cols);
    if plan.is_empty() {
        // rows of one element (a decoder's first position): the element itself, no rounding
        return Ok(x.clone());
    }
    let mut grid = b.trunc(x, fp.f() - g.precision)?;
    let mut v = x.clone();
    let mut m = cols;
    for r in plan {
        let (nv, ng) = level(b, &v, &grid, rows, m, r, g.l)?;
        v = nv;
        grid = ng;
        m = m.div_ceil(r);
    }
    Ok(v)
}

/// One level on rows of `m` in groups of `r`: the winners of every group, `x` and grid value.
fn level<B: Backend + ?Sized>(b: &mut B, v: &B::Val, grid: &B::Val, rows: usize, m: usize, r: usize, cmp_l: u32) -> Result<(B::Val, B::Val), NnError> {
    let groups = m.div_ceil(r);
    // Every pair (i < j) of every group, and per candidate i ≥ 1 of a group the literals its win
    // needs: s_ji = 1{g_j < g_i} for j < i, ¬s_ij for j > i (literal index: pair p is `p`, its
    // negation `pairs + p`).
    let (mut ia, mut ib) = (Vec::new(), Vec::new());
    let mut cands: Vec<(usize, usize, Vec<(usize, bool)>)> = Vec::new(); // (position, first of group, literals)
    for row in 0..rows {
        for k in 0..groups {
            let start = row * m + k * r;
            let size = r.min(m - k * r);
            let base = ia.len();
            let pair = |i: usize, j: usize| base + i * size - i * (i + 1) / 2 + (j - i - 1);
            for i in 0..size {
                for j in i + 1..size {
                    ia.push(start + i);
                    ib.push(start + j);
                }
            }
            for i in 1..size {
                let lits = (0..size).filter(|&j| j != i).map(|j| if j < i { (pair(j, i), false) } else { (pair(i, j), true) }).collect();
                cands.push((start + i, start, lits));
            }
        }
    }
    let pairs = ia.len();
    let ga = b.gather(grid, &ia)?;
    let gb = b.gather(grid, &ib)?;
    let d = b.sub(&ga, &gb)?;
    let d = b.reduce(&d, cmp_l)?;
    let fp = b.format();
    b.set_format(FixedPoint::new(cmp_l, 1)?); // the MSB reads the ring only, not the scale
    let s = b.msb(&d);
    b.set_format(fp);
    let s = s?;
    let ns = b.not(&s)?;
    let mut cur = b.concat_bits(&[&s, &ns])?;
    let mut lists: Vec<Vec<usize>> =
        cands.iter().map(|c| c.2.iter().map(|&(p, neg)| if neg { pairs + p } else { p }).collect()).collect();
    // AND tree: each round ANDs consecutive literals of every list in one call.
    while lists.iter().any(|l| l.len() > 1) {
        let (mut left, mut right, mut keep) = (Vec::new(), Vec::new(), Vec::new());
        let mut next_lists = Vec::with_capacity(lists.len());
        for l in &lists {
            let mut nl = Vec::with_capacity(l.len().div_ceil(2));
            for ch in l.chunks(2) {
                match ch {
                    [a, c] => {
                        nl.push(Slot::And(left.len()));
                        left.push(*a);
                        right.push(*c);
                    }
                    [a] => {
                        nl.push(Slot::Keep(keep.len()));
                        keep.push(*a);
                    }
                    _ => {}
                }
            }
            next_lists.push(nl);
        }
        let la = b.gather_bits(&cur, &left)?;
        let ra = b.gather_bits(&cur, &right)?;
        let anded = b.and(&la, &ra)?;
        let kept = b.gather_bits(&cur, &keep)?;
        let n_and = left.len();
        cur = b.concat_bits(&[&anded, &kept])?;
        lists = next_lists
            .into_iter()
            .map(|nl| nl.into_iter().map(|s| match s { Slot::And(i) => i, Slot::Keep(i) => n_and + i }).collect())
            .collect();
    }
    let won: Vec<usize> = lists.iter().map(|l| l.first().copied().unwrap_or(0)).collect();
    let oh = b.gather_bits(&cur, &won)?;
    // winner = first + Σ_{i ≥ 1} oh_i·(x_i − first), for x and the grid values in one mux
    let at: Vec<usize> = cands.iter().map(|c| c.0).collect();
    let first: Vec<usize> = cands.iter().map(|c| c.1).collect();
    let (vi, v0) = (b.gather(v, &at)?, b.gather(v, &first)?);
    let (gi, g0) = (b.gather(grid, &at)?, b.gather(grid, &first)?);
    let dv = b.sub(&vi, &v0)?;
    let dg = b.sub(&gi, &g0)?;
    let both = b.concat(&[&dv, &dg])?;
    let bits = b.concat_bits(&[&oh, &oh])?;
    let t = b.mux(&bits, &both)?;
    // Sum each group's candidates: r − 1 slots per group, a missing candidate (a smaller last
    // group) reading an appended zero.
    let nc = cands.len();
    let zero = b.constant(&[0])?;
    let t = b.concat(&[&t, &zero])?;
    let mut slot = vec![2 * nc; rows * groups * (r - 1)];
    let mut fill = vec![0usize; rows * groups];
    let group_of = |pos: usize| (pos / m) * groups + (pos % m) / r;
    for (c, cand) in cands.iter().enumerate() {
        let gi = group_of(cand.1);
        slot[gi * (r - 1) + fill[gi]] = c;
        fill[gi] += 1;
    }
    let heads: Vec<usize> = (0..rows).flat_map(|row| (0..groups).map(move |k| row * m + k * r)).collect();
    let mut out = Vec::with_capacity(2);
    for (half, src) in [v, grid].into_iter().enumerate() {
        let idx: Vec<usize> = slot.iter().map(|&c| if c == 2 * nc { c } else { half * nc + c }).collect();
        let spread = b.gather(&t, &idx)?;
        let sum = b.sum_groups(&spread, r - 1)?;
        let base = b.gather(src, &heads)?;
        out.push(b.add(&base, &sum)?);
    }
    let grid_out = out.pop().ok_or_else(|| NnError::BadArgument("grid max: no grid values".into()))?;
    let v_out = out.pop().ok_or_else(|| NnError::BadArgument("grid max: no values".into()))?;
    Ok((v_out, grid_out))
}

/// Where an entry of the next AND round comes from: an AND of this round, or a literal kept.
#[derive(Clone, Copy)]
enum Slot {
    And(usize),
    Keep(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radices_take_fewer_rounds_than_the_binary_tree() {
        let rounds = |c: usize| grid_radices(c).iter().map(|&r| level_rounds(r)).sum::<usize>();
        assert_eq!(grid_radices(25), vec![5, 5]);
        assert_eq!(rounds(25), 10);
        assert_eq!(grid_radices(32), vec![4, 8]);
        assert_eq!(rounds(32), 11);
        assert_eq!(grid_radices(128), vec![2, 8, 8]);
        assert_eq!(rounds(128), 15);
        assert!(grid_radices(1).is_empty());
        assert_eq!(grid_radices(2), vec![2]);
        for c in 2..300usize {
            let rs = grid_radices(c);
            let binary = 3 * ceil_log2(c);
            assert!(rounds(c) <= binary, "cols {c}: {rs:?}");
            // the levels reduce the row to one element
            assert_eq!(rs.iter().fold(c, |m, &r| m.div_ceil(r)), 1, "cols {c}: {rs:?}");
            assert!(rs.iter().all(|&r| (2..=GRID_MAX_RADIX).contains(&r)));
        }
    }
}
