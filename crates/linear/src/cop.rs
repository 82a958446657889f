//! Client-side outer product (COP; Nimbus, Li et al., NeurIPS 2024, §3.2 and Fig. 2–3;
//! `docs/notes/nimbus.md` §2) for `[X]·W`: the client's share × the server's static weight.
//!
//! BumbleBee's OLT ([`crate::matmul::matmul_shared_weight`]) has the client encrypt its share
//! `X_C` on every query and the server multiply by its plaintext weight. COP turns the roles
//! around, because the weight does not change between queries:
//!
//! 1. **Setup, once per weight** ([`cop_send_weights`] / [`cop_recv_weights`] or
//!    [`cop_recv_parts`]): the server encodes `W`'s blocks (`π_rhs`, the window encoding of
//!    Cheetah/BumbleBee §III) and sends them encrypted under **its own** key (seeded); the client
//!    keeps them, decoded in NTT form at the top level ([`weight_level`]) or, for a one-hot
//!    lookup, serialized until a query needs some of them ([`cop_lookup_cts`]). The client holds
//!    only RLWE ciphertexts under the server's key: `W` stays hidden by RLWE, with no flooding.
//! 2. **Online, one flight** ([`cop_client`] / [`cop_server`]): the client multiplies the stored
//!    ciphertexts by its plaintext blocks of `X_C`, compresses the block products with the
//!    server's Galois keys (InterLeave or PackLWEs, the OLT's own), re-randomises each result
//!    with `Enc_pk(0)` under the server's public key and masks it with a uniform `r̂ ∈ R_q`
//!    (H2A-Coeff, [`crate::h2a::mask_coeff`]), and sends it; the server decrypts its share and
//!    adds its local `X_S·W`. Nothing goes from the server to the client online.
//!
//! Circuit privacy (the client's share against the key owner): the response's `a`-part is
//! re-randomised by `Enc_pk(0)` (mandatory: without it `Σ X_C[i,j]·a_j` is linear in `X_C` and
//! the server knows every `a_j`), and the decrypted phase is uniform because `r̂` is uniform over
//! all of `R_q`, which hides the noise `Σ X_C·e` completely (the OLT's H2A argument with the
//! roles exchanged; `crate::h2a`). The weight ciphertexts are reused by every query; each
//! response draws its own `Enc_pk(0)` and `r̂` from the session's PRG.
//!
//! Deviation (documented): Nimbus's own encoding is row-wise with scalar × polynomial products
//! and a "right shift" compaction of the outputs; its exact layout is UNCONFIRMED (the paper's
//! body and the authors' COP kernel are not available, notes §2.1). We keep the OLT's window
//! encoding and compression, which gives the same message pattern (weights once, compact
//! outputs, one online flight) and lets the windows be chosen by the cost model of the online
//! phase ([`cop_windows`]).
//!
//! Output: shares of `X·W` mod `2^l` up to H2A-Coeff's rare LSB error, for `l` up to the bits of
//! the session's plaintext modulus `t = 2^b`.

use crate::krdy::{matmul_u64, Shape, Windows};
use crate::matmul::{check_ring, mask};
use crate::olt::{evaluate, lookup_blocks, open_response, plain_mask, recv_blocks, recv_frames, send_blocks, CtSet, Side};
use crate::parse_mat::ResultLayout;
use crate::session::HeSession;
use crate::window::{CostModel, OltPlan, Variant, MAX_HELD_PRODUCTS};
use crate::LinearError;
use nectar_he::Ciphertext;
use nectar_math::Prg;
use nectar_net::Channel;
use rayon::prelude::*;
use std::collections::HashMap;

/// Largest ratio of a plan's weight ciphertexts to the fewest any window gives for the shape
/// (AGREEMENT: both parties choose the windows): [`cop_windows`] trades at most this much setup
/// (and client memory) for a cheaper online phase; 1: the densest packing only.
pub const SETUP_FACTOR: usize = 1;

/// Rows the windows of a weight are priced at ([`cop_windows`]; AGREEMENT). With `k_w = 1` the
/// products and automorphisms of every window scale alike with the rows, so the choice hardly
/// depends on it.
pub const REF_ROWS: usize = 64;

