//! Approximation-accuracy measurement: an operator run on the plaintext twin vs an `f64`
//! reference over a grid of inputs. Used by the tests (with bounds) and by
//! [`approximation_table`] (the numbers of `docs/notes/nonlinear-notes.md`; callable from the
//! `nectar bench` CLI).

use crate::backend::Backend;
use crate::plain::PlainBackend;
use crate::NnError;
use nectar_math::FixedPoint;

/// Error statistics of one operator over one input range.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrStats {
    pub op: String,
    /// Input range `[lo, hi]` (elementwise ops) or a description.
    pub range: String,
    pub samples: usize,
    pub max_abs: f64,
    /// An input where `max_abs` is attained.
    pub argmax: f64,
    pub mean_abs: f64,
    /// Mean error in units of the output format's LSB (2^−f).
    pub mean_ulp: f64,
    /// The paper's / reference figure for comparison (text).
    pub paper: String,
}

/// (Defined with the fitter, [`crate::fit`].)
pub use crate::fit::grid;

/// Run `op` on the twin in format `fp` on `xs` and compare elementwise with `reference`.
pub fn measure_elementwise<F, R>(
    op: &str,
    fp: FixedPoint,
    xs: &[f64],
    run: F,
    reference: R,
    paper: &str,
) -> Result<ErrStats, NnError>
where
    F: Fn(&mut PlainBackend, &Vec<u64>) -> Result<Vec<u64>, NnError>,
    R: Fn(f64) -> f64,
{
    let mut b = PlainBackend::new(fp)?;
    let x = b.encode(xs)?;
    let y = run(&mut b, &x)?;
    let got = b.decode(&b.clone().reveal(&y)?);
    let want: Vec<f64> = b.decode(&x).into_iter().map(reference).collect();
    Ok(stats(op, &format!("[{}, {}]", xs[0], xs[xs.len() - 1]), xs, &got, &want, b.format(), paper))
}

/// Statistics of `got` vs `want` (inputs `xs` for the argmax report).
pub fn stats(op: &str, range: &str, xs: &[f64], got: &[f64], want: &[f64], fp: FixedPoint, paper: &str) -> ErrStats {
    let mut max_abs = 0.0f64;
    let mut argmax = f64::NAN;
    let mut sum = 0.0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = (g - w).abs();
        sum += e;
        if e > max_abs || argmax.is_nan() {
            max_abs = e;
            argmax = xs.get(i).copied().unwrap_or(f64::NAN);
        }
    }
    let mean_abs = sum / got.len().max(1) as f64;
    ErrStats {
        op: op.to_string(),
        range: range.to_string(),
        samples: got.len(),
        max_abs,
        argmax,
        mean_abs,
        mean_ulp: mean_abs * fp.scale(),
        paper: paper.to_string(),
    }
}

/// Softmax composition `p` with `exp` and `recip` (`crate::softmax::compositions`) on
/// random-ish rows (deterministic), vs f64: the row `softmax <p>+<exp>+<recip>`.
pub fn measure_softmax(
    fp: FixedPoint,
    rows: usize,
    cols: usize,
    spread: f64,
    (p, exp, recip): (crate::softmax::Softmax, crate::exp::Exp, crate::reciprocal::Reciprocal),
) -> Result<ErrStats, NnError> {
    let xs: Vec<f64> = (0..rows * cols).map(|i| spread * (((i * 7919 + 13) % 1000) as f64 / 500.0 - 1.0)).collect();
    let mut b = PlainBackend::new(fp)?;
    let x = b.encode(&xs)?;
    let y = p.eval(&mut b, &x, &crate::softmax::SoftmaxCall { rows, cols, mask: None }, exp, recip)?;
    let got = b.decode(&y);
    let want = crate::softmax::softmax_f64(&b.decode(&x), cols, None);
    let name = match p.composes() {
        true => format!("softmax {p}+exp={exp}+reciprocal={recip}"),
        false => format!("softmax {p}"),
    };
    Ok(stats(&name, &format!("{rows}×{cols}, x ∈ [−{spread}, {spread}]"), &xs, &got, &want, fp, "exp avg err ≤ 2^−10 (§V-B)"))
}

