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
//! - `bOLEe(x, y)`: one query, one response (2 flights). Both travel as frames of
//!   [`crate::FRAME_CTS`] ciphertexts: the response side answers each query frame as it arrives,
//!   the query side decrypts each response frame as it arrives.
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

/// Receives one frame of exactly `range.len()` ciphertexts.
fn recv_frame<C: Channel + ?Sized>(
    ch: &mut C,
    params: &Params,
    range: &std::ops::Range<usize>,
) -> Result<Vec<Ciphertext>, LinearError> {
    wire::cts_from_bytes(params, &ch.recv()?, range.len())
}

/// Query side: encrypts and sends `SIMD(Lift(v))` (`v` in `Z_{2^l}`). One flight.
pub fn send_query<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    v: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<SentQuery, LinearError> {
    let mut q = send_queries(ch, sess, &[v], l, prg)?;
    q.pop().ok_or_else(|| LinearError::BadShape("no query sent".into()))
}

/// Query side: encrypts and sends the queries of several vectors of one length in one flight,
/// their frames interleaved (frame `f` of each vector in turn, then frame `f + 1`), so that the
/// response side can answer a product of two fresh queries frame by frame.
pub fn send_queries<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    vs: &[&[u64]],
    l: u32,
    prg: &mut Prg,
) -> Result<Vec<SentQuery>, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    m.check_ring(l)?;
    let len = match vs.first() {
        Some(v) => v.len(),
        None => return Ok(Vec::new()),
    };
    if vs.iter().any(|v| v.len() != len) {
        return Err(LinearError::BadShape("bOLEe queries of different lengths".into()));
    }
    let (n, k) = (params.n(), m.primes().len());
    let nc = chunks(len, n);
    let lifted = lift_all(&m, n, vs, l);
    // One fork per ciphertext, vector by vector, before any is used.
    let mut prgs: Vec<Vec<Prg>> = vs.iter().map(|_| (0..nc * k).map(|_| prg.fork()).collect()).collect();
    for range in wire::frames(nc * k) {
        for (q, ps) in prgs.iter_mut().enumerate() {
            let cts: Vec<Ciphertext> = ps[range.clone()]
                .par_iter_mut()
                .zip(range.clone())
                .map(|(p, i)| encrypt_one(sess, &lifted[q], k, i, p))
                .collect::<Result<_, LinearError>>()?;
            ch.send(&wire::cts_to_bytes(params, &cts)?)?;
            ch.flush()?; // on its way now, not when a buffer fills
        }
    }
    Ok(vs.iter().map(|v| SentQuery { len: v.len(), l }).collect())
}

/// Residues of `Lift(v)` per vector, per chunk of `n` slots, per CRT prime.
fn lift_all(m: &CrtModulus, n: usize, vs: &[&[u64]], l: u32) -> Vec<Vec<Vec<Vec<u64>>>> {
    let k = m.primes().len();
    vs.iter()
        .map(|v| {
            (0..chunks(v.len(), n))
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
                .collect()
        })
        .collect()
}

/// Query ciphertext `i` (chunk `i / k`, CRT prime `i % k`) of one lifted vector.
fn encrypt_one(sess: &HeSession, lifted: &[Vec<Vec<u64>>], k: usize, i: usize, p: &mut Prg) -> Result<Ciphertext, LinearError> {
    let params = &sess.params;
    let (c, j) = (i / k, i % k);
    let pt = params.encode_simd(&lifted[c][j], j)?;
    Ok(sess.sk.encrypt(params, &pt, p)?)
}

/// Decrypts response ciphertext `i` to its slots (checking its CRT component).
fn decrypt_one(sess: &HeSession, k: usize, i: usize, c: &Ciphertext) -> Result<Vec<u64>, LinearError> {
    if c.plain_index() != i % k {
        return Err(LinearError::Malformed("response for the wrong CRT component".into()));
    }
    let params = &sess.params;
    Ok(params.decode_simd(&sess.sk.decrypt(params, c)?)?)
}

/// Checks received query ciphertexts `range` (CRT component and level) and puts them in NTT form.
fn check_queries(params: &Params, k: usize, range: std::ops::Range<usize>, cts: &mut [Ciphertext]) -> Result<(), LinearError> {
    for (i, c) in range.zip(cts.iter()) {
        if c.plain_index() != i % k || c.level() != params.max_level() {
            return Err(LinearError::Malformed("query ciphertext for the wrong CRT component or level".into()));
        }
    }
    cts.par_iter_mut().for_each(|c| c.to_ntt(params));
    Ok(())
}

