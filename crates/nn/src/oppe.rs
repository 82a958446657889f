//! East's oblivious piecewise polynomial evaluation, OPPE (East §4.1, Alg. 1; REFERENCE.md
//! §3.7): segment selection by comparisons and MUX on arithmetic shares, **no B2A**.
//!
//! A table has `m` pieces with breakpoints `w_0 < … < w_{m−1}`; piece `i` is the polynomial
//! `P_i(x) = Σ_j c_{i,j} x^j` (degree `d`) on `[w_i, w_{i+1})`, the last on `[w_{m−1}, ∞)`, and
//! the result is 0 left of `w_0` (plus the table's public `offset`: tanh is evaluated as
//! `tanh + 1`, which is 0 on the left, and shifted back). Steps, on whole vectors:
//! 1. `comp_i = 1{x ≥ w_i}` for all `i`: ONE batched [`Backend::less_than_const`] call;
//! 2. the powers `x^2 … x^d` by the doubling ladder (`⌊log2 d⌋ + 1` rounds; square + mul for
//!    `d = 3`);
//! 3. `z_0 = P_0`, `z_i = P_i − P_{i−1}`, local: since the coefficients are public, `z_i` is one
//!    linear combination of the powers with the coefficient *differences*;
//! 4. `v_i = MUX(comp_i, z_i)` in ONE batched mux call on `m·n` elements;
//! 5. `y = Σ_i v_i` (local): the comparisons are monotone, so the telescoping sum is the
//!    polynomial of the piece `x` lies in.
//!
//! Deviation from Alg. 1 (documented, same result): the `z_i` are formed *before* truncation,
//! at scale `2f + s` (coefficients carry `f + s` bits, [`crate::poly::extra_bits`]), and the
//! selected sum is truncated once — one truncation of `n` elements instead of `m·n`. The
//! telescoping is exact in the ring, so powers that overflow the truncation's bound for large
//! `|x|` (outside every polynomial piece that uses them) cancel exactly and do not matter.
//! Pieces are half-open `[w_i, w_{i+1})` (the paper writes `(w_i, w_{i+1}]`); with BumbleBee's
//! approximate comparison ([`LessMode::Approx`]) an input within `2^−precision` of a breakpoint
//! may take the neighbouring piece, whose polynomial agrees there within the fit error.
//!
//! Cost on `n` elements (d = 3): less_than `n × m`, square `n`, mul `n`, mux `m·n`, trunc `n`.
//! Input domain: `|x|^d · 2^(2f) < 2^(l−2)` on the table's `domain` (checked), `|x| <
//! 2^(l−2−f)` everywhere (the comparisons must not wrap), and a selected value below
//! [`VALUE_LOG2`] (an identity tail is exact for `|x| < 4096` at l = 64, f = 18).
//! Tables are fitted by [`crate::fit`] and committed as data with their error figures
//! (`crates/nn/data/east/*.json`, [`east_table`]).

use crate::backend::{enc, enc_scaled, Backend};
use crate::poly::{check_headroom, extra_bits, LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use serde::{Deserialize, Serialize};

/// The selected value `y` is truncated at scale `2f + s` with `s` chosen for `|y| < 2^13`:
/// coefficients keep `f + 13` bits at l = 64, f = 18 (rounding error ≤ `|x|^3 · 2^−32`), and
/// an identity tail (GELU, SiLU) is exact for `|x| < 4096`.
pub const VALUE_LOG2: u32 = 13;

/// An OPPE table (AGREEMENT: both parties evaluate the same table).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OppeTable {
    /// The function approximated (`gelu`, `gelu_tanh`, `exp`, `tanh`, `silu`).
    pub func: String,
    /// Breakpoints `w_0 < … < w_{m−1}`.
    pub breaks: Vec<f64>,
    /// Coefficients `c_{i,0..=d}` of each piece, lowest degree first.
    pub coeffs: Vec<Vec<f64>>,
    /// Added to the result (tanh: −1; 0 otherwise).
    pub offset: f64,
    /// The input range the error figures are stated on; powers must fit the ring there.
    pub domain: [f64; 2],
    /// Comparison precision in fractional bits for BumbleBee's approximate less-than; `None`:
    /// exact comparisons.
    pub less_precision: Option<u32>,
    /// How the table was produced and its measured error (recomputed by the tests).
    pub fit: FitRecord,
}

