//! Row-wise softmax: the operator kind ([`SoftmaxProtocol`], [`ALL`]: one file per composition
//! in `softmax/` — BumbleBee's, ours in `Z_{2^45}` with an exact, a coarse or a grid row max,
//! and ROTL's LUT softmax) and the composition they share.
//!
//! BumbleBee §V-B Eq. (3), App. A ordering; REFERENCE.md §3.6:
//! `x̄ = max_row(x)` (comparison tree), `d = x − x̄ ≤ 0`, `e = exp_neg(d)` (clipped
//! `(1 + d/2^n)^(2^n)`), `s = Σ_row e ∈ [1, cols]`, **one reciprocal per row**, broadcast,
//! `y = e · (1/s)`. (Broadcasting before dividing would multiply the reciprocal's cost by the
//! row length, App. A.) The compositions take the suite's exponential and reciprocal
//! ([`crate::exp::ALL`], [`crate::reciprocal::ALL`]; East Alg. 3 is BumbleBee's composition with
//! OPPE exp and the Determine reciprocal).
//!
//! Masking: a public mask marks entries to exclude (e.g. causal attention); they are replaced
//! locally by [`MASK_VALUE`] (a large negative number, "−inf-like"); the binary max trees,
//! the exp and the product skip them (their probabilities are 0 exactly, [`Visible`]). A fully
//! masked row yields the uniform distribution (all entries equal).
//! Rows with several equal maxima work (the tree keeps one; each contributes exp(0) = 1).
//! Cost on rows × cols: max tree (msb + mux ⌈log2 cols⌉ calls), exp (1 less_than, 1 trunc,
//! n squares, 1 mux) and the final mul on the visible entries, reciprocal on `rows` elements.
//! Input domain: `|x| < 2^(l−4−f)` (so that masked differences do not wrap).

pub mod bumblebee;
pub mod coarse;
pub mod grid;
pub mod lut;
pub mod narrow;

use crate::backend::{enc, Backend, DynBackend};
use crate::exp::{exp_neg, Exp, ExpParams, EXP_BUMBLEBEE};
use crate::max::grid::{max_rows_grid, GridMax};
use crate::max::{broadcast_rows, max_ragged_rows, max_rows, max_rows_coarse, CoarseCompare};
use crate::mixed;
use crate::reciprocal::{reciprocal, RecipParams, RecipRange, Reciprocal, RECIP_SOFTMAX};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// One softmax call: `rows` rows of `cols` scores, with a public mask (`true` hides an entry).
#[derive(Clone, Copy, Debug)]
pub struct SoftmaxCall<'a> {
    pub rows: usize,
    pub cols: usize,
    pub mask: Option<&'a [bool]>,
}

/// A softmax composition (DESIGN.md "Where a protocol plugs in").
pub trait SoftmaxProtocol: Protocol {
    /// The row softmax in the backend's format, with the suite's exponential and reciprocal.
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, c: &SoftmaxCall<'_>, exp: Exp, recip: Reciprocal) -> Result<Vec<u64>, NnError>;

    /// Whether it composes the suite's exponential and reciprocal (`false`: it runs its own,
    /// whatever the suite names for them).
    fn composes(&self) -> bool {
        true
    }

    /// Whether it composes with `exp` and `recip` (refused at start, e.g. an exponential that
    /// does not fit a narrower ring).
    fn check(&self, exp: Exp, recip: Reciprocal) -> Result<(), String> {
        let _ = (exp, recip);
        Ok(())
    }

    /// The stated twin-vs-protocol bound in LSB of `fp` for rows of `cols` with scores in
    /// `[−6, 6]` (the bench's).
    fn tolerance(&self, exp: Exp, recip: Reciprocal, cols: usize, fp: FixedPoint) -> Result<i64, NnError>;
}

