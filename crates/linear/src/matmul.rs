//! Matrix products on additive shares over `Z_{2^l}` (BumbleBee §III, §III-E1), built on
//! [`crate::olt::olt`].
//!
//! - [`matmul_shared_weight`]: `[X]·W`, `X` (`k×m`) shared, `W` (`m×n`) the server's weight:
//!   one OLT (`X_1` from the client × `W`) plus the server's local `X_0·W`.
//! - [`matmul_shared_shared`]: `[X]·[Y]`: two OLTs for the cross terms `X_1·Y_0` and `X_0·Y_1`
//!   plus the local `X_i·Y_i`.
//! - [`batch_matmul_shared_shared`]: `H` products of the same shape (multi-head attention),
//!   each OLT batched so that the block products of all heads are interleaved together:
//!   `⌈H·k'n'/m_w⌉` result ciphertexts instead of `H·⌈k'n'/m_w⌉`.
//!
//! Rounds: 2 flights per OLT. Output: shares of the exact products mod `2^l` (up to H2A-Coeff's
//! rare LSB error, see [`crate::h2a`]), for any `l` up to the bits of the session's plaintext
//! modulus `t = 2^b` (entries are taken mod `2^b` as they are encoded).

use crate::krdy::{matmul_u64, Shape};
use crate::olt::{olt, olt_prepared, PreparedBlocks, Side};
use crate::session::HeSession;
use crate::window::OltPlan;
use crate::LinearError;
use nectar_math::Prg;
use nectar_net::{Channel, Role};

pub(crate) fn mask(l: u32) -> u64 {
    if l >= 64 {
        u64::MAX
    } else {
        (1u64 << l) - 1
    }
}

/// Shares of `Z_{2^l}` need an OLT whose plaintext modulus `t = 2^b` has `b ≥ l`.
pub(crate) fn check_ring(sess: &HeSession, l: u32) -> Result<(), LinearError> {
    let tb = crate::h2a::plain_bits(&sess.params, 0);
    if l > tb || !sess.params.plain_modulus(0).is_power_of_two() {
        return Err(LinearError::BadParams(format!("shares of Z_2^{l} need t = 2^b with b >= {l}; this session's t has {tb} bits")));
    }
    Ok(())
}

fn check_len(what: &str, v: &[u64], want: usize) -> Result<(), LinearError> {
    if v.len() != want {
        return Err(LinearError::BadShape(format!(
            "{what}: {} entries, expected {want}",
            v.len()
        )));
    }
    Ok(())
}

/// `[X]·W` with the weight held by the server (`w = Some` on the server, `None` on the client).
/// Returns this party's `k×n` share mod `2^l`. `prepared`: the server's plaintext blocks of `w`
/// made before the call ([`crate::olt::olt_prepared`]; they must come from this `w` and `plan`).
#[allow(clippy::too_many_arguments)]
pub fn matmul_shared_weight<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    plan: &OltPlan,
    x: &[u64],
    w: Option<&[u64]>,
    l: u32,
    prg: &mut Prg,
    prepared: Option<PreparedBlocks>,
) -> Result<Vec<u64>, LinearError> {
    let s = plan.shape;
    check_ring(sess, l)?;
    check_len("X share", x, s.k * s.m)?;
    let out = match (role, w) {
        (Role::Server, Some(w)) => {
            check_len("W", w, s.m * s.n)?;
            let r = olt_prepared(ch, sess, plan, Side::Rhs, &[w], prg, prepared)?;
            let local = matmul_u64(x, w, s);
            r.iter()
                .zip(local)
                .map(|(a, b)| a.wrapping_add(b))
                .collect()
        }
        (Role::Client, None) => olt(ch, sess, plan, Side::Lhs, &[x], prg)?,
        _ => {
            return Err(LinearError::BadParams(
                "the weight belongs to the server".into(),
            ))
        }
    };
    Ok(out.into_iter().map(|v| v & mask(l)).collect())
}

/// `[X]·[Y]` on shares; returns this party's `k×n` share mod `2^l`.
#[allow(clippy::too_many_arguments)]
pub fn matmul_shared_shared<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    plan: &OltPlan,
    x: &[u64],
    y: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    batch_matmul_shared_shared(ch, sess, role, plan, &[x], &[y], l, prg)
}

/// `H` products `[X_h]·[Y_h]` of the same shape in two batched OLTs; returns this party's
/// shares of the `H` products (`k×n` each), concatenated, mod `2^l`.
#[allow(clippy::too_many_arguments)]
pub fn batch_matmul_shared_shared<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    plan: &OltPlan,
    xs: &[&[u64]],
    ys: &[&[u64]],
    l: u32,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    let s: Shape = plan.shape;
    check_ring(sess, l)?;
    if xs.len() != ys.len() || xs.is_empty() {
        return Err(LinearError::BadShape(
            "batched matmul needs as many X as Y, at least one".into(),
        ));
    }
    for (x, y) in xs.iter().zip(ys) {
        check_len("X share", x, s.k * s.m)?;
        check_len("Y share", y, s.m * s.n)?;
    }
    // OLT A: client's X_1 × server's Y_0; OLT B: server's X_0 × client's Y_1.
    let (a, b) = match role {
        Role::Server => {
            let a = olt(ch, sess, plan, Side::Rhs, ys, prg)?;
            let b = olt(ch, sess, plan, Side::Lhs, xs, prg)?;
            (a, b)
        }
        Role::Client => {
            let a = olt(ch, sess, plan, Side::Lhs, xs, prg)?;
            let b = olt(ch, sess, plan, Side::Rhs, ys, prg)?;
            (a, b)
        }
    };
    let local: Vec<u64> = xs
        .iter()
        .zip(ys)
        .flat_map(|(x, y)| matmul_u64(x, y, s))
        .collect();
    Ok(local
        .iter()
        .zip(a.iter().zip(&b))
        .map(|(c, (p, q))| c.wrapping_add(*p).wrapping_add(*q) & mask(l))
        .collect())
}