/// Checks the terms of a response of `len` elements in `Z_{2^l}` against `fresh` new queries.
fn check_terms(len: usize, l: u32, fresh: usize, terms: &[(QueryRef<'_>, &[u64])]) -> Result<(), LinearError> {
    if terms.is_empty() {
        return Err(LinearError::BadShape("bOLEe response with no terms".into()));
    }
    for (q, y) in terms {
        let ok = match q {
            QueryRef::Fresh(i) => *i < fresh,
            QueryRef::Held(q) => q.len == len && q.l == l,
        };
        if !ok || y.len() != len {
            return Err(LinearError::BadShape("bOLEe terms of different lengths or rings, or an unknown query".into()));
        }
    }
    Ok(())
}

/// The answers of ciphertexts `range` (one pass in parallel, one PRG each): the ciphertexts to
/// send and this side's slot shares.
fn answer_range(
    sess: &HeSession,
    m: &CrtModulus,
    l: u32,
    range: std::ops::Range<usize>,
    prgs: &mut [Prg],
    received: &[Vec<Ciphertext>],
    terms: &[(QueryRef<'_>, &[u64])],
) -> Result<Vec<(Ciphertext, Vec<u64>)>, LinearError> {
    prgs.par_iter_mut()
        .zip(range)
        .map(|(p, i)| {
            let ts: Vec<(&Ciphertext, &[u64])> = terms
                .iter()
                .map(|(q, y)| {
                    let ct = match q {
                        QueryRef::Fresh(f) => received.get(*f).and_then(|r| r.get(i)),
                        QueryRef::Held(q) => q.cts.get(i),
                    };
                    ct.map(|c| (c, *y)).ok_or_else(|| LinearError::BadShape("query ciphertext missing".into()))
                })
                .collect::<Result<_, _>>()?;
            answer(sess, m, i, &ts, l, p)
        })
        .collect()
}

/// The duplex bOLEe's query side, away from the channel (issue 52): the queries of `vs` (one
/// length) as one frame — each vector's `chunks × primes` ciphertexts in turn — for
/// [`nectar_net::Channel::send_while_receiving`], the peer's [`answer_frame`] takes it.
pub fn query_frame(sess: &HeSession, vs: &[&[u64]], l: u32, prg: &mut Prg) -> Result<Vec<u8>, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    m.check_ring(l)?;
    let len = vs.first().map_or(0, |v| v.len());
    if vs.iter().any(|v| v.len() != len) {
        return Err(LinearError::BadShape("bOLEe queries of different lengths".into()));
    }
    let (n, k) = (params.n(), m.primes().len());
    let total = chunks(len, n) * k;
    let lifted = lift_all(&m, n, vs, l);
    let mut cts = Vec::with_capacity(vs.len() * total);
    for lv in &lifted {
        let mut prgs: Vec<Prg> = (0..total).map(|_| prg.fork()).collect();
        let part: Vec<Ciphertext> = prgs
            .par_iter_mut()
            .enumerate()
            .map(|(i, p)| encrypt_one(sess, lv, k, i, p))
            .collect::<Result<_, LinearError>>()?;
        cts.extend(part);
    }
    wire::cts_to_bytes(params, &cts)
}

/// The duplex bOLEe's response side, away from the channel: the peer's `fresh` queries of
/// `len` elements from `frame` ([`query_frame`]), answered as [`recv_and_respond`] answers
/// them. Returns the fresh queries (for reuse), the answer frame and this side's share.
#[allow(clippy::type_complexity)]
pub fn answer_frame(
    sess: &HeSession,
    frame: &[u8],
    len: usize,
    l: u32,
    fresh: usize,
    terms: &[(QueryRef<'_>, &[u64])],
    prg: &mut Prg,
) -> Result<(Vec<ReceivedQuery>, Vec<u8>, Vec<u64>), LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    m.check_ring(l)?;
    check_terms(len, l, fresh, terms)?;
    let (n, k) = (params.n(), m.primes().len());
    let total = chunks(len, n) * k;
    let mut all = wire::cts_from_bytes(params, frame, fresh * total)?;
    let mut received: Vec<Vec<Ciphertext>> = Vec::with_capacity(fresh);
    for _ in 0..fresh {
        let mut q: Vec<Ciphertext> = all.drain(..total).collect();
        check_queries(params, k, 0..total, &mut q)?;
        received.push(q);
    }
    let mut prgs: Vec<Prg> = (0..total).map(|_| prg.fork()).collect();
    let answers = answer_range(sess, &m, l, 0..total, &mut prgs, &received, terms)?;
    let (cts, shares): (Vec<Ciphertext>, Vec<Vec<u64>>) = answers.into_iter().unzip();
    let queries = received.into_iter().map(|cts| ReceivedQuery { len, l, cts }).collect();
    Ok((queries, wire::cts_to_bytes(params, &cts)?, down_all(&m, &shares, len, n, l)))
}

/// The duplex bOLEe's query side again: the answer frame to its query `q`, decrypted to its
/// share `Down(u)`.
pub fn decrypt_frame(sess: &HeSession, frame: &[u8], q: SentQuery) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    let (n, k) = (params.n(), m.primes().len());
    let total = chunks(q.len, n) * k;
    let cts = wire::cts_from_bytes(params, frame, total)?;
    let slots: Vec<Vec<u64>> = cts
        .par_iter()
        .enumerate()
        .map(|(i, c)| decrypt_one(sess, k, i, c))
        .collect::<Result<_, LinearError>>()?;
    Ok(down_all(&m, &slots, q.len, n, q.l))
}

/// The query of one term of a response: received in this exchange (`Fresh(i)`: the `i`-th of
/// the fresh queries, in the order [`send_queries`] sent them) or earlier (reuse, §V-A3).
#[derive(Clone, Copy)]
pub enum QueryRef<'a> {
    Fresh(usize),
    Held(&'a ReceivedQuery),
}

/// One frame of a query, checked (CRT component and level of every ciphertext) and in NTT form.
fn recv_query_frame<C: Channel + ?Sized>(
    ch: &mut C,
    params: &Params,
    m: &CrtModulus,
    range: &std::ops::Range<usize>,
) -> Result<Vec<Ciphertext>, LinearError> {
    let mut cts = recv_frame(ch, params, range)?;
    check_queries(params, m.primes().len(), range.clone(), &mut cts)?;
    Ok(cts)
}

/// Response side: computes `Σ_i q_i ⊠ SIMD(y_i)`, masks it (H2A-SIMD), sends it and returns
/// its own share `Down(z)` in `Z_{2^l}`. One flight.
pub fn respond<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    terms: &[(&ReceivedQuery, &[u64])],
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    let (len, l) = match terms.first() {
        Some((q, _)) => (q.len, q.l),
        None => return Err(LinearError::BadShape("bOLEe response with no terms".into())),
    };
    let held: Vec<(QueryRef<'_>, &[u64])> = terms.iter().map(|&(q, y)| (QueryRef::Held(q), y)).collect();
    Ok(recv_and_respond(ch, sess, len, l, 0, &held, prg)?.1)
}

/// Response side of one exchange: receives `fresh` queries of `len` elements (as
/// [`send_queries`] interleaves them) and answers `Σ_i q_i ⊠ SIMD(y_i)` (masked, H2A-SIMD)
/// frame by frame as they arrive. The answers are sent once the whole query is in (a response
/// frame is never sent while the other side may still be sending, so that neither side can
/// block on a full transport buffer while the other does), as consecutive frames. Returns the
/// fresh queries (for reuse) and this side's share `Down(z)` in `Z_{2^l}`. One flight.
pub fn recv_and_respond<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    len: usize,
    l: u32,
    fresh: usize,
    terms: &[(QueryRef<'_>, &[u64])],
    prg: &mut Prg,
) -> Result<(Vec<ReceivedQuery>, Vec<u64>), LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    m.check_ring(l)?;
    let (n, k) = (params.n(), m.primes().len());
    check_terms(len, l, fresh, terms)?;
    let total = chunks(len, n) * k;
    let mut prgs: Vec<Prg> = (0..total).map(|_| prg.fork()).collect();
    let mut received: Vec<Vec<Ciphertext>> = (0..fresh).map(|_| Vec::with_capacity(total)).collect();
    let mut answers: Vec<(Ciphertext, Vec<u64>)> = Vec::with_capacity(total);
    // With no fresh query everything is at hand: one parallel pass over all ciphertexts.
    let passes: Vec<std::ops::Range<usize>> = if fresh == 0 { vec![0..total] } else { wire::frames(total).collect() };
    for range in passes {
        for r in received.iter_mut() {
            r.extend(recv_query_frame(ch, params, &m, &range)?);
        }
        answers.extend(answer_range(sess, &m, l, range.clone(), &mut prgs[range], &received, terms)?);
    }
    let (cts, shares): (Vec<Ciphertext>, Vec<Vec<u64>>) = answers.into_iter().unzip();
    for range in wire::frames(total) {
        ch.send(&wire::cts_to_bytes(params, &cts[range])?)?;
        ch.flush()?;
    }
    let queries = received.into_iter().map(|cts| ReceivedQuery { len, l, cts }).collect();
    Ok((queries, down_all(&m, &shares, len, n, l)))
}

/// The answer of ciphertext `i` (chunk `i / k`, CRT prime `i % k`): `Σ q ⊠ SIMD(y)` over the
/// terms, masked by H2A-SIMD; returns the ciphertext to send and this side's slot share.
fn answer(
    sess: &HeSession,
    m: &CrtModulus,
    i: usize,
    terms: &[(&Ciphertext, &[u64])],
    l: u32,
    p: &mut Prg,
) -> Result<(Ciphertext, Vec<u64>), LinearError> {
    let params = &sess.params;
    let (n, k) = (params.n(), m.primes().len());
    let (c, j) = (i / k, i % k);
    let tj = m.primes()[j];
    let top = params.max_level();
    let mut acc: Option<Ciphertext> = None;
    let mut tmp = vec![0u64; k];
    for &(ct, y) in terms {
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
        match acc.as_mut() {
            None => acc = Some(ct.mul_plain(params, &pt)?),
            Some(a) => a.mul_plain_accumulate(params, ct, &pt)?,
        }
    }
    let mut ct = acc.ok_or_else(|| LinearError::BadShape("no terms".into()))?;
    let z0 = h2a::mask_simd(sess, &mut ct, terms.len(), p)?;
    let slots = params.decode_simd(&Plaintext::from_coeffs(params, &z0, j)?)?;
    Ok((ct, slots))
}

/// Query side: receives the response to its queries, frame by frame (each decrypted while the
/// next arrives), and returns its share `Down(u)`.
pub fn receive_response<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    q: SentQuery,
) -> Result<Vec<u64>, LinearError> {
    let params = &sess.params;
    let m = crt(params)?;
    let (n, k) = (params.n(), m.primes().len());
    let total = chunks(q.len, n) * k;
    let mut slots: Vec<Vec<u64>> = Vec::with_capacity(total);
    for range in wire::frames(total) {
        let cts = recv_frame(ch, params, &range)?;
        let part: Vec<Vec<u64>> = cts
            .par_iter()
            .zip(range)
            .map(|(c, i)| decrypt_one(sess, k, i, c))
            .collect::<Result<_, LinearError>>()?;
        slots.extend(part);
    }
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
        Role::Client => Ok(recv_and_respond(ch, sess, v.len(), l, 1, &[(QueryRef::Fresh(0), v)], prg)?.1),
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
            let qs = send_queries(ch, sess, &[x, y], l, prg)?;
            let (qx, qy) = match qs.as_slice() {
                [a, b] => (*a, *b),
                _ => return Err(LinearError::BadShape("expected two queries".into())),
            };
            let r = mul_reusing(ch, sess, QueryPair::Server(qx, qy), x, y, prg)?;
            Ok((r, Queries::Server(qs)))
        }
        Role::Client => {
            // q(x0) ⊠ y1 + q(y0) ⊠ x1, answered while the two queries arrive
            let terms = [(QueryRef::Fresh(0), y), (QueryRef::Fresh(1), x)];
            let (qs, r) = recv_and_respond(ch, sess, x.len(), l, 2, &terms, prg)?;
            let r = local_product(x, y, l, 1).zip(r).map(|(a, b)| a.wrapping_add(b) & mask(l)).collect();
            Ok((r, Queries::Client(qs)))
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
            let two_x: Vec<u64> = x.iter().map(|v| v.wrapping_mul(2) & mask(l)).collect();
            let (qs, r) = recv_and_respond(ch, sess, x.len(), l, 1, &[(QueryRef::Fresh(0), &two_x)], prg)?;
            Ok((
                local_product(x, x, l, 1)
                    .zip(r)
                    .map(|(a, b)| a.wrapping_add(b) & mask(l))
                    .collect(),
                Queries::Client(qs),
            ))
        }
    }
}
