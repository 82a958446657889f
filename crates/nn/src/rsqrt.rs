//! Reciprocal square root `1/√x` for positive `x` by power-of-four normalisation and Newton.
//!
//! Like [`crate::reciprocal`]: one batched `less_than_const` against `4^j`, `lo ≤ j < hi`,
//! gives `c_j = 1{x < 4^j}`; with `x ∈ [4^(e−1), 4^e)`, both `4^−e` and `2^−e` are public
//! linear combinations of `B2A(c_j)` (telescoping: `4^−e = 4^−hi + Σ c_j·3·4^−(j+1)`,
//! `2^−e = 2^−hi + Σ c_j·2^−(j+1)`), from ONE comparison call and ONE b2a call.
//! Then `u = x·4^−e ∈ [1/4, 1)`, the linear initial guess `y0 = 2.132 − 1.218·u` (our minimax fit
//! of `u^−1/2` on [1/4, 1], relative error ≤ 8.7 %), `iters` Newton steps
//! `y ← y·(1.5 − (u/2)·y²)` (relative error `≈ 1.5·e²`: 1.6e−2, 3.8e−4, 2.2e−7), and
//! `1/√x = y·2^−e`. (SPU instead uses a quartic in `u` and no Newton step, REFERENCE.md §3.5;
//! East determines `y0` and the count offline, §3.8.)
//! Input domain: `x ∈ [4^lo, 4^hi)`. Cost on n elements: less_than n × (hi − lo),
//! b2a n·(hi − lo), trunc n, square iters·n, mul (2 + 2·iters)·n.

use crate::backend::{enc, Backend};
use crate::reciprocal::pow2_factors;
use crate::NnError;

/// Parameters of [`rsqrt`] (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RsqrtParams {
    /// Input domain `[4^lo, 4^hi)`.
    pub lo: i32,
    pub hi: i32,
    pub iters: u32,
}

/// For LayerNorm variances at f = 18: domain [4^−9, 4^9) = [2^−18, 2^18).
pub const RSQRT_LAYERNORM: RsqrtParams = RsqrtParams { lo: -9, hi: 9, iters: 3 };

/// Linear initial guess `y0 = a + b·u` on [1/4, 1) (our minimax fit; AGREEMENT).
pub const RSQRT_Y0: (f64, f64) = (2.132, -1.218);

/// `1/√x` for `x ∈ [4^lo, 4^hi)`.
pub fn rsqrt<B: Backend>(b: &mut B, x: &B::Val, p: &RsqrtParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let f = fp.f() as i32;
    if 2 * p.hi > f || -2 * p.lo > f + 2 || (2 * p.hi as i64) + 2 * f as i64 + 2 >= fp.l() as i64 {
        return Err(NnError::FormatTooNarrow {
            op: "rsqrt",
            l: fp.l(),
            f: fp.f(),
            why: format!("domain [4^{}, 4^{}) needs 2·hi <= f, −2·lo <= f + 2, 2·hi + 2f + 2 < l", p.lo, p.hi),
        });
    }
    let w4 = |j: i32| 3.0 * (-2.0 * (j as f64) - 2.0).exp2();
    let w2 = |j: i32| (-(j as f64) - 1.0).exp2();
    let fs = pow2_factors(b, x, 2, p.lo, p.hi, &[(&w4, (-2.0 * p.hi as f64).exp2()), (&w2, (-(p.hi as f64)).exp2())])?;
    let (f4, f2) = match fs.as_slice() {
        [a, c] => (a.clone(), c.clone()),
        _ => return Err(NnError::BadArgument("expected two factors".into())),
    };
    let u = b.mul(x, &f4)?;
    let y0 = b.mul_const(&u, &[enc(b, RSQRT_Y0.1)?], fp.f())?;
    let mut y = b.add_const(&y0, &[enc(b, RSQRT_Y0.0)?])?;
    let uh = b.trunc(&u, 1)?;
    let c15 = enc(b, 1.5)?;
    for _ in 0..p.iters {
        let y2 = b.square(&y)?;
        let t = b.mul(&uh, &y2)?;
        let nt = b.neg(&t)?;
        let h = b.add_const(&nt, &[c15])?;
        y = b.mul(&y, &h)?;
    }
    b.mul(&y, &f2)
}
