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