/// The windows a weight `m×n` is encrypted with (AGREEMENT): `k_w = 1` — the weight's
/// ciphertexts then serve queries of any row count (and a client's cache serves any later
/// session), and a one-hot lookup has exactly one nonzero block per row
/// ([`cop_lookup_client`]) — and `(m_w, n_w)` with the lowest **online** cost under `c` at
/// [`REF_ROWS`] rows (the returned ciphertexts, the client's automorphisms, products and
/// encodings) among those with the fewest weight ciphertexts `m'·n'` (up to [`SETUP_FACTOR`]×).
pub fn cop_windows(m: usize, n: usize, degree: usize, c: &CostModel) -> Result<Windows, LinearError> {
    if !degree.is_power_of_two() {
        return Err(LinearError::BadParams(format!("ring degree {degree} is not a power of two")));
    }
    let shape = Shape::new(REF_ROWS, m, n)?;
    let mut plans = Vec::new();
    let mut mw = 1;
    while mw <= degree && mw <= shape.m.next_power_of_two() {
        let nw = shape.n.min(degree / mw);
        let p = cop_plan(shape, Windows { kw: 1, mw, nw }, degree)?;
        if p.held_products() <= MAX_HELD_PRODUCTS {
            plans.push(p);
        }
        mw *= 2;
    }
    let fewest = plans.iter().map(|p| p.sent_cts).min().ok_or_else(|| LinearError::BadShape(format!("{shape:?}: no window fits N = {degree}")))?;
    plans
        .into_iter()
        .filter(|p| p.sent_cts <= SETUP_FACTOR * fewest)
        .map(|p| (online_cost(&p, c), p))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p.windows)
        .ok_or_else(|| LinearError::BadShape(format!("{shape:?}: no COP plan")))
}

/// The COP plan of `shape` (`k×m` times `m×n`) with `windows` at ring degree `degree`: the OLT
/// plan with the server (the weight, `rhs`) as the encrypting party, whose `m'·n'` blocks are
/// the setup's ciphertexts.
pub fn cop_plan(shape: Shape, windows: Windows, degree: usize) -> Result<OltPlan, LinearError> {
    let mut plan = OltPlan::new(shape, windows, degree, Variant::Interleave)?;
    let (_, mb, nb) = windows.blocks(shape);
    plan.rhs_encrypts = true;
    plan.sent_cts = mb * nb;
    Ok(plan)
}

/// The online cost of a COP plan under `c`: [`OltPlan::cost`] without the setup's ciphertexts.
pub fn online_cost(p: &OltPlan, c: &CostModel) -> f64 {
    let (kb, mb, _) = p.windows.blocks(p.shape);
    c.per_ct * p.returned_cts as f64
        + c.per_auto * p.autos as f64
        + c.per_mult * p.mults as f64
        + c.per_encode * (kb * mb) as f64
        + c.per_byte * (p.returned_cts * c.ct_bytes.response) as f64
}

fn check_plan(plan: &OltPlan, sess: &HeSession) -> Result<(), LinearError> {
    if !plan.rhs_encrypts {
        return Err(LinearError::BadParams("a COP plan has the weight's holder encrypt (cop_plan)".into()));
    }
    if plan.degree != sess.degree() {
        return Err(LinearError::BadParams(format!("plan for N = {}, session N = {}", plan.degree, sess.degree())));
    }
    Ok(())
}

fn layout(plan: &OltPlan) -> ResultLayout {
    ResultLayout { shape: plan.shape, windows: plan.windows, degree: plan.degree, compression: plan.compression, batch: 1 }
}

/// Server, setup: `W` (`m×n`, row-major, ring elements) encrypted under the server's key and
/// sent (`plan.sent_cts` seeded ciphertexts, one flight).
pub fn cop_send_weights<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, plan: &OltPlan, w: &[u64], prg: &mut Prg) -> Result<(), LinearError> {
    check_plan(plan, sess)?;
    let s = plan.shape;
    if w.len() != s.m * s.n {
        return Err(LinearError::BadShape(format!("W: {} entries, expected {}", w.len(), s.m * s.n)));
    }
    send_blocks(ch, sess, plan, Side::Rhs, &[w], prg)
}

/// The client's copy of one weight's encryption ([`cop_recv_weights`]): the plan and its
/// `m'·n'` ciphertexts under the server's key, in NTT form at the top level.
pub struct CopWeights {
    windows: Windows,
    /// `(m, n)` of the weight.
    dims: (usize, usize),
    level: usize,
    cts: Vec<Ciphertext>,
}

