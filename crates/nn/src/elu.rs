//! ELU(x) = α(exp(x) − 1) for x < 0, x for x ≥ 0 (BumbleBee App. D), with the clipped
//! exponential of [`crate::exp`] on the negative branch.
//!
//! One batched less-than with thresholds {T_exp, 0}, the unclipped `(1 + x/2^n)^(2^n)`, one
//! `mul_const` by α, and one batched mux:
//! `ELU = x + [T ≤ x < 0]·(α·e − α − x) + [x < T]·(−α − x)`.
//! Cost on m elements: trunc 2m (division + α), square n·m, less_than m × 2, mux 2m.
//! Error: that of exp (scaled by α) plus α·exp(T_exp) on the clipped part.

use crate::backend::{enc, enc_scaled, Backend};
use crate::exp::{exp_taylor, ExpParams};
use crate::poly::select_sum;
use crate::NnError;

/// ELU with parameter `alpha > 0`.
pub fn elu<B: Backend + ?Sized>(b: &mut B, x: &B::Val, alpha: f64, p: &ExpParams) -> Result<B::Val, NnError> {
    if alpha.is_nan() || alpha <= 0.0 {
        return Err(NnError::BadArgument(format!("ELU alpha must be > 0, got {alpha}")));
    }
    let fp = b.format();
    let th = [enc(b, p.t_exp)?, 0];
    let mut bits = b.less_than_const(x, &th, p.less.ignore_bits(fp))?.into_iter();
    let (clip, neg) = match (bits.next(), bits.next()) {
        (Some(c), Some(s)) => (c, s),
        _ => return Err(NnError::BadArgument("less_than_const returned too few bits".into())),
    };
    let mid = b.xor(&clip, &neg)?; // T ≤ x < 0 (clip implies neg)
    let e = exp_taylor(b, x, p.n)?;
    let sh = fp.f() + 8;
    let ae = b.mul_const(&e, &[enc_scaled(b, alpha, sh)?], sh)?;
    let ma = enc(b, -alpha)?;
    let ae_a = b.add_const(&ae, &[ma])?;
    let v_mid = b.sub(&ae_a, x)?;
    let nx = b.neg(x)?;
    let v_clip = b.add_const(&nx, &[ma])?;
    let d = select_sum(b, &[&mid, &clip], &[&v_mid, &v_clip])?;
    b.add(x, &d)
}

pub fn elu_f64(x: f64, alpha: f64) -> f64 {
    if x < 0.0 {
        alpha * (x.exp() - 1.0)
    } else {
        x
    }
}
