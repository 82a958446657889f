//! Mixed bit-width evaluation (BumbleBee §V-C): run an activation in a small ring
//! `Z_{2^l'}` with `f'` fractional bits, then return to `(l, f)`.
//!
//! Entering: one truncation by `f − f'` in the large ring (the "extra call to F_trunc" of §V-C),
//! then local reduction mod `2^l'`. Leaving: ring extension `Z_{2^l'} → Z_{2^l}` (App. E Alg. 5,
//! `O(2(l − l'))` bits, 2 rounds), then a local multiplication by `2^(f − f')` (exact).
//! Error: one truncation (≤ 1 LSB of the small format) plus the operator's own error at `f'`.

use crate::backend::Backend;
use crate::NnError;
use nectar_math::FixedPoint;

/// The ring the activations (GeLU, SiLU) are evaluated in: the suite's `act-ring` (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActRing {
    /// The full ring `Z_{2^64}`, 18 fractional bits (BumbleBee §II-C).
    Full,
    /// Mixed bit-width: a small activation format, entered and left around the activation
    /// (BumbleBee §V-C; each protocol names its format, [`ACT_FORMAT`] by default).
    Mixed,
}

impl ActRing {
    /// `Ok` in the full ring; in the activation ring the refusal `"{who} {why}"` (for the
    /// protocols that run only in the full ring).
    pub fn full_only(self, who: &str, why: &str) -> Result<(), String> {
        match self {
            ActRing::Full => Ok(()),
            ActRing::Mixed => Err(format!("{who} {why}")),
        }
    }

    /// `full` in the full ring, `mixed` in the activation ring.
    pub fn pick<T>(self, full: T, mixed: T) -> T {
        match self {
            ActRing::Full => full,
            ActRing::Mixed => mixed,
        }
    }
}

/// BumbleBee's activation format `l' = 32, f' = 12` (§V-C, §VII; AGREEMENT).
pub const ACT_FORMAT: FixedPoint = FixedPoint::BUMBLEBEE_ACT;

/// Move `x` from the current format into `act` (`act.l < l`, `act.f <= f`) and switch the
/// backend's format to `act`.
pub fn enter<B: Backend + ?Sized>(b: &mut B, x: &B::Val, act: FixedPoint) -> Result<B::Val, NnError> {
    let full = b.format();
    if act.l() >= full.l() || act.f() > full.f() {
        return Err(NnError::BadArgument(format!(
            "mixed bit-width: activation format ({}, {}) must be smaller than ({}, {})",
            act.l(),
            act.f(),
            full.l(),
            full.f()
        )));
    }
    let y = if full.f() > act.f() { b.trunc(x, full.f() - act.f())? } else { x.clone() };
    let y = b.reduce(&y, act.l())?;
    b.set_format(act);
    Ok(y)
}

/// Move `y` from the current (small) format back into `full` and switch the backend to `full`.
pub fn leave<B: Backend + ?Sized>(b: &mut B, y: &B::Val, full: FixedPoint) -> Result<B::Val, NnError> {
    let act = b.format();
    if act.l() >= full.l() || act.f() > full.f() {
        return Err(NnError::BadArgument("mixed bit-width: leave() into a smaller format".into()));
    }
    let z = b.extend(y, act.l(), full.l())?;
    b.set_format(full);
    let shift = full.f() - act.f();
    if shift == 0 {
        return Ok(z);
    }
    b.mul_const(&z, &[1u64 << shift], 0)
}

/// Run `op` on `x` in the activation format `act` and return the result in the current format.
/// The backend's format is restored even when `op` fails.
pub fn with_format<B, F>(b: &mut B, x: &B::Val, act: FixedPoint, op: F) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    F: FnOnce(&mut B, &B::Val) -> Result<B::Val, NnError>,
{
    let full = b.format();
    let y = enter(b, x, act)?;
    match op(b, &y) {
        Ok(r) => leave(b, &r, full),
        Err(e) => {
            b.set_format(full);
            Err(e)
        }
    }
}