impl CopWeights {
    /// Ciphertexts held.
    pub fn len(&self) -> usize {
        self.cts.len()
    }
    /// Whether it holds none (never, for a received weight).
    pub fn is_empty(&self) -> bool {
        self.cts.is_empty()
    }
    /// Bytes the ciphertexts take in memory (both polynomials, every prime of their level).
    pub fn memory_bytes(&self, sess: &HeSession) -> usize {
        self.cts.len() * 2 * self.level * sess.degree() * 8
    }
}

/// Client, setup: receives the weight ciphertexts of `plan` and keeps them ready for the
/// products (top level, NTT form: the client's plaintext blocks are uniform shares, whose
/// products need the top level's noise room, `crate::olt::product_level`).
pub fn cop_recv_weights<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, plan: &OltPlan) -> Result<CopWeights, LinearError> {
    check_plan(plan, sess)?;
    let level = sess.params.max_level();
    let cts = recv_blocks(ch, &sess.params, plan.sent_cts, sess.params.max_level(), level)?;
    Ok(CopWeights { windows: plan.windows, dims: (plan.shape.m, plan.shape.n), level, cts })
}

/// Client, setup: the weight's ciphertexts as received, one serialized ciphertext per entry,
/// not yet decoded (to cache them, [`crate::cop_cache::ClientCache::store`], and to decode all
/// with [`cop_weights_from_parts`] or, for a lookup, some with [`cop_lookup_cts`]).
pub fn cop_recv_parts<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, plan: &OltPlan) -> Result<Vec<Vec<u8>>, LinearError> {
    check_plan(plan, sess)?;
    let frames = recv_frames(ch, plan.sent_cts)?;
    let mut parts = Vec::with_capacity(plan.sent_cts);
    for (range, f) in crate::wire::frames(plan.sent_cts).zip(&frames) {
        parts.extend(crate::wire::parts_of_frame(f, range.len())?);
    }
    Ok(parts)
}

/// The level the client keeps a weight's ciphertexts and computes its products at (LOCAL: the
/// server sees only the responses, at the response level): the top level for uniform shares
/// (their products need its noise room, `crate::olt::product_level`), the response level for a
/// one-hot lookup ([`cop_lookup_client`]): each product then holds one ciphertext shifted by a
/// monomial, whose noise is the switched fresh noise (`σ ≈ 21`, against `2^−22·q_L/t = 2^27`
/// allowed at `Params::nectar_olt_narrow`'s response level).
pub fn weight_level(sess: &HeSession, lookup: bool) -> usize {
    if lookup {
        crate::h2a::olt_response_level(&sess.params)
    } else {
        sess.params.max_level()
    }
}

fn decode(sess: &HeSession, part: &[u8], level: usize) -> Result<Ciphertext, LinearError> {
    let mut c = crate::wire::ct_from_part(&sess.params, part)?;
    c.mod_switch_to(&sess.params, level)?;
    c.to_ntt(&sess.params);
    Ok(c)
}

/// Client: the weight of `plan` from its serialized ciphertexts ([`cop_recv_parts`], or cached),
/// all decoded, at the top level.
pub fn cop_weights_from_parts(sess: &HeSession, plan: &OltPlan, parts: &[Vec<u8>]) -> Result<CopWeights, LinearError> {
    check_plan(plan, sess)?;
    if parts.len() != plan.sent_cts {
        return Err(LinearError::Malformed(format!("{} weight ciphertexts for a plan of {}", parts.len(), plan.sent_cts)));
    }
    let level = weight_level(sess, false);
    let cts = parts.par_iter().map(|p| decode(sess, p, level)).collect::<Result<_, _>>()?;
    Ok(CopWeights { windows: plan.windows, dims: (plan.shape.m, plan.shape.n), level, cts })
}

/// Client, a lookup: which of the weight's ciphertexts the one-hot rows `x` use (per row and
/// output block, repeated where rows share a block: their count is `k·n'` whatever the ids),
/// for [`cop_lookup_cts`].
pub fn cop_lookup_blocks(sess: &HeSession, plan: &OltPlan, x: &[u64]) -> Result<Vec<usize>, LinearError> {
    check_plan(plan, sess)?;
    let s = plan.shape;
    if plan.windows.kw != 1 || x.len() != s.k * s.m {
        return Err(LinearError::BadShape(format!("a COP lookup of {} entries with windows {:?} for {s:?}", x.len(), plan.windows)));
    }
    Ok(lookup_blocks(plan, Side::Lhs, x, plain_mask(&sess.params)?))
}