/// The provenance and error figures of a fitted table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitRecord {
    /// The fitter's arguments (`nectar fit` command line).
    pub command: String,
    /// The fitted interval `[lo, hi]` (see [`crate::fit`]).
    pub fitted: [f64; 2],
    /// Max / mean absolute error of the piecewise polynomial in f64 on `domain`.
    pub float_max_abs: f64,
    pub float_mean_abs: f64,
    /// Max / mean absolute error of the fixed-point twin (format below) on `domain`.
    pub twin_max_abs: f64,
    pub twin_mean_abs: f64,
    /// The twin's format `(l, f)`.
    pub format: [u32; 2],
    /// Number of evenly spaced points of `domain` the errors are measured on.
    pub samples: usize,
}

impl OppeTable {
    /// Number of pieces `m`.
    pub fn pieces(&self) -> usize {
        self.breaks.len()
    }
    /// Polynomial degree `d`.
    pub fn degree(&self) -> usize {
        self.coeffs.first().map_or(0, |c| c.len().saturating_sub(1))
    }
    /// The comparison mode of the table.
    pub fn less(&self) -> LessMode {
        match self.less_precision {
            Some(precision) => LessMode::Approx { precision },
            None => LessMode::Exact,
        }
    }
    /// Structural checks: `m ≥ 1`, increasing breakpoints, one coefficient vector of length
    /// `d + 1` (1 ≤ d ≤ 8) per piece, a finite domain.
    pub fn validate(&self) -> Result<(), NnError> {
        let m = self.breaks.len();
        let bad = |why: String| Err(NnError::BadArgument(format!("OPPE table {}: {why}", self.func)));
        if m == 0 || m > 64 {
            return bad(format!("{m} pieces (1..=64 allowed)"));
        }
        if self.coeffs.len() != m {
            return bad(format!("{} coefficient vectors for {m} pieces", self.coeffs.len()));
        }
        let d = self.degree();
        if !(1..=8).contains(&d) || self.coeffs.iter().any(|c| c.len() != d + 1) {
            return bad(format!("degrees must all equal d in 1..=8 (got d = {d})"));
        }
        if self.breaks.windows(2).any(|w| w[0] >= w[1]) || self.breaks.iter().any(|w| !w.is_finite()) {
            return bad("breakpoints must be finite and strictly increasing".into());
        }
        if self.coeffs.iter().flatten().any(|c| !c.is_finite()) || !self.offset.is_finite() {
            return bad("coefficients must be finite".into());
        }
        if !(self.domain[0] < self.domain[1]) || !self.domain.iter().all(|v| v.is_finite()) {
            return bad(format!("domain {:?} is not an interval", self.domain));
        }
        Ok(())
    }

    /// The table in f64 (the reference of the twin).
    pub fn eval_f64(&self, x: f64) -> f64 {
        let Some(i) = self.breaks.iter().rposition(|&w| x >= w) else {
            return self.offset;
        };
        let c = &self.coeffs[i];
        c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck) + self.offset
    }

    /// `log2` of the largest power `|x|^d` on the domain (headroom before truncation).
    pub(crate) fn power_log2(&self) -> u32 {
        power_log2(self.domain, self.degree())
    }

    /// `log2` bound of the selected value before the final truncation: the domain's, but at
    /// least [`VALUE_LOG2`] so that an identity tail stays exact far beyond the domain.
    fn value_log2(&self) -> u32 {
        let r = self.domain[0].abs().max(self.domain[1].abs()).max(2.0);
        (r.log2().ceil() as u32 + 1).max(VALUE_LOG2)
    }
}

