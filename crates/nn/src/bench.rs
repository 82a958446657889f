//! Operator profiles on the plaintext twin: primitive counts (→ cost model of the secure
//! backend) and twin wall time. A `pub fn` for the `nectar bench nn` CLI; the secure timings
//! and bytes come later from the secure backend running the same operator code.

use crate::counting::OpCount;
use crate::NnError;
use nectar_math::FixedPoint;
use std::collections::BTreeMap;
use std::time::Instant;

/// Operators [`profile`] knows.
pub const OPS: [&str; 12] = [
    "gelu", "gelu-mixed", "gelu-p4", "gelu-p4-mixed", "silu", "exp", "exp-mixed", "softmax", "layernorm", "rsqrt",
    "reciprocal", "argmax",
];

/// Counts and time of one operator run on the twin.
#[derive(Clone, Debug)]
pub struct Profile {
    pub op: String,
    /// Elements (for row operators: rows × cols).
    pub elements: usize,
    pub twin_seconds: f64,
    pub counts: BTreeMap<&'static str, OpCount>,
}

/// Run `op` on `elements` inputs (row operators use rows of `cols`) under a [`CountingBackend`].
pub fn profile(op: &str, elements: usize, cols: usize) -> Result<Profile, NnError> {
    use crate::*;
    let fp = FixedPoint::BUMBLEBEE;
    let mut b = CountingBackend::new(PlainBackend::new(fp)?);
    let cols = cols.max(1);
    let rows = elements.div_ceil(cols);
    let n = if matches!(op, "softmax" | "layernorm" | "argmax") { rows * cols } else { elements };
    let xs: Vec<f64> = (0..n).map(|i| 4.0 * (((i * 7919 + 13) % 1000) as f64 / 500.0 - 1.0)).collect();
    let x = b.inner.encode(&xs)?;
    let t = Instant::now();
    match op {
        "gelu" => drop(gelu::seg4_gelu(&mut b, &x, &gelu::SEG4_BUMBLEBEE)?),
        "gelu-mixed" => drop(gelu::seg4_gelu_mixed(&mut b, &x, &gelu::SEG4_BUMBLEBEE)?),
        "gelu-p4" => drop(gelu::p4_gelu(&mut b, &x, &gelu::P4_BOLT)?),
        "gelu-p4-mixed" => drop(gelu::p4_gelu_mixed(&mut b, &x, &gelu::P4_BOLT)?),
        "silu" => drop(silu::silu(&mut b, &x, &silu::SILU_BUMBLEBEE)?),
        "exp" | "exp-mixed" => {
            let nx = b.neg(&x)?;
            let d = b.add_const(&nx, &[backend::enc(&b, -4.0)?])?;
            if op == "exp" {
                drop(exp::exp_neg(&mut b, &d, &exp::EXP_BUMBLEBEE)?)
            } else {
                drop(exp::exp_neg_mixed(&mut b, &d, &exp::EXP_BUMBLEBEE)?)
            }
        }
        "softmax" => drop(softmax::softmax(&mut b, &x, rows, cols, None, &softmax::SOFTMAX_BUMBLEBEE)?),
        "layernorm" => {
            let g = b.inner.encode(&vec![1.0; cols])?;
            let be = b.inner.encode(&vec![0.0; cols])?;
            drop(layernorm::layernorm(&mut b, &x, rows, cols, &g, &be, &layernorm::LAYERNORM_DEFAULT)?)
        }
        "rsqrt" | "reciprocal" => {
            let sq = b.square(&x)?;
            let pos = b.add_const(&sq, &[backend::enc(&b, 1.0)?])?;
            b.reset();
            if op == "rsqrt" {
                drop(rsqrt::rsqrt(&mut b, &pos, &rsqrt::RSQRT_LAYERNORM)?)
            } else {
                drop(reciprocal::reciprocal(&mut b, &pos, &reciprocal::RECIP_SOFTMAX)?)
            }
        }
        "argmax" => drop(max::argmax_rows(&mut b, &x, rows, cols)?),
        other => return Err(NnError::BadArgument(format!("unknown operator {other}; known: {OPS:?}"))),
    }
    Ok(Profile { op: op.to_string(), elements: n, twin_seconds: t.elapsed().as_secs_f64(), counts: b.counts().clone() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_ops_profile() {
        for op in super::OPS {
            let p = super::profile(op, 256, 64).unwrap();
            assert!(!p.counts.is_empty(), "{op}");
        }
        assert!(super::profile("nope", 4, 1).is_err());
    }
}
