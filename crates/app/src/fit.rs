//! `nectar fit`: fit an OPPE table (East §4.1) with [`nectar_nn::fit`] and print or write it.

use nectar_math::FixedPoint;
use nectar_nn::fit::{fit, FitSpec, Func};
use nectar_nn::oppe::default_less_precision;
use std::path::Path;

pub struct Args<'a> {
    pub func: &'a str,
    pub lo: f64,
    pub hi: f64,
    pub m: usize,
    pub d: usize,
    pub domain: Option<&'a str>,
    pub exact_compare: bool,
    pub samples: usize,
}

fn parse_domain(s: &str) -> Result<[f64; 2], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    match parts.as_slice() {
        [a, b] => Ok([
            a.parse().map_err(|_| format!("--domain: '{a}' is not a number"))?,
            b.parse().map_err(|_| format!("--domain: '{b}' is not a number"))?,
        ]),
        _ => Err(format!("--domain takes LO,HI (got '{s}')")),
    }
}

pub fn run(a: &Args, out: Option<&Path>, json: bool) -> Result<(), String> {
    let func = Func::parse(a.func).map_err(|e| e.to_string())?;
    let domain = match a.domain {
        Some(s) => parse_domain(s)?,
        None => [a.lo, a.hi],
    };
    let spec = FitSpec {
        func,
        lo: a.lo,
        hi: a.hi,
        m: a.m,
        d: a.d,
        domain,
        less_precision: if a.exact_compare { None } else { default_less_precision() },
        format: FixedPoint::BUMBLEBEE,
        samples: a.samples,
    };
    let table = fit(&spec).map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&table).map_err(|e| e.to_string())?;
    if let Some(path) = out {
        std::fs::write(path, format!("{text}\n")).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&table).map_err(|e| e.to_string())?);
    } else {
        outln!("OPPE {} on [{}, {}], m = {}, d = {}", table.func, a.lo, a.hi, table.pieces(), table.degree());
        for (w, c) in table.breaks.iter().zip(&table.coeffs) {
            let cs: Vec<String> = c.iter().map(|v| format!("{v:+.6e}")).collect();
            outln!("  x >= {w:<10.6} : [{}]", cs.join(", "));
        }
        let r = &table.fit;
        outln!(
            "error on [{}, {}] ({} points): f64 max {:.3e} mean {:.3e}; twin (l={}, f={}) max {:.3e} mean {:.3e}",
            domain[0], domain[1], r.samples, r.float_max_abs, r.float_mean_abs, r.format[0], r.format[1],
            r.twin_max_abs, r.twin_mean_abs
        );
    }
    Ok(())
}

/// `nectar fit --model`: Nimbus's distribution-aware fit (§4).
pub struct DistArgs<'a> {
    pub func: &'a str,
    pub model: &'a Path,
    pub texts: Option<&'a Path>,
    pub range: f64,
    pub clip: f64,
    pub squarings: u32,
    pub floor: f64,
    pub domain: Option<&'a str>,
    pub exact_compare: bool,
}

/// What `nectar fit --model` prints with `--json` and writes with `--out`.
#[derive(serde::Serialize)]
struct DistRecord {
    func: &'static str,
    form: &'static str,
    model: String,
    texts: usize,
    /// The fitted table: an `AbsChain` (gelu, gelu_tanh, silu) or an `ExpChain` (exp).
    table: serde_json::Value,
    floor: f64,
    error: nectar_nn::fit_dist::DistError,
}