/// LayerNorm by formulation `p` with `rsqrt` (`crate::norm::compositions`) on deterministic
/// rows with γ = 1, β = 0, vs f64: the row `layernorm <p>+<rsqrt>`.
pub fn measure_layernorm(
    fp: FixedPoint,
    rows: usize,
    cols: usize,
    spread: f64,
    (p, rsqrt): (crate::norm::Norm, crate::rsqrt::Rsqrt),
) -> Result<ErrStats, NnError> {
    let xs: Vec<f64> = (0..rows * cols)
        .map(|i| spread * (((i * 7919 + 13) % 1000) as f64 / 500.0 - 1.0) * (1.0 + (i / cols) as f64) / rows as f64)
        .collect();
    let mut b = PlainBackend::new(fp)?;
    let x = b.encode(&xs)?;
    let g_raw = fp.encode_vec::<u64>(&vec![1.0; cols])?;
    let g = b.constant(&g_raw)?;
    let be = b.encode(&vec![0.0; cols])?;
    let eps = crate::layernorm::LAYERNORM_DEFAULT.eps;
    let call = crate::norm::NormCall { rows, cols, eps, gamma: &g, gamma_server: Some(&g_raw), beta: Some(&be), stats_shift: 0 };
    let y = p.eval(&mut b, &x, &call, rsqrt)?;
    let got = b.decode(&y);
    let want = crate::layernorm::layernorm_f64(&b.decode(&x), cols, &vec![1.0; cols], &vec![0.0; cols], eps);
    Ok(stats(&format!("layernorm {p}+rsqrt={rsqrt}"), &format!("{rows}×{cols}, |x| ≤ {spread}"), &xs, &got, &want, fp, "—"))
}

/// The "Approximation accuracy" table of `docs/notes/nonlinear-notes.md` (twin vs f64, (64, 18)
/// unless the row says mixed).
pub fn approximation_table() -> Result<Vec<ErrStats>, NnError> {
    use crate::{elu, exp, rsqrt};
    let fp = FixedPoint::BUMBLEBEE;
    let mut out = Vec::new();
    // Every registered GeLU protocol, both forms, every ring it runs in (`gelu::ALL`).
    out.extend(gelu_rows()?);
    // Every registered SiLU protocol in every ring it runs in (`silu::ALL`).
    out.extend(silu_rows()?);
    let g = grid(-14.0, 0.0, 14001);
    // Every registered exponential (`exp::ALL`).
    out.extend(exp_rows()?);
    out.push(measure_elementwise("exp mixed (32,12)", fp, &g, |b, x| exp::exp_neg_mixed(b, x, &exp::EXP_BUMBLEBEE), f64::exp, "—")?);
    let g = grid(-14.0, 4.0, 18001);
    out.push(measure_elementwise("ELU α=1 (64,18)", fp, &g, |b, x| elu::elu(b, x, 1.0, &exp::EXP_BUMBLEBEE), |x| crate::elu::elu_f64(x, 1.0), "—")?);
    // Every registered reciprocal (`reciprocal::ALL`).
    out.extend(crate::reciprocal::Reciprocal::all().map(reciprocal_row).collect::<Result<Vec<_>, _>>()?);
    // BumbleBee's rsqrt on the whole LayerNorm domain, then every registered rsqrt
    // (`rsqrt::ALL`) on `rsqrt::RANGE`.
    let g: Vec<f64> = (0..16001).map(|i| (-18.0 + 36.0 * i as f64 / 16000.0).exp2() * 0.999).collect();
    out.push(measure_elementwise("rsqrt newton [4^−9, 4^9) (64,18)", fp, &g, |b, x| rsqrt::rsqrt(b, x, &rsqrt::RSQRT_LAYERNORM, &rsqrt::BY_FOUR), |x| 1.0 / x.sqrt(), "—")?);
    out.extend(crate::rsqrt::Rsqrt::all().map(rsqrt_row).collect::<Result<Vec<_>, _>>()?);
    // Every softmax and LayerNorm composition (`softmax::compositions`, `norm::compositions`).
    for c in crate::softmax::compositions() {
        out.push(measure_softmax(fp, 64, 128, 8.0, c)?);
    }
    for c in crate::norm::compositions() {
        out.push(measure_layernorm(fp, 16, 768, 8.0, c)?);
    }
    Ok(out)
}

/// One row per registered GeLU protocol, form and supported ring ([`gelu_row`]).
pub fn gelu_rows() -> Result<Vec<ErrStats>, NnError> {
    use crate::gelu::{Gelu, GeluForm};
    use crate::mixed::ActRing;
    let mut out = Vec::new();
    for p in Gelu::all() {
        for ring in [ActRing::Full, ActRing::Mixed] {
            if p.supports(ring).is_ok() {
                for form in GeluForm::ALL {
                    out.push(gelu_row(p, form, ring)?);
                }
            }
        }
    }
    Ok(out)
}