/// Every softmax composition, in the order `nectar suites` lists them.
pub static ALL: &[&dyn SoftmaxProtocol] = &[
    &bumblebee::Bumblebee,
    &lut::Lut,
    &narrow::Narrow,
    &coarse::Coarse,
    &grid::Grid,
];

nectar_math::kind!(
    /// The softmax kind in the registry.
    SoftmaxKind,
    Softmax,
    "softmax",
    dyn SoftmaxProtocol,
    ALL
);

/// The compositions the generated tests and `bench nn` cover: each softmax with every
/// exponential under BumbleBee's Newton reciprocal and with every reciprocal under BumbleBee's
/// exponential (partners varied one at a time), those its check accepts; a softmax that runs
/// its own once.
pub fn compositions() -> Vec<(Softmax, Exp, Reciprocal)> {
    let (taylor, newton) = (Exp::new(&crate::exp::taylor::Taylor), Reciprocal::new(&crate::reciprocal::newton::Newton));
    let mut out = Vec::new();
    for p in Softmax::all() {
        if !p.composes() {
            out.push((p, taylor, newton));
            continue;
        }
        let pairs = Exp::all().map(|e| (e, newton)).chain(Reciprocal::all().filter(|r| *r != newton).map(|r| (taylor, r)));
        out.extend(pairs.filter(|(e, r)| p.check(*e, *r).is_ok()).map(|(e, r)| (p, e, r)));
    }
    out
}

/// The composition of `form` with the suite's `exp` and `recip` (the reciprocal asked on the
/// row sums' range `r`; the coarse form's exp clips in `Z_{2^COARSE_CMP_L}`).
pub(crate) fn compose(
    b: &mut DynBackend<'_>,
    x: &Vec<u64>,
    c: &SoftmaxCall<'_>,
    form: SoftmaxForm,
    exp: Exp,
    recip: Reciprocal,
    r: RecipRange,
) -> Result<Vec<u64>, NnError> {
    recip.check(&r)?;
    let clip_l = matches!(form, SoftmaxForm::Coarse | SoftmaxForm::Grid).then_some(COARSE_CMP_L);
    // `grid` keeps the row sums in the narrow ring where the reciprocal serves them there (its
    // format bounds: rows below 64 keys at f = 18): no extension, and its products on 45-bit
    // shares.
    let narrow_recip = form == SoftmaxForm::Grid && recip.runs_in(&r, narrow_format(b.format())?);
    softmax_in_ring(b, x, c.rows, c.cols, c.mask, form, narrow_recip, |b, d| exp.eval(b, d, clip_l), |b, s| recip.eval(b, s, &r))
}

/// The row length `SoftmaxProtocol::check` asks the reciprocal about at start (BERT's rows of
/// 128 keys; every call checks its own rows again before any message).
pub const CHECK_COLS: usize = 128;

/// The format of the narrow compositions' exponential: `(NARROW_L, f)`.
pub(crate) fn narrow_format(fp: FixedPoint) -> Result<FixedPoint, NnError> {
    Ok(FixedPoint::new(NARROW_L, fp.f())?)
}

/// Softmax parameters (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftmaxParams {
    pub exp: ExpParams,
    /// The reciprocal's domain must contain `[1, cols]`.
    pub recip: RecipParams,
}

pub const SOFTMAX_BUMBLEBEE: SoftmaxParams = SoftmaxParams { exp: EXP_BUMBLEBEE, recip: RECIP_SOFTMAX };

/// The value masked entries are replaced by: `−2^(l−4−f)` (in real units) — far below T_exp,
/// and `x − x̄` cannot wrap for inputs in the domain.
pub fn mask_value(fp: FixedPoint) -> f64 {
    -(((fp.l() - 4 - fp.f()) as f64).exp2())
}
/// Re-export for documentation: see [`mask_value`].
pub const MASK_VALUE: &str = "−2^(l−4−f)";