pub fn run_dist(a: &DistArgs, out: Option<&Path>, json: bool) -> Result<(), String> {
    use nectar_nn::fit_dist::{dist_error, fit_abs_chain, fit_exp_chain};
    let func = Func::parse(a.func).map_err(|e| e.to_string())?;
    let less = if a.exact_compare {
        nectar_nn::poly::LessMode::Exact
    } else {
        nectar_nn::poly::BUMBLEBEE_LESS
    };
    let texts: Vec<String> = match a.texts {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| format!("{}: {e}", p.display()))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect(),
        None => nectar_model::calibrate::CALIBRATION_TEXTS.iter().map(|t| t.to_string()).collect(),
    };
    if texts.is_empty() {
        return Err("nectar fit: no texts".into());
    }
    let model = nectar_model::Model::load(a.model).map_err(|e| e.to_string())?;
    let seen = nectar_model::calibrate::activation_samples(&model, &texts).map_err(|e| e.to_string())?;
    let keys: &[&str] = match func {
        Func::Gelu | Func::GeluTanh => &["gelu", "gelu_tanh"],
        Func::Silu => &["silu"],
        Func::Exp => &["softmax"],
        Func::Tanh => return Err("nectar fit --model: tanh has no distribution fit (gelu, gelu_tanh, silu, exp)".into()),
    };
    let samples = keys
        .iter()
        .find_map(|k| seen.get(*k))
        .ok_or_else(|| format!("{}: the model feeds no {} inputs (it has: {})", a.model.display(), func.name(), seen.keys().cloned().collect::<Vec<_>>().join(", ")))?;
    let exact = move |x: f64| func.eval(x);
    let (table, error) = match func {
        Func::Exp => {
            let p = fit_exp_chain(samples, a.clip, a.squarings, a.floor, less).map_err(|e| e.to_string())?;
            let domain = match a.domain {
                Some(s) => parse_domain(s)?,
                None => [-16.0, 0.0],
            };
            let fp = FixedPoint::new(nectar_nn::softmax::NARROW_L, FixedPoint::BUMBLEBEE.f()).map_err(|e| e.to_string())?;
            let exact_clipped = |x: f64| if x <= 0.0 { x.exp() } else { f64::NAN };
            let twin = |b: &mut nectar_nn::plain::PlainBackend, x: &Vec<u64>| nectar_nn::exp::nimbus::exp_chain(b, x, &p, None);
            let e = dist_error(samples, domain, &exact_clipped, &|x| p.eval_f64(x), &twin, fp).map_err(|e| e.to_string())?;
            (serde_json::to_value(p).map_err(|e| e.to_string())?, e)
        }
        _ => {
            let p = fit_abs_chain(func, samples, a.range, a.floor, less).map_err(|e| e.to_string())?;
            let domain = match a.domain {
                Some(s) => parse_domain(s)?,
                None => [-8.0, 8.0],
            };
            let twin = |b: &mut nectar_nn::plain::PlainBackend, x: &Vec<u64>| {
                nectar_nn::gelu::abs_form::abs_chain(b, x, &p, nectar_nn::gelu::SQ8_CMP_BITS, "fit")
            };
            let e = dist_error(samples, domain, &exact, &|x| p.eval_f64(x), &twin, FixedPoint::BUMBLEBEE).map_err(|e| e.to_string())?;
            (serde_json::to_value(p).map_err(|e| e.to_string())?, e)
        }
    };
    let rec = DistRecord {
        func: func.name(),
        form: if func == Func::Exp { "nimbus exp chain" } else { "nimbus |x| chain" },
        model: a.model.display().to_string(),
        texts: texts.len(),
        table,
        floor: a.floor,
        error,
    };
    if let Some(path) = out {
        let text = serde_json::to_string_pretty(&rec).map_err(|e| e.to_string())?;
        std::fs::write(path, format!("{text}\n")).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&rec).map_err(|e| e.to_string())?);
    } else {
        let e = &rec.error;
        outln!("{} ({}) fitted to {} inputs from {} texts of {}", rec.func, rec.form, e.samples, rec.texts, rec.model);
        outln!("  table: {}", rec.table);
        outln!(
            "  over the inputs: rms {:.3e}, mean |e| {:.3e}, p99.9 {:.3e}, max {:.3e}; twin (l={}, f={}) rms {:.3e}, max {:.3e}",
            e.rms, e.mean_abs, e.p999_abs, e.max_abs, e.format[0], e.format[1], e.twin_rms, e.twin_max_abs
        );
        outln!("  worst case on [{}, {}]: f64 {:.3e}, twin {:.3e}", e.domain[0], e.domain[1], e.worst_abs, e.twin_worst_abs);
    }
    Ok(())
}
