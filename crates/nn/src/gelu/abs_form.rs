//! What the `|x|`-form GeLUs ([`super::p7`], [`super::sq8`]) share: `GeLU(x) = ReLU(x) − g(|x|)`
//! with `Q ≈ g` evaluated in `Z_{2^45}` in the centred variable `w = |x|/r − 1/2`.

use crate::backend::{enc, Backend};
use crate::NnError;
use nectar_math::FixedPoint;

/// Ring of [`super::p7_gelu`]'s polynomial: `Q` runs in `Z_{2^45}`, the widest ring the 2-prime bOLEe
/// key set serves ([`crate::secure::NARROW_MAX_L`]), so its four products cost 2/3 of the full
/// ring's (2 ciphertexts per query and response instead of 3).
pub const P7_POLY_BITS: u32 = crate::secure::NARROW_MAX_L;

/// Scale of `w = t/r − 1/2 ∈ [−1/2, 1/2]` and of its powers in [`super::p7_gelu`]: `w²` before its
/// truncation is `≤ 0.27·2^44 < 2^43` (the truncation's domain in `Z_{2^45}`).
pub(crate) const P7_G: u32 = 22;

/// Checks of the `|x|`-form GeLUs ([`super::p7_gelu`], [`super::sq8_gelu`]) in format `fp`: a power-of-two
/// range `r` with `f + log2 r ≤ P7_G` and a ring wider than [`P7_POLY_BITS`]. Returns
/// `P7_G − f − log2 r`, the shift taking `t = |x|` at scale f to `t/r` at scale `P7_G`.
pub(crate) fn abs_form_shift(op: &'static str, fp: FixedPoint, range: f64) -> Result<u32, NnError> {
    let f = fp.f();
    let rho = range.log2();
    let narrow = |why: String| NnError::FormatTooNarrow { op, l: fp.l(), f, why };
    if rho.fract() != 0.0 || rho < 0.0 || f + rho as u32 > P7_G {
        return Err(narrow(format!("needs a power-of-two range r (got {range}) with f + log2 r <= {P7_G}")));
    }
    if fp.l() <= P7_POLY_BITS {
        return Err(narrow(format!("Q runs in Z_2^{P7_POLY_BITS}, so the format must be wider")));
    }
    Ok(P7_G - f - rho as u32)
}

/// `w = t/r − 1/2` at scale `P7_G` (the backend in `(P7_POLY_BITS, P7_G)`): `t`'s raw value
/// times `2^shift` ([`abs_form_shift`]), minus `2^(P7_G − 1)`. Local and exact.
pub(crate) fn centred_w<B: Backend + ?Sized>(b: &mut B, tn: &B::Val, shift: u32) -> Result<B::Val, NnError> {
    let w = b.mul_const(tn, &[1u64 << shift], 0)?;
    b.add_const(&w, &[enc(b, -0.5)?])
}