/// Softmax over each row of a row-major `rows × cols` matrix; `mask[i] = true` excludes entry i.
pub fn softmax<B: Backend + ?Sized>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
    p: &SoftmaxParams,
) -> Result<B::Val, NnError> {
    if (cols as f64) >= (p.recip.hi as f64).exp2() || p.recip.lo > 0 {
        return Err(NnError::BadArgument(format!(
            "softmax rows of {cols} need a reciprocal domain containing [1, {cols}]"
        )));
    }
    softmax_with(
        b,
        x,
        rows,
        cols,
        mask,
        |b, d| exp_neg(b, d, &p.exp),
        |b, s| reciprocal(b, s, &p.recip),
    )
}

/// The softmax composition (max, subtract, exp, row sum, one reciprocal per row, product)
/// with the exponential and the reciprocal given: `exp` receives `x − max ≤ 0` (masked entries
/// at [`mask_value`]) and must return 0 far left; `recip` receives the row sums, in `[1, cols]`
/// (East Alg. 3 is this composition with OPPE exp and the Determine reciprocal).
pub fn softmax_with<B, E, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
    exp: E,
    recip: R,
) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    E: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    softmax_in_ring(b, x, rows, cols, mask, SoftmaxForm::Full, false, exp, recip)
}

/// Where the softmax composition runs and how its row max is found (AGREEMENT: shapes the
/// transcript).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxForm {
    /// The backend's ring, the exact max tree (BumbleBee §V-B).
    Full,
    /// `Z_{2^45}` ([`NARROW_L`]), the exact max tree ([`softmax_narrow_with`]).
    Narrow,
    /// `softmax = coarse` (nectar, issue 17 item 2): `Narrow` with a coarse row max.
    /// Softmax is invariant to the value subtracted from a row, and the max is there only to keep
    /// `x − m ≤ 0`; so the tree compares on a `2^−p` grid ([`coarse_compare`]: p = 4 for rows of
    /// 128) in `Z_{2^34}` ([`COARSE_CMP_L`], shares reduced locally): 19 millionaire bits per
    /// comparison instead of 44. The tree returns an element `m` of the row with
    /// `max − slack ≤ m ≤ max` (slack = `⌈log2 cols⌉·2^−p ≤ 1/2`), and the rows are shifted by the
    /// public `m + slack`: `d = x − m − slack ≤ 0` for every entry and `d ∈ [−slack, 0]` for the
    /// row's maximum, so the row sums lie in `[e^−1/2, cols]` and the reciprocal's domain starts
    /// at 1/2 ([`coarse_recip`]). `exp` should clip in `Z_{2^34}` too (its input `d` is in
    /// `(−2^(34 − 3 − f) − 1/2, 0]`): [`crate::exp::ExpParams::clip_l`] = `Some(COARSE_CMP_L)`.
    ///
    /// Domain: `|x| < 2^(34 − 4 − f)` (4096 at f = 18); masked entries at [`coarse_mask_value`].
    /// The result differs from the exact-max composition only by the exp's and reciprocal's
    /// approximation at the shifted arguments (the same function of a shifted input).
    Coarse,
    /// `softmax = grid` (nectar, issue 48): `Coarse` with the row max of
    /// [`crate::max::grid::max_rows_grid`] — every score rounded once to the grid `2^−2`
    /// ([`GRID_PRECISION`]), then groups of up to 8 compared all pairs at once (10 rounds for
    /// rows of 25 instead of the binary tree's 15–16) — an element within `2^−1` of the
    /// maximum, the rows shifted by it plus that slack as in `Coarse` — and the row sums left in
    /// `Z_{2^45}` for a reciprocal that serves them there. Same domain, masked value, exp clip
    /// and reciprocal range as `Coarse`.
    Grid,
}

/// The grid of `softmax = grid`'s row max: `2^−2` (AGREEMENT), so its slack `2^(1−2)` is the
/// coarse form's bound 1/2 (the row sums stay in `[e^−1/2, cols]`).
pub const GRID_PRECISION: u32 = 2;

