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
use crate::olt::{encrypts, evaluate_frames, olt, olt_prepared, open_frames, query_cts, query_frames, result_layout, PreparedBlocks, Side};
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
    check_shared(sess, plan, xs, ys, l)?;
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
    Ok(add_local(plan.shape, xs, ys, &a, &b, l))
}

fn check_shared(sess: &HeSession, plan: &OltPlan, xs: &[&[u64]], ys: &[&[u64]], l: u32) -> Result<(), LinearError> {
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
    Ok(())
}

/// This party's share of the products: its local `X_i·Y_i` plus its shares of the two cross terms.
fn add_local(s: Shape, xs: &[&[u64]], ys: &[&[u64]], a: &[u64], b: &[u64], l: u32) -> Vec<u64> {
    let local: Vec<u64> = xs
        .iter()
        .zip(ys)
        .flat_map(|(x, y)| matmul_u64(x, y, s))
        .collect();
    local
        .iter()
        .zip(a.iter().zip(b))
        .map(|(c, (p, q))| c.wrapping_add(*p).wrapping_add(*q) & mask(l))
        .collect()
}

/// [`batch_matmul_shared_shared`] with its two OLTs in the same two flights (`matmul-shared =
/// olt-duplex`, issues 48/52). The plan's encrypting side is the same in both OLTs and each
/// party holds that side in exactly one of them, so each party encrypts one cross term's query
/// and evaluates the other's: both queries cross the link at once
/// ([`Channel::send_while_receiving`]), then both responses. The same messages and bytes as
/// the two OLTs one after the other; two flights instead of four, and each carries both
/// directions' traffic at once.
#[allow(clippy::too_many_arguments)]
pub fn batch_matmul_shared_shared_duplex<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    plan: &OltPlan,
    xs: &[&[u64]],
    ys: &[&[u64]],
    l: u32,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    check_shared(sess, plan, xs, ys, l)?;
    // OLT A: client's X_1 × server's Y_0; OLT B: server's X_0 × client's Y_1 (as above).
    let (a, b) = match role {
        Role::Server => ((Side::Rhs, ys), (Side::Lhs, xs)),
        Role::Client => ((Side::Lhs, xs), (Side::Rhs, ys)),
    };
    let a_encrypts = encrypts(plan, a.0);
    let (enc, eval) = if a_encrypts { (a, b) } else { (b, a) };
    if encrypts(plan, eval.0) {
        return Err(LinearError::BadParams("a shared product's two OLTs need one encryptor each".into()));
    }
    let batch = xs.len();
    let first = role == Role::Server;
    let query = query_frames(sess, plan, enc.0, enc.1, prg)?;
    let peer_query = ch.send_while_receiving(&query, crate::wire::frames(query_cts(plan) * batch).count(), first)?;
    let (response, eval_share) = evaluate_frames(sess, plan, eval.0, eval.1, peer_query, prg)?;
    let layout = result_layout(plan, batch);
    let peer_response = ch.send_while_receiving(&response, layout.positions().len(), first)?;
    let enc_share = open_frames(sess, &layout, peer_response)?;
    let (a, b) = if a_encrypts { (enc_share, eval_share) } else { (eval_share, enc_share) };
    Ok(add_local(plan.shape, xs, ys, &a, &b, l))
}