/// `log2` of the largest power `|x|^d` for `x` in `domain` (at least `|x| = 1`).
pub(crate) fn power_log2(domain: [f64; 2], d: usize) -> u32 {
    let r = domain[0].abs().max(domain[1].abs()).max(1.0);
    (d as f64 * r.log2()).ceil() as u32
}

/// The powers `x^1 … x^d` by East's doubling ladder: with `j = 1, 2, 4, …`, multiply
/// `(x^1 … x^t)` by `x^j` (`t = min(j, d − j)`) in one batched call (a square when `t = 1`
/// and the factor is `x^1` itself).
fn powers<B: Backend + ?Sized>(b: &mut B, x: &B::Val, d: usize) -> Result<Vec<B::Val>, NnError> {
    let n = b.len(x);
    let mut p = vec![x.clone()];
    let mut j = 1;
    while j < d {
        let t = j.min(d - j);
        let new: Vec<B::Val> = if t == 1 && j == 1 {
            vec![b.square(x)?]
        } else {
            let lhs: Vec<&B::Val> = p[..t].iter().collect();
            let lhs = b.concat(&lhs)?;
            let xj = &p[j - 1];
            let rhs = b.concat(&vec![xj; t])?;
            let prod = b.mul(&lhs, &rhs)?;
            (0..t)
                .map(|k| b.gather(&prod, &(k * n..(k + 1) * n).collect::<Vec<_>>()))
                .collect::<Result<_, _>>()?
        };
        p.extend(new);
        j *= 2;
    }
    p.truncate(d);
    Ok(p)
}

/// OPPE of `x` with table `t` in the backend's current format (module docs for the steps).
pub fn oppe<B: Backend + ?Sized>(b: &mut B, x: &B::Val, t: &OppeTable) -> Result<B::Val, NnError> {
    t.validate()?;
    let fp = b.format();
    check_headroom("oppe", fp, t.power_log2())?;
    let (n, m, d) = (b.len(x), t.pieces(), t.degree());
    // Step 1: c_i = 1{x < w_i}; comp_i = ¬c_i.
    let th = t.breaks.iter().map(|&w| enc(b, w)).collect::<Result<Vec<_>, _>>()?;
    let below = b.less_than_const(x, &th, t.less().ignore_bits(fp))?;
    if below.len() != m {
        return Err(NnError::BadArgument(format!("{} comparison vectors for {m} pieces", below.len())));
    }
    let refs: Vec<&B::Bit> = below.iter().collect();
    let below = b.concat_bits(&refs)?;
    let comp = b.not(&below)?;
    // Step 2: powers.
    let p = powers(b, x, d)?;
    // Step 3: z_i = Σ_j (c_{i,j} − c_{i−1,j}) x^j at scale 2f + s, for all pieces at once. The
    // coefficients are encoded first and differenced in the ring, so the selected sum is
    // exactly the encoded polynomial of its piece (powers of other pieces cancel exactly).
    let s = extra_bits(fp, t.value_log2());
    let (f, sh) = (fp.f(), fp.f() + s);
    let mask = crate::backend::ring_of(fp).mask();
    let diffs = |b: &B, j: usize, scale: u32| -> Result<Vec<u64>, NnError> {
        let enc_c = (0..m)
            .map(|i| enc_scaled(b, t.coeffs[i][j], scale))
            .collect::<Result<Vec<_>, _>>()?;
        let d: Vec<u64> = (0..m)
            .map(|i| enc_c[i].wrapping_sub(if i == 0 { 0 } else { enc_c[i - 1] }) & mask)
            .collect();
        Ok((0..m * n).map(|q| d[q / n]).collect())
    };
    let mut z: Option<B::Val> = None;
    for (j, pj) in p.iter().enumerate() {
        let rep = b.concat(&vec![pj; m])?;
        let per = diffs(b, j + 1, sh)?;
        let term = b.mul_const(&rep, &per, 0)?;
        z = Some(match z {
            None => term,
            Some(acc) => b.add(&acc, &term)?,
        });
    }
    let per = diffs(b, 0, 2 * f + s)?;
    let z = match z {
        Some(acc) => b.add_const(&acc, &per)?,
        None => return Err(NnError::BadArgument("OPPE needs degree >= 1".into())),
    };
    // Steps 4–5: one mux over all pieces, local sum, one truncation, offset.
    let v = b.mux(&comp, &z)?;
    let mut y = b.gather(&v, &(0..n).collect::<Vec<_>>())?;
    for i in 1..m {
        let part = b.gather(&v, &(i * n..(i + 1) * n).collect::<Vec<_>>())?;
        y = b.add(&y, &part)?;
    }
    let y = b.trunc(&y, sh)?;
    if t.offset != 0.0 {
        let o = enc(b, t.offset)?;
        b.add_const(&y, &[o])
    } else {
        Ok(y)
    }
}

