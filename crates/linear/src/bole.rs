//! Batch OLE with error (bOLEe, BumbleBee §IV, Alg. 2) and, on top, the element-wise product of
//! two shared vectors `Π_mul` and the square `Π_square` (§V), with reuse of already-sent query
//! ciphertexts (the `x^3` trick of §V-A3).
//!
//! The *query side* (by convention the server, P0) encrypts `SIMD(Lift(v))` of its vector under
//! its own key — one ciphertext per CRT prime `t_j` per `N` elements — and sends it. The
//! *response side* multiplies a sum of queries by its plaintexts (`Σ_i ct_i ⊠ SIMD(y_i)`, `y_i`
//! centred), runs H2A-SIMD (uniform share in `R_{t_j}`, noise flooding with
//! [`crate::h2a::flood_bits`]: 40 bits per session, 136 bits for two terms; switched down to one
//! prime) and returns the result.
//! Both parties apply `Down` to their `Z_t` share (CRT over the `t_j`).
//! With `t = Π t_j > 2^{2l}`, the shares sum to `Σ_i x_i·y_i + e` mod `2^l`, `e ∈ {0, ±1}` (Prop. 3).
//!
//! - `bOLEe(x, y)`: one query, one response (2 flights).
//! - `Π_mul([x], [y]) = x0·y0 + x1·y1 + x0·y1 + y0·x1`: P0 sends the queries of `x0` and `y0`, P1
//!   answers `q(x0) ⊠ y1 + q(y0) ⊠ x1` in one response: 2 queries + 1 response.
//! - `Π_square([x]) = x0² + x1² + 2·x0·x1`: 1 query + 1 response (P1 multiplies by `2·x1`).
//! - Reuse: a [`SentQuery`] / [`ReceivedQuery`] pair can serve any number of responses; e.g.
//!   `x^3 = Π_mul(x, x^2)` reuses the queries of `x0` (sent by `Π_square(x)`) and of `(x^2)_0`
//!   (sent by `Π_square(x^2)`), so it costs one response only.
//!
//! Bytes per `N = 8192` elements (preset `bumblebee_bole`, 3 CRT primes): query 3 seeded
//! ciphertexts at 186 bits, response 3 ciphertexts at one 62-bit prime. Measured (`nectar bench
//! linear --op mul --size 65536`): 12.19 MB per Π_mul of 65 536 elements, 10.23 MB with the
//! artifact's 148-bit parameters whose flood covers one coefficient, not a session.

use crate::h2a;
use crate::liftdown::CrtModulus;
use crate::session::HeSession;
use crate::{wire, LinearError};
use nectar_he::{Ciphertext, Params, PlainModulus, PlainNtt, Plaintext};
use nectar_math::Prg;
use nectar_net::{Channel, Role};
use rayon::prelude::*;

/// The query side's record of a query it sent (it keeps nothing secret: the answers come back
/// encrypted under its own key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentQuery {
    pub len: usize,
    pub l: u32,
}

/// The response side's copy of a received query: `chunks × primes` ciphertexts (NTT form).
pub struct ReceivedQuery {
    pub len: usize,
    pub l: u32,
    cts: Vec<Ciphertext>,
}

fn crt(params: &Params) -> Result<CrtModulus, LinearError> {
    match &params.literal().plain {
        PlainModulus::Crt(ts) => CrtModulus::new(ts),
        PlainModulus::Prime(t) => CrtModulus::new(&[*t]),
        PlainModulus::PowerOfTwo(_) => Err(LinearError::BadParams(
            "bOLEe needs a prime or CRT plaintext modulus".into(),
        )),
    }
}

fn chunks(len: usize, n: usize) -> usize {
    len.div_ceil(n).max(1)
}

/// Query side: encrypts and sends `SIMD(Lift(v))` (`v` in `Z_{2^l}`). One flight.
pub fn send_query<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    v: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<SentQuery, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    m.check_ring(l)?;
    let (n, k) = (params.n(), m.primes().len());
    let nc = chunks(v.len(), n);
    // Residues of Lift(v) per prime, per chunk.
    let lifted: Vec<Vec<Vec<u64>>> = (0..nc)
        .into_par_iter()
        .map(|c| {
            let mut res = vec![vec![0u64; n]; k];
            let mut tmp = vec![0u64; k];
            for (i, &x) in v.iter().enumerate().skip(c * n).take(n) {
                m.lift(x & mask(l), l, &mut tmp);
                for j in 0..k {
                    res[j][i - c * n] = tmp[j];
                }
            }
            res
        })
        .collect();
    let prgs: Vec<Prg> = (0..nc * k).map(|_| prg.fork()).collect();
    let cts: Vec<Ciphertext> = prgs
        .into_par_iter()
        .enumerate()
        .map(|(i, mut p)| {
            let (c, j) = (i / k, i % k);
            let pt = params.encode_simd(&lifted[c][j], j)?;
            Ok(sess.sk.encrypt(params, &pt, &mut p)?)
        })
        .collect::<Result<_, LinearError>>()?;
    ch.send(&wire::cts_to_bytes(params, &cts)?)?;
    Ok(SentQuery { len: v.len(), l })
}