/// Client, a lookup: the ciphertexts `idx` ([`cop_lookup_blocks`]) decoded from `parts[i]` (the
/// serialized ciphertext of `idx[i]`) at the response level ([`weight_level`]); every part is
/// decoded, repeats too, so the work is the same for every input of one length.
pub fn cop_lookup_cts(sess: &HeSession, idx: &[usize], parts: &[Vec<u8>]) -> Result<HashMap<usize, Ciphertext>, LinearError> {
    if idx.len() != parts.len() {
        return Err(LinearError::BadShape(format!("{} ciphertexts for {} indices", parts.len(), idx.len())));
    }
    let level = weight_level(sess, true);
    let cts: Vec<Ciphertext> = parts.par_iter().map(|p| decode(sess, p, level)).collect::<Result<_, _>>()?;
    Ok(idx.iter().copied().zip(cts).collect())
}

/// Client, online: its share `x` (`k×m`) times the stored weight under `plan` (the weight's
/// windows, any `k`), masked and sent (one flight). Returns the client's `k×n` share mod `2^l`.
pub fn cop_client<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, w: &CopWeights, plan: &OltPlan, x: &[u64], l: u32, prg: &mut Prg) -> Result<Vec<u64>, LinearError> {
    check_plan(plan, sess)?;
    check_ring(sess, l)?;
    let s = plan.shape;
    if plan.windows != w.windows || (s.m, s.n) != w.dims || plan.sent_cts != w.cts.len() {
        return Err(LinearError::BadShape(format!("a {s:?} plan with windows {:?} for a weight of {:?} encrypted with {:?}", plan.windows, w.dims, w.windows)));
    }
    if x.len() != s.k * s.m {
        return Err(LinearError::BadShape(format!("X share: {} entries, expected {}", x.len(), s.k * s.m)));
    }
    let out = evaluate(ch, sess, plan, Side::Lhs, &[x], &layout(plan), prg, None, CtSet::All(&w.cts), w.level, false)?;
    Ok(out.into_iter().map(|v| v & mask(l)).collect())
}

/// [`cop_client`] for one-hot rows `x` (a token-embedding lookup, the client's one-hot as its
/// share): only the products of the nonzero blocks, with the weight ciphertexts `cts` of
/// [`cop_lookup_cts`] (`dims` = the weight's `(m, n)`, `windows` as it was encrypted with). The
/// client computes `k·n'` block products instead of `k·m'·n'`; with `k_w = 1` every row has
/// exactly one nonzero block, so the work, hence the response's timing, is the same for every
/// input of one length.
#[allow(clippy::too_many_arguments)]
pub fn cop_lookup_client<C: Channel + ?Sized>(
    ch: &mut C,
    sess: &HeSession,
    plan: &OltPlan,
    cts: &HashMap<usize, Ciphertext>,
    x: &[u64],
    l: u32,
    prg: &mut Prg,
) -> Result<Vec<u64>, LinearError> {
    check_plan(plan, sess)?;
    check_ring(sess, l)?;
    let s = plan.shape;
    if plan.windows.kw != 1 || x.len() != s.k * s.m {
        return Err(LinearError::BadShape(format!("a COP lookup of {} entries with windows {:?} for {s:?}", x.len(), plan.windows)));
    }
    let set = CtSet::Some { cts, len: plan.sent_cts };
    let out = evaluate(ch, sess, plan, Side::Lhs, &[x], &layout(plan), prg, None, set, weight_level(sess, true), true)?;
    Ok(out.into_iter().map(|v| v & mask(l)).collect())
}