/// The row max of `softmax = grid` at `f` fractional bits: grid values `|g| ≤ 2^(D + 2) + 1`
/// for the coarse domain `|x| ≤ 2^D`, `D = COARSE_CMP_L − 4 − f`, so their differences fit
/// `Z_{2^(D + 5)}` (17 bits at f = 18).
pub fn grid_max(f: u32) -> Result<GridMax, NnError> {
    let d = (COARSE_CMP_L - 4).checked_sub(f).ok_or_else(|| NnError::FormatTooNarrow {
        op: "softmax=grid",
        l: COARSE_CMP_L,
        f,
        why: format!("the coarse domain 2^({} − 4 − f) needs f <= {}", COARSE_CMP_L, COARSE_CMP_L - 4),
    })?;
    Ok(GridMax { l: d + GRID_PRECISION + 3, precision: GRID_PRECISION })
}

/// Ring width of the comparisons of `softmax = coarse` (the max tree's and, by the caller's
/// exp, the clip's): inputs `|x| < 2^(34 − 4 − f)` (4096 at f = 18), masked entries at
/// [`coarse_mask_value`] `= −2^(34 − 4 − f)`, so every difference the tree or the clip compares
/// stays below `2^(34 − 1 − f)` in magnitude. AGREEMENT.
pub const COARSE_CMP_L: u32 = 34;

/// The masked entries' value under `softmax = coarse`: [`mask_value`] of the comparison ring,
/// `−2^(COARSE_CMP_L − 4 − f)`.
pub fn coarse_mask_value(f: u32) -> f64 {
    -(((COARSE_CMP_L - 4).saturating_sub(f) as f64).exp2())
}

/// The comparison grid of the coarse max tree on rows of `cols` ([`CoarseCompare::for_rows`]).
pub fn coarse_compare(cols: usize) -> CoarseCompare {
    CoarseCompare::for_rows(COARSE_CMP_L, cols)
}

/// The reciprocal domain of `softmax = coarse` on rows of `cols`: [`recip_for_rows`] with the
/// lower end at `2^−1`, since the row sums lie in `[e^−slack, cols]` with slack ≤ 1/2.
pub fn coarse_recip(cols: usize, base: RecipParams) -> RecipParams {
    RecipParams { lo: base.lo.min(-1), ..recip_for_rows(cols, base) }
}

/// Ring width of [`softmax_narrow_with`]: the widest ring the 2-prime bOLEe key set serves
/// ([`crate::secure::NARROW_MAX_L`]), so that its products cost 2/3 of the full ring's.
pub const NARROW_L: u32 = crate::secure::NARROW_MAX_L;

/// The Newton reciprocal's domain narrowed to the row sums' range: `s ∈ [1, cols]`, so
/// `[2^lo, 2^hi)` with `hi = ⌊log2 cols⌋ + 1` (at most `base.hi`): the MSB normalisation then
/// compares against `hi − lo` thresholds instead of `base`'s (8 instead of 13 for rows of 128).
/// The factors and Newton steps are those of `base` for every `s` in the range (same output).
/// A function of the public row length (AGREEMENT). Rows of one key (a decoder's first
/// position) are served as rows of two (the sums' stated range is `[lo, max(cols, 2)]`).
pub fn recip_for_rows(cols: usize, base: RecipParams) -> RecipParams {
    let bits = (usize::BITS - cols.max(2).leading_zeros()) as i32;
    RecipParams { hi: bits.min(base.hi).max(base.lo + 1), ..base }
}