/// Response side: receives a query of `len` elements.
pub fn recv_query<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    len: usize,
    l: u32,
) -> Result<ReceivedQuery, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    m.check_ring(l)?;
    let k = m.primes().len();
    let expected = chunks(len, params.n()) * k;
    let mut cts = wire::cts_from_bytes(params, &ch.recv()?, expected)?;
    for (i, c) in cts.iter().enumerate() {
        if c.plain_index() != i % k || c.level() != params.max_level() {
            return Err(LinearError::Malformed(
                "query ciphertext for the wrong CRT component or level".into(),
            ));
        }
    }
    cts.par_iter_mut().for_each(|c| c.to_ntt(params));
    Ok(ReceivedQuery { len, l, cts })
}

/// Response side: computes `Σ_i q_i ⊠ SIMD(y_i)`, masks it (H2A-SIMD), sends it and returns
/// its own share `Down(z)` in `Z_{2^l}`. One flight.
pub fn respond<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    terms: &[(&ReceivedQuery, &[u64])],
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    let (n, k) = (params.n(), m.primes().len());
    let (len, l) = match terms.first() {
        Some((q, _)) => (q.len, q.l),
        None => return Err(LinearError::BadShape("bOLEe response with no terms".into())),
    };
    if terms
        .iter()
        .any(|(q, y)| q.len != len || q.l != l || y.len() != len)
    {
        return Err(LinearError::BadShape(
            "bOLEe terms of different lengths or rings".into(),
        ));
    }
    let nc = chunks(len, n);
    let top = params.max_level();
    let prgs: Vec<Prg> = (0..nc * k).map(|_| prg.fork()).collect();
    let res: Vec<(Ciphertext, Vec<u64>)> = prgs
        .into_par_iter()
        .enumerate()
        .map(|(i, mut p)| {
            let (c, j) = (i / k, i % k);
            let tj = m.primes()[j];
            let mut acc: Option<Ciphertext> = None;
            for (q, y) in terms {
                let mut tmp = vec![0u64; k];
                let ys: Vec<u64> = (0..n)
                    .map(|s| {
                        y.get(c * n + s).map_or(0, |&v| {
                            m.centred(v & mask(l), l, &mut tmp);
                            tmp[j]
                        })
                    })
                    .collect();
                debug_assert!(ys.iter().all(|&v| v < tj));
                let pt = PlainNtt::new(params, &params.encode_simd(&ys, j)?, top)?;
                let ct = &q.cts[i];
                match acc.as_mut() {
                    None => acc = Some(ct.mul_plain(params, &pt)?),
                    Some(a) => a.mul_plain_accumulate(params, ct, &pt)?,
                }
            }
            let mut ct = acc.ok_or_else(|| LinearError::BadShape("no terms".into()))?;
            let z0 = h2a::mask_simd(sess, &mut ct, terms.len(), &mut p)?;
            let slots = params.decode_simd(&Plaintext::from_coeffs(params, &z0, j)?)?;
            Ok((ct, slots))
        })
        .collect::<Result<_, LinearError>>()?;
    let (cts, shares): (Vec<Ciphertext>, Vec<Vec<u64>>) = res.into_iter().unzip();
    ch.send(&wire::cts_to_bytes(params, &cts)?)?;
    Ok(down_all(&m, &shares, len, n, l))
}

/// Query side: receives the response to its queries and returns its share `Down(u)`.
pub fn receive_response<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    q: SentQuery,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    let (n, k) = (params.n(), m.primes().len());
    let nc = chunks(q.len, n);
    let cts = wire::cts_from_bytes(params, &ch.recv()?, nc * k)?;
    let slots: Vec<Vec<u64>> = cts
        .par_iter()
        .enumerate()
        .map(|(i, c)| {
            if c.plain_index() != i % k {
                return Err(LinearError::Malformed(
                    "response for the wrong CRT component".into(),
                ));
            }
            Ok(params.decode_simd(&sess.sk.decrypt(params, c)?)?)
        })
        .collect::<Result<_, LinearError>>()?;
    Ok(down_all(&m, &slots, q.len, n, q.l))
}

fn mask(l: u32) -> u64 {
    if l == 64 {
        u64::MAX
    } else {
        (1u64 << l) - 1
    }
}

/// `Down` of per-(chunk, prime) slot vectors into `len` ring elements.
fn down_all(m: &CrtModulus, slots: &[Vec<u64>], len: usize, n: usize, l: u32) -> Vec<u64> {
    let k = m.primes().len();
    (0..len)
        .into_par_iter()
        .map(|i| {
            let (c, s) = (i / n, i % n);
            let ys: Vec<u64> = (0..k).map(|j| slots[c * k + j][s]).collect();
            m.down(&ys, l)
        })
        .collect()
}