/// Server, online: receives the client's masked products, decrypts its share of `X_C·W` and
/// adds its local `X_S·W` (`x` its share, `w` the weight). Returns the server's `k×n` share mod
/// `2^l`.
pub fn cop_server<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, plan: &OltPlan, x: &[u64], w: &[u64], l: u32) -> Result<Vec<u64>, LinearError> {
    check_plan(plan, sess)?;
    check_ring(sess, l)?;
    let s = plan.shape;
    if x.len() != s.k * s.m || w.len() != s.m * s.n {
        return Err(LinearError::BadShape(format!("X share {} / W {} entries for {s:?}", x.len(), w.len())));
    }
    // The local product first: the client is still computing its products, so this runs in
    // their time rather than after the response, while the client would wait for it.
    let local = matmul_u64(x, w, s);
    let r = open_response(ch, sess, &layout(plan))?;
    Ok(r.iter().zip(local).map(|(a, b)| a.wrapping_add(b) & mask(l)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_he::Params;
    use nectar_net::{MemChannel, Role};
    use rand_core::RngCore;

    fn run(k: usize, m: usize, n: usize, params: Params, l: u32) {
        let shape = Shape::new(k, m, n).unwrap();
        let windows = cop_windows(m, n, params.n(), &CostModel::balanced_olt()).unwrap();
        let plan = cop_plan(shape, windows, params.n()).unwrap();
        // A later query of other rows on the same encryption.
        let k2 = k + 3;
        let plan2 = cop_plan(Shape::new(k2, m, n).unwrap(), windows, params.n()).unwrap();
        assert!(plan.rhs_encrypts);
        let mut prg = Prg::new([7; 16]);
        let m_l = mask(l);
        let rand = |prg: &mut Prg, len: usize| (0..len).map(|_| prg.next_u64() & m_l).collect::<Vec<u64>>();
        let (x, w) = (rand(&mut prg, k * m), rand(&mut prg, m * n));
        let xs = rand(&mut prg, k * m);
        let xc: Vec<u64> = x.iter().zip(&xs).map(|(a, b)| a.wrapping_sub(*b) & m_l).collect();
        let (x2, xs2) = (rand(&mut prg, k2 * m), rand(&mut prg, k2 * m));
        let xc2: Vec<u64> = x2.iter().zip(&xs2).map(|(a, b)| a.wrapping_sub(*b) & m_l).collect();
        let (mut c0, mut c1) = MemChannel::pair();
        let p1 = params.clone();
        let (s0, s1) = std::thread::scope(|sc| {
            let h = sc.spawn(move || {
                let mut prg = Prg::new([2; 16]);
                let sess = HeSession::setup_server_key(&mut c1, Role::Client, p1, &mut prg).unwrap();
                let wts = cop_recv_weights(&mut c1, &sess, &plan).unwrap();
                assert_eq!(wts.len(), plan.sent_cts);
                // Three queries on one encryption of the weight.
                let a = cop_client(&mut c1, &sess, &wts, &plan, &xc, l, &mut prg).unwrap();
                let b = cop_client(&mut c1, &sess, &wts, &plan, &xc, l, &mut prg).unwrap();
                let c = cop_client(&mut c1, &sess, &wts, &plan2, &xc2, l, &mut prg).unwrap();
                (a, b, c)
            });
            let mut prg = Prg::new([3; 16]);
            let sess = HeSession::setup_server_key(&mut c0, Role::Server, params, &mut prg).unwrap();
            cop_send_weights(&mut c0, &sess, &plan, &w, &mut prg).unwrap();
            let a = cop_server(&mut c0, &sess, &plan, &xs, &w, l).unwrap();
            let b = cop_server(&mut c0, &sess, &plan, &xs, &w, l).unwrap();
            let c = cop_server(&mut c0, &sess, &plan2, &xs2, &w, l).unwrap();
            ((a, b, c), h.join().unwrap())
        });
        let want: Vec<u64> = matmul_u64(&x, &w, shape).into_iter().map(|v| v & m_l).collect();
        let want2: Vec<u64> = matmul_u64(&x2, &w, plan2.shape).into_iter().map(|v| v & m_l).collect();
        for (srv, cli, want) in [(&s0.0, &s1.0, &want), (&s0.1, &s1.1, &want), (&s0.2, &s1.2, &want2)] {
            let off = srv
                .iter()
                .zip(cli)
                .zip(want.iter())
                .filter(|((a, b), c)| {
                    let d = a.wrapping_add(**b).wrapping_sub(**c) & m_l;
                    d != 0 && d != 1 && d != m_l
                })
                .count();
            assert_eq!(off, 0, "COP {k}x{m}x{n}: entries off by more than one LSB");
        }
        // Fresh masks per query: the two client shares differ.
        assert_ne!(s1.0, s1.1);
    }

    #[test]
    fn cop_computes_the_product_on_shares() {
        run(3, 20, 7, Params::bumblebee_olt(), 64);
        run(16, 64, 96, Params::bumblebee_olt(), 64);
    }

    #[test]
    fn cop_noise_holds_at_a_wide_inner_dimension() {
        run(2, 3072, 24, Params::nectar_olt_narrow(), 51);
        run(2, 3072, 24, Params::bumblebee_olt(), 64);
    }

    #[test]
    fn cop_in_the_narrow_olt_ring() {
        let p = Params::nectar_olt_narrow();
        let b = crate::h2a::plain_bits(&p, 0);
        run(8, 48, 40, p, b);
    }

    #[test]
    fn cop_lookup_of_one_hot_rows() {
        let params = Params::nectar_olt_narrow();
        let (k, m, n) = (5, 300, 24);
        let shape = Shape::new(k, m, n).unwrap();
        let windows = cop_windows(m, n, params.n(), &CostModel::balanced_olt()).unwrap();
        assert_eq!(windows.kw, 1);
        let plan = cop_plan(shape, windows, params.n()).unwrap();
        let mut prg = Prg::new([9; 16]);
        let w: Vec<u64> = (0..m * n).map(|_| prg.next_u64() & mask(51)).collect();
        let ids = [7usize, 299, 7, 0, 150];
        let mut x = vec![0u64; k * m];
        for (i, &t) in ids.iter().enumerate() {
            x[i * m + t] = 1;
        }
        let (mut c0, mut c1) = MemChannel::pair();
        let p1 = params.clone();
        let xc = x.clone();
        let (srv, cli) = std::thread::scope(|sc| {
            let h = sc.spawn(move || {
                let mut prg = Prg::new([4; 16]);
                let sess = HeSession::setup_server_key(&mut c1, Role::Client, p1, &mut prg).unwrap();
                let parts = cop_recv_parts(&mut c1, &sess, &plan).unwrap();
                assert_eq!(parts.len(), plan.sent_cts);
                let idx = cop_lookup_blocks(&sess, &plan, &xc).unwrap();
                // One block per row and output block, repeats included.
                assert_eq!(idx.len(), k * plan.windows.blocks(plan.shape).2);
                let some: Vec<Vec<u8>> = idx.iter().map(|&i| parts[i].clone()).collect();
                let cts = cop_lookup_cts(&sess, &idx, &some).unwrap();
                cop_lookup_client(&mut c1, &sess, &plan, &cts, &xc, 51, &mut prg).unwrap()
            });
            let mut prg = Prg::new([5; 16]);
            let sess = HeSession::setup_server_key(&mut c0, Role::Server, params, &mut prg).unwrap();
            cop_send_weights(&mut c0, &sess, &plan, &w, &mut prg).unwrap();
            (cop_server(&mut c0, &sess, &plan, &vec![0; k * m], &w, 51).unwrap(), h.join().unwrap())
        });
        for (i, &t) in ids.iter().enumerate() {
            for j in 0..n {
                let got = srv[i * n + j].wrapping_add(cli[i * n + j]) & mask(51);
                let d = got.wrapping_sub(w[t * n + j]) & mask(51);
                assert!(d == 0 || d == 1 || d == mask(51), "row {i} col {j}");
            }
        }
    }

    #[test]
    fn the_plan_keeps_the_setup_bounded() {
        let c = CostModel::balanced_olt();
        for &(k, m, n) in &[(128, 768, 768), (128, 768, 3072), (128, 3072, 768), (32, 384, 1536), (1, 7, 3)] {
            let s = Shape::new(k, m, n).unwrap();
            let p = cop_plan(s, cop_windows(m, n, 8192, &c).unwrap(), 8192).unwrap();
            assert!(p.rhs_encrypts);
            let w = p.windows;
            assert_eq!(w.kw, 1);
            assert!(w.kw * w.mw * w.nw <= 8192);
            let (_, mb, nb) = w.blocks(s);
            assert_eq!(p.sent_cts, mb * nb);
            assert!(p.sent_cts <= SETUP_FACTOR * (m * n).div_ceil(8192).max(1) * 2, "{s:?}: {} weight cts", p.sent_cts);
        }
    }
}