/// `softmax = narrow` (nectar, issue 17 item 2): the same composition with everything
/// element-wise in `Z_{2^45}` at the same `f` — the row-max tree and the exp clip compare
/// 45-bit instead of 64-bit values, the exp's squarings and the final product use the narrow
/// bOLEe key set (2 ciphertexts per query and response instead of 3) — and only the row sums
/// (one per row) extended back to the full ring for the reciprocal, whose result is reduced
/// again (the model passes the domain [`recip_for_rows`]). Entering is a local reduction (no
/// truncation: `f` is kept); leaving is one ring extension (App. E Alg. 5) of the probabilities.
///
/// Domain: `|x| < 2^(45 − 4 − f)` (2^23 at f = 18), the masked entries at
/// `−2^(45 − 4 − f)`; `exp` must run in `(45, f)` ([`crate::exp::exp_neg`],
/// [`crate::exp::exp_neg_taylor2`] and [`crate::exp::exp_neg_taylor4`] do, choosing their
/// scales for the ring). The format must be wider than 45 bits.
pub fn softmax_narrow_with<B, E, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
    exp: E,
    recip: R,
) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    E: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    softmax_in_ring(b, x, rows, cols, mask, SoftmaxForm::Narrow, false, exp, recip)
}

/// [`softmax_with`] ([`SoftmaxForm::Full`]), [`softmax_narrow_with`] (`Narrow`),
/// [`SoftmaxForm::Coarse`] or [`SoftmaxForm::Grid`]. The narrow forms extend the row sums to the
/// full ring for `recip` and reduce its result again, unless `narrow_recip` (the caller has
/// checked that `recip` serves the sums in the narrow format). The backend's format is restored
/// on every path.
#[allow(clippy::too_many_arguments)]
pub fn softmax_in_ring<B, E, R>(
    b: &mut B,
    x: &B::Val,
    rows: usize,
    cols: usize,
    mask: Option<&[bool]>,
    form: SoftmaxForm,
    narrow_recip: bool,
    exp: E,
    recip: R,
) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    E: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
    R: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    let n = b.len(x);
    if cols == 0 || rows.checked_mul(cols) != Some(n) {
        return Err(NnError::Length { op: "softmax shape", a: n, b: rows.saturating_mul(cols) });
    }
    if let Some(m) = mask {
        if m.len() != n {
            return Err(NnError::Length { op: "softmax mask", a: m.len(), b: n });
        }
    }
    let full = b.format();
    let narrow = match form {
        SoftmaxForm::Narrow | SoftmaxForm::Coarse | SoftmaxForm::Grid => Some(
            FixedPoint::new(NARROW_L, full.f()).map_err(|e| NnError::BadArgument(format!("narrow softmax format: {e}")))?,
        ),
        SoftmaxForm::Full => None,
    };
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        let x = match narrow {
            Some(nf) => mixed::enter(b, x, nf)?,
            None => x.clone(),
        };
        let x = match mask {
            None => x,
            Some(m) => {
                let keep: Vec<u64> = m.iter().map(|&z| (!z) as u64).collect();
                let neg = match form {
                    SoftmaxForm::Coarse | SoftmaxForm::Grid => enc(b, coarse_mask_value(full.f()))?,
                    _ => enc(b, mask_value(b.format()))?,
                };
                let add: Vec<u64> = m.iter().map(|&z| if z { neg } else { 0 }).collect();
                let kept = b.mul_const(&x, &keep, 0)?;
                b.add_const(&kept, &add)?
            }
        };
        // Masked entries' exponentials are 0 whatever the scores: only the visible ones run,
        // and the binary trees take each row's visible scores only (the grid max, whose group
        // sizes are planned per row length, takes whole rows at the mask value).
        let vis = match mask.and_then(|m| Visible::of(m, rows, cols)) {
            Some(v) => {
                let xv = b.gather(&x, &v.idx)?;
                Some((v, xv))
            }
            None => None,
        };
        let m = match (form, &vis) {
            (SoftmaxForm::Coarse, t) => {
                let cmp = coarse_compare(cols);
                let m = match t {
                    Some((v, xv)) => max_ragged_rows(b, xv, &v.lens, Some(cmp))?,
                    None => max_rows_coarse(b, &x, rows, cols, cmp)?,
                };
                let slack = enc(b, cmp.slack(cols))?;
                b.add_const(&m, &[slack])?
            }
            (SoftmaxForm::Grid, _) => {
                let g = grid_max(full.f())?;
                let m = max_rows_grid(b, &x, rows, cols, g)?;
                let slack = enc(b, g.slack())?;
                b.add_const(&m, &[slack])?
            }
            (_, Some((v, xv))) => max_ragged_rows(b, xv, &v.lens, None)?,
            (_, None) => max_rows(b, &x, rows, cols)?,
        };
        let (e, e_vis) = match &vis {
            Some((v, xv)) => {
                let mv = b.gather(&m, &v.idx.iter().map(|&i| i / cols).collect::<Vec<_>>())?;
                let dv = b.sub(xv, &mv)?;
                let ev = exp(b, &dv)?;
                (v.scatter(b, &ev)?, Some(ev))
            }
            None => {
                let mb = broadcast_rows(b, &m, rows, cols)?;
                let d = b.sub(&x, &mb)?;
                (exp(b, &d)?, None)
            }
        };
        let s = b.sum_groups(&e, cols)?;
        let r = match narrow {
            Some(_) if narrow_recip => recip(b, &s)?,
            Some(nf) => {
                let s = mixed::leave(b, &s, full)?;
                let r = recip(b, &s)?;
                mixed::enter(b, &r, nf)?
            }
            None => recip(b, &s)?,
        };
        let rb = broadcast_rows(b, &r, rows, cols)?;
        let y = match (&vis, &e_vis) {
            (Some((v, _)), Some(ev)) => {
                let rv = b.gather(&rb, &v.idx)?;
                let yv = b.mul(ev, &rv)?;
                v.scatter(b, &yv)?
            }
            _ => b.mul(&e, &rb)?,
        };
        match narrow {
            Some(_) => mixed::leave(b, &y, full),
            None => Ok(y),
        }
    };
    let y = run(b);
    b.set_format(full);
    y
}