/// bOLEe: the server supplies `x`, the client `y`; each gets a share of `x ⊙ y + e` mod `2^l`.
pub fn bole<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    v: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    match role {
        Role::Server => {
            let q = send_query(ch, sess, v, l, prg)?;
            receive_response(ch, sess, q)
        }
        Role::Client => {
            let q = recv_query(ch, sess, v.len(), l)?;
            respond(ch, sess, &[(&q, v)], prg)
        }
    }
}

/// What a party keeps after `Π_mul` / `Π_square` for later reuse of the queries.
pub enum Queries {
    Server(Vec<SentQuery>),
    Client(Vec<ReceivedQuery>),
}

fn local_product<'a>(
    a: &'a [u64],
    b: &'a [u64],
    l: u32,
    scale: u64,
) -> impl Iterator<Item = u64> + 'a {
    a.iter()
        .zip(b)
        .map(move |(x, y)| x.wrapping_mul(*y).wrapping_mul(scale) & mask(l))
}

/// `Π_mul`: shares of `x ⊙ y + e` (`e ∈ {0, ±1}`) from shares of `x` and `y`. Returns the share
/// and the queries of `x0`, `y0` for reuse.
pub fn mul<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    x: &[u64],
    y: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<(Vec<u64>, Queries), LinearError> {
    if x.len() != y.len() {
        return Err(LinearError::BadShape(format!(
            "Π_mul of lengths {} and {}",
            x.len(),
            y.len()
        )));
    }
    match role {
        Role::Server => {
            let qx = send_query(ch, sess, x, l, prg)?;
            let qy = send_query(ch, sess, y, l, prg)?;
            let r = mul_reusing(ch, sess, QueryPair::Server(qx, qy), x, y, prg)?;
            Ok((r, Queries::Server(vec![qx, qy])))
        }
        Role::Client => {
            let qx = recv_query(ch, sess, x.len(), l)?;
            let qy = recv_query(ch, sess, y.len(), l)?;
            let r = mul_reusing(ch, sess, QueryPair::Client(&qx, &qy), x, y, prg)?;
            Ok((r, Queries::Client(vec![qx, qy])))
        }
    }
}

/// The queries of the server's shares `x0`, `y0` as each party holds them.
pub enum QueryPair<'a> {
    Server(SentQuery, SentQuery),
    Client(&'a ReceivedQuery, &'a ReceivedQuery),
}

/// `Π_mul` with both queries already exchanged (e.g. `x^3` from the queries of `x0` and
/// `(x^2)_0`): one response only.
pub fn mul_reusing<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    queries: QueryPair<'_>,
    x: &[u64],
    y: &[u64],
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    let l = match &queries {
        QueryPair::Server(a, b) => {
            if a.len != x.len() || b.len != y.len() || a.l != b.l {
                return Err(LinearError::BadShape(
                    "queries do not match the operands".into(),
                ));
            }
            a.l
        }
        QueryPair::Client(a, b) => {
            if a.len != x.len() || b.len != y.len() || a.l != b.l {
                return Err(LinearError::BadShape(
                    "queries do not match the operands".into(),
                ));
            }
            a.l
        }
    };
    match queries {
        QueryPair::Server(qx, _) => {
            let r = receive_response(ch, sess, qx)?;
            Ok(local_product(x, y, l, 1)
                .zip(r)
                .map(|(a, b)| a.wrapping_add(b) & mask(l))
                .collect())
        }
        QueryPair::Client(qx, qy) => {
            // q(x0) ⊠ y1 + q(y0) ⊠ x1
            let r = respond(ch, sess, &[(qx, y), (qy, x)], prg)?;
            Ok(local_product(x, y, l, 1)
                .zip(r)
                .map(|(a, b)| a.wrapping_add(b) & mask(l))
                .collect())
        }
    }
}

/// `Π_square`: shares of `x ⊙ x + e` from shares of `x`: one query and one response. Returns
/// the share and the query of `x0` for reuse.
pub fn square<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    role: Role,
    x: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<(Vec<u64>, Queries), LinearError> {
    match role {
        Role::Server => {
            let q = send_query(ch, sess, x, l, prg)?;
            let r = receive_response(ch, sess, q)?;
            Ok((
                local_product(x, x, l, 1)
                    .zip(r)
                    .map(|(a, b)| a.wrapping_add(b) & mask(l))
                    .collect(),
                Queries::Server(vec![q]),
            ))
        }
        Role::Client => {
            let q = recv_query(ch, sess, x.len(), l)?;
            let two_x: Vec<u64> = x.iter().map(|v| v.wrapping_mul(2) & mask(l)).collect();
            let r = respond(ch, sess, &[(&q, &two_x)], prg)?;
            Ok((
                local_product(x, x, l, 1)
                    .zip(r)
                    .map(|(a, b)| a.wrapping_add(b) & mask(l))
                    .collect(),
                Queries::Client(vec![q]),
            ))
        }
    }
}