/// The twin of GeLU protocol `p` in `ring` on [`crate::gelu::DOMAIN`] against the exact GeLU
/// of `form` (`nectar_math::real::gelu`): the row `GeLU <protocol> <form> <ring>`, its paper
/// column the protocol's stated figure.
pub fn gelu_row(p: crate::gelu::Gelu, form: crate::gelu::GeluForm, ring: crate::mixed::ActRing) -> Result<ErrStats, NnError> {
    use crate::gelu::{GeluForm, DOMAIN};
    let g = grid(DOMAIN.0, DOMAIN.1, 16001);
    let form_name = match form {
        GeluForm::Erf => "erf",
        GeluForm::Tanh => "tanh",
    };
    let ring_name = ring.pick("(64,18)", "mixed");
    let name = format!("GeLU {} {form_name} {ring_name}", p.name());
    let run = |b: &mut PlainBackend, x: &Vec<u64>| p.eval(b, x, form, ring);
    measure_elementwise(&name, FixedPoint::BUMBLEBEE, &g, run, |x| nectar_math::real::gelu(x, form), p.stated_accuracy())
}

/// One row per registered SiLU protocol and supported ring ([`silu_row`]).
pub fn silu_rows() -> Result<Vec<ErrStats>, NnError> {
    use crate::mixed::ActRing;
    let mut out = Vec::new();
    for p in crate::silu::Silu::all() {
        for ring in [ActRing::Full, ActRing::Mixed] {
            if p.supports(ring).is_ok() {
                out.push(silu_row(p, ring)?);
            }
        }
    }
    Ok(out)
}

/// The twin of SiLU protocol `p` in `ring` on [`crate::silu::DOMAIN`] against the exact SiLU:
/// the row `SiLU <protocol> <ring>`.
pub fn silu_row(p: crate::silu::Silu, ring: crate::mixed::ActRing) -> Result<ErrStats, NnError> {
    let (lo, hi) = crate::silu::DOMAIN;
    let g = grid(lo, hi, 16001);
    let name = format!("SiLU {} {}", p.name(), ring.pick("(64,18)", "mixed"));
    let run = |b: &mut PlainBackend, x: &Vec<u64>| p.eval(b, x, ring);
    measure_elementwise(&name, FixedPoint::BUMBLEBEE, &g, run, nectar_math::real::silu, p.stated_accuracy())
}

/// One row per registered exponential ([`exp_row`]).
pub fn exp_rows() -> Result<Vec<ErrStats>, NnError> {
    crate::exp::Exp::all().map(exp_row).collect()
}

/// The twin of exponential `p` on [`crate::exp::DOMAIN`] in (64, 18) against `e^x`: the row
/// `exp <protocol>`.
pub fn exp_row(p: crate::exp::Exp) -> Result<ErrStats, NnError> {
    let (lo, hi) = crate::exp::DOMAIN;
    let g = grid(lo, hi, 16001);
    let run = |b: &mut PlainBackend, x: &Vec<u64>| p.eval(b, x, None);
    measure_elementwise(&format!("exp {} (64,18)", p.name()), FixedPoint::BUMBLEBEE, &g, run, f64::exp, p.stated_accuracy())
}

/// The twin of reciprocal `p` on [`crate::reciprocal::RANGE`] in (64, 18) against `1/x`: the
/// row `reciprocal <protocol>`.
pub fn reciprocal_row(p: crate::reciprocal::Reciprocal) -> Result<ErrStats, NnError> {
    let r = crate::reciprocal::RANGE;
    let g = grid(r.lo, r.hi - 1.0, 16001);
    let run = |b: &mut PlainBackend, x: &Vec<u64>| p.eval(b, x, &r);
    measure_elementwise(&format!("reciprocal {} (64,18)", p.name()), FixedPoint::BUMBLEBEE, &g, run, |x| 1.0 / x, "—")
}

/// The twin of rsqrt `p` on [`crate::rsqrt::RANGE`] in (64, 18) against `1/√x`: the row
/// `rsqrt <protocol>`.
pub fn rsqrt_row(p: crate::rsqrt::Rsqrt) -> Result<ErrStats, NnError> {
    let r = crate::rsqrt::RANGE;
    let g = grid(r.lo, r.hi, 16001);
    let run = |b: &mut PlainBackend, x: &Vec<u64>| p.eval(b, x, &r);
    measure_elementwise(&format!("rsqrt {} (64,18)", p.name()), FixedPoint::BUMBLEBEE, &g, run, |x| 1.0 / x.sqrt(), "—")
}

/// The table as Markdown.
pub fn markdown(rows: &[ErrStats]) -> String {
    let mut s = String::from("| operator | input range | samples | max abs err (at x) | mean abs err | mean ULP (2^−18) | paper |\n|---|---|---|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {:.2e} (x = {:.4}) | {:.2e} | {:.1} | {} |\n",
            r.op, r.range, r.samples, r.max_abs, r.argmax, r.mean_abs, r.mean_ulp, r.paper
        ));
    }
    s
}