/// The entries of a masked softmax whose exponential and product run (nectar, issue 49): the
/// unmasked ones, and every entry of a fully masked row (its uniform output comes from them).
/// A masked entry's score sits at the mask value, far below every exponential's clip or
/// table, so its exponential and probability are 0 (run, they came out 0 or within the
/// exp's tolerance of it; skipped, they are 0 exactly, without a message): a causal prompt of
/// `n` tokens runs `n(n + 1)/2` of its `n²` entries through the exp and the final product,
/// and its row maxima's binary trees compare those only ([`max_ragged_rows`]; the grid max
/// takes whole rows). Public (a function of the mask, AGREEMENT).
struct Visible {
    /// Visible positions in row-major order.
    idx: Vec<usize>,
    /// Per entry, its position in `idx`, or `idx.len()` (the appended zero) where masked.
    from: Vec<usize>,
    /// Visible entries per row (each at least 1).
    lens: Vec<usize>,
}

impl Visible {
    /// `None` when every entry is visible (nothing to skip).
    fn of(mask: &[bool], rows: usize, cols: usize) -> Option<Visible> {
        let (mut idx, mut lens) = (Vec::with_capacity(mask.len()), Vec::with_capacity(rows));
        for (r, row) in mask.chunks(cols).enumerate().take(rows) {
            let all = row.iter().all(|&z| z);
            let before = idx.len();
            idx.extend(row.iter().enumerate().filter(|(_, &z)| all || !z).map(|(c, _)| r * cols + c));
            lens.push(idx.len() - before);
        }
        if idx.len() == mask.len() {
            return None;
        }
        let mut from = vec![idx.len(); mask.len()];
        for (k, &i) in idx.iter().enumerate() {
            from[i] = k;
        }
        Some(Visible { idx, from, lens })
    }