/// The activation format of OPPE under mixed bit-width: `l' = 32, f' = 10` (the cube of a
/// domain bound up to 8 at scale `2f'` fits `l' − 2` bits; f' = 12 would not). AGREEMENT.
pub const OPPE_ACT: (u32, u32) = (32, 10);

/// The committed tables of `funcs` as AGREEMENT data (what the digest hashes for a protocol
/// that evaluates them): each table's breakpoints, coefficients, offset and comparison mode.
pub fn tables_params(funcs: &[&str]) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for f in funcs {
        let v = match east_table(f) {
            Ok(t) => serde_json::json!({
                "breaks": t.breaks, "coeffs": t.coeffs, "offset": t.offset, "less": t.less_precision,
            }),
            Err(e) => serde_json::json!({ "error": e.to_string() }),
        };
        m.insert(f.to_string(), v);
    }
    m.insert("mixed_format".into(), serde_json::json!(OPPE_ACT));
    serde_json::Value::Object(m)
}

/// OPPE under mixed bit-width: enter [`OPPE_ACT`], evaluate, extend back (BumbleBee §V-C).
pub fn oppe_mixed<B: Backend + ?Sized>(b: &mut B, x: &B::Val, t: &OppeTable) -> Result<B::Val, NnError> {
    let act = nectar_math::FixedPoint::new(OPPE_ACT.0, OPPE_ACT.1)?;
    crate::mixed::with_format(b, x, act, |b, y| oppe(b, y, t))
}

/// The committed East tables (fitted by `nectar fit`, see `crates/nn/data/east/README.md`).
pub const EAST_TABLES: [&str; 5] = ["gelu", "gelu_tanh", "exp", "tanh", "silu"];

/// The committed East table of `func` (`gelu`, `gelu_tanh`, `exp`, `tanh`, `silu`), parsed and
/// validated.
pub fn east_table(func: &str) -> Result<&'static OppeTable, NnError> {
    use std::sync::OnceLock;
    static TABLES: OnceLock<Result<Vec<OppeTable>, String>> = OnceLock::new();
    let all = TABLES.get_or_init(|| {
        [
            include_str!("../data/east/gelu.json"),
            include_str!("../data/east/gelu_tanh.json"),
            include_str!("../data/east/exp.json"),
            include_str!("../data/east/tanh.json"),
            include_str!("../data/east/silu.json"),
        ]
        .iter()
        .map(|s| {
            let t: OppeTable = serde_json::from_str(s).map_err(|e| e.to_string())?;
            t.validate().map_err(|e| e.to_string())?;
            Ok(t)
        })
        .collect()
    });
    match all {
        Err(e) => Err(NnError::BadArgument(format!("committed OPPE tables: {e}"))),
        Ok(v) => v
            .iter()
            .find(|t| t.func == func)
            .ok_or_else(|| NnError::BadArgument(format!("no committed OPPE table for '{func}'"))),
    }
}

/// The default comparison precision of the committed tables (BumbleBee's approximate
/// less-than, [`BUMBLEBEE_LESS`]).
pub fn default_less_precision() -> Option<u32> {
    match BUMBLEBEE_LESS {
        LessMode::Approx { precision } => Some(precision),
        LessMode::Exact => None,
    }
}