    /// The full row-major vector from the visible entries' values, public zeros elsewhere
    /// (local).
    fn scatter<B: Backend + ?Sized>(&self, b: &mut B, v: &B::Val) -> Result<B::Val, NnError> {
        let zero = b.constant(&[0])?;
        let with_zero = b.concat(&[v, &zero])?;
        b.gather(&with_zero, &self.from)
    }
}

/// Reference softmax in f64 (masked entries get probability 0; a fully masked row is uniform).
pub fn softmax_f64(x: &[f64], cols: usize, mask: Option<&[bool]>) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for (r, row) in x.chunks(cols).enumerate() {
        let masked = |i: usize| mask.map(|m| m[r * cols + i]).unwrap_or(false);
        let all = (0..row.len()).all(masked);
        let mx = row
            .iter()
            .enumerate()
            .filter(|(i, _)| all || !masked(*i))
            .map(|(_, &v)| v)
            .fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row
            .iter()
            .enumerate()
            .map(|(i, &v)| if all { 1.0 } else if masked(i) { 0.0 } else { (v - mx).exp() })
            .collect();
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / s));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counting::CountingBackend;
    use crate::plain::PlainBackend;

    #[test]
    fn visible_entries_are_the_unmasked_ones_and_fully_masked_rows() {
        // Row 0 causal (keys 0..=0), row 1 open, row 2 fully masked (all its entries run).
        let mask = [false, true, true, false, false, false, true, true, true];
        let v = Visible::of(&mask, 3, 3).unwrap();
        assert_eq!(v.idx, vec![0, 3, 4, 5, 6, 7, 8]);
        assert_eq!(v.from, vec![0, 7, 7, 1, 2, 3, 4, 5, 6]);
        assert!(Visible::of(&[false; 6], 2, 3).is_none());
        assert!(Visible::of(&[true; 6], 2, 3).is_none());
    }

    /// A causal mask runs the max trees, the exponential's squares and the final product on the
    /// visible triangle only, and the masked probabilities are 0 exactly.
    #[test]
    fn a_causal_softmax_runs_the_visible_triangle() {
        let (rows, cols) = (8usize, 8usize);
        let xs: Vec<f64> = (0..rows * cols).map(|i| ((i * 37) % 13) as f64 * 0.5 - 3.0).collect();
        let causal: Vec<bool> = (0..rows * cols).map(|i| i % cols > i / cols).collect();
        let fp = FixedPoint::BUMBLEBEE;
        let run = |mask: Option<&[bool]>| {
            let mut b = CountingBackend::new(PlainBackend::new(fp).unwrap());
            let x = b.inner.encode(&xs).unwrap();
            let y = softmax(&mut b, &x, rows, cols, mask, &SOFTMAX_BUMBLEBEE).unwrap();
            (fp.decode_vec::<u64>(&y), b.count("square").elements, b.count("mul").elements, b.count("msb").elements)
        };
        let (y, sq, mul, msb) = run(Some(&causal));
        let (_, sq_open, mul_open, msb_open) = run(None);
        // The max trees: a row of k visible scores takes k − 1 comparisons (the reciprocal's
        // normalisation compares the same row sums in both runs).
        assert_eq!(msb_open - msb, (rows * (cols - 1) - (0..rows).sum::<usize>()) as u64, "max trees: {msb} vs {msb_open}");
        let hidden = (rows * cols - rows * (rows + 1) / 2) as u64;
        // The reciprocal's products (one per row) are the same in both runs.
        assert_eq!(mul_open - mul, hidden, "final product: {mul} vs {mul_open}");
        assert_eq!(sq_open - sq, SOFTMAX_BUMBLEBEE.exp.n as u64 * hidden, "exp squares: {sq} vs {sq_open}");
        for (i, (&g, w)) in y.iter().zip(softmax_f64(&xs, cols, Some(&causal))).enumerate() {
            if causal[i] {
                assert_eq!(g, 0.0, "entry {i}");
            } else {
                assert!((g - w).abs() < 1e-2, "entry {i}: {g} vs {w}");
            }
        }
    }
}
