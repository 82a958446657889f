//! Client-side outer product (COP; Nimbus, Li et al., NeurIPS 2024, §3.2 and Fig. 2–3;
//! `docs/notes/nimbus.md` §2) for `[X]·W`: the client's share × the server's static weight.
//!
//! BumbleBee's OLT ([`crate::matmul::matmul_shared_weight`]) has the client encrypt its share
//! `X_C` on every query and the server multiply by its plaintext weight. COP turns the roles
//! around, because the weight does not change between queries:
//!
//! 1. **Setup, once per weight** ([`cop_send_weights`] / [`cop_recv_weights`]): the server
//!    encodes `W`'s blocks (`π_rhs`, the window encoding of Cheetah/BumbleBee §III) and sends
//!    them encrypted under **its own** key (seeded); the client keeps them in NTT form at the top
//!    level. The client holds only RLWE ciphertexts under the server's key: `W` stays hidden by
//!    RLWE, with no flooding.
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
//! phase ([`cop_plan`]).
//!
//! Output: shares of `X·W` mod `2^l` up to H2A-Coeff's rare LSB error, for `l` up to the bits of
//! the session's plaintext modulus `t = 2^b`.

use crate::krdy::{matmul_u64, Shape, Windows};
use crate::olt::{evaluate, open_response, recv_blocks, send_blocks, Side};
use crate::parse_mat::ResultLayout;
use crate::session::HeSession;
use crate::window::{Compression, CostModel, OltPlan, Variant, MAX_HELD_PRODUCTS};
use crate::LinearError;
use nectar_he::Ciphertext;
use nectar_math::Prg;
use nectar_net::Channel;

/// Largest ratio of a plan's weight ciphertexts to the fewest any window gives for the shape
/// (AGREEMENT: both parties choose the plan): [`cop_plan`] trades at most this much setup for a
/// cheaper online phase.
pub const SETUP_FACTOR: usize = 4;

/// The COP plan of `shape` (`k×m` times `m×n`) at ring degree `degree`: the OLT windows whose
/// **online** cost under `c` (the returned ciphertexts, the client's automorphisms, products and
/// encodings) is lowest among those whose weight ciphertexts `m'·n'` stay within
/// [`SETUP_FACTOR`] of the fewest, with the server as the encrypting party. AGREEMENT.
pub fn cop_plan(shape: Shape, degree: usize, c: &CostModel) -> Result<OltPlan, LinearError> {
    if !degree.is_power_of_two() {
        return Err(LinearError::BadParams(format!("ring degree {degree} is not a power of two")));
    }
    let mut plans = Vec::new();
    for kw in (0..=degree.trailing_zeros()).map(|e| 1usize << e).filter(|&kw| kw <= shape.k.next_power_of_two()) {
        let mut mw = 1;
        while kw * mw <= degree && mw <= shape.m.next_power_of_two() {
            let nw = shape.n.min(degree / (kw * mw));
            if nw >= 1 {
                let p = as_cop(OltPlan::new(shape, Windows { kw, mw, nw }, degree, Variant::Interleave)?);
                if p.held_products() <= MAX_HELD_PRODUCTS {
                    plans.push(p);
                }
            }
            mw *= 2;
        }
    }
    let fewest = plans.iter().map(|p| p.sent_cts).min().ok_or_else(|| LinearError::BadShape(format!("{shape:?}: no window fits N = {degree}")))?;
    plans
        .into_iter()
        .filter(|p| p.sent_cts <= SETUP_FACTOR * fewest)
        .map(|p| (online_cost(&p, c), p))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p)
        .ok_or_else(|| LinearError::BadShape(format!("{shape:?}: no COP plan")))
}

/// `plan` with the server (the weight, `rhs`) as the encrypting party: its `m'·n'` blocks are
/// the setup's ciphertexts.
fn as_cop(mut plan: OltPlan) -> OltPlan {
    let (_, mb, nb) = plan.windows.blocks(plan.shape);
    plan.rhs_encrypts = true;
    plan.sent_cts = mb * nb;
    plan
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

fn mask(l: u32) -> u64 {
    if l >= 64 {
        u64::MAX
    } else {
        (1u64 << l) - 1
    }
}

/// Shares of `Z_{2^l}` need a session whose plaintext modulus is `t = 2^b`, `b ≥ l`.
fn check_ring(sess: &HeSession, l: u32) -> Result<(), LinearError> {
    let tb = crate::h2a::plain_bits(&sess.params, 0);
    if l > tb || !sess.params.plain_modulus(0).is_power_of_two() {
        return Err(LinearError::BadParams(format!("shares of Z_2^{l} need t = 2^b with b >= {l}; this session's t has {tb} bits")));
    }
    Ok(())
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
    plan: OltPlan,
    level: usize,
    cts: Vec<Ciphertext>,
}

impl CopWeights {
    /// The plan the weight was encrypted for.
    pub fn plan(&self) -> &OltPlan {
        &self.plan
    }
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
    let cts = recv_blocks(ch, &sess.params, plan.sent_cts, level)?;
    Ok(CopWeights { plan: *plan, level, cts })
}

/// Client, online: its share `x` (`k×m`) times the stored weight, masked and sent (one
/// flight). Returns the client's `k×n` share mod `2^l`.
pub fn cop_client<C: Channel + ?Sized>(ch: &mut C, sess: &HeSession, w: &CopWeights, x: &[u64], l: u32, prg: &mut Prg) -> Result<Vec<u64>, LinearError> {
    check_plan(&w.plan, sess)?;
    check_ring(sess, l)?;
    let s = w.plan.shape;
    if x.len() != s.k * s.m {
        return Err(LinearError::BadShape(format!("X share: {} entries, expected {}", x.len(), s.k * s.m)));
    }
    let out = evaluate(ch, sess, &w.plan, Side::Lhs, &[x], &layout(&w.plan), prg, None, &w.cts, w.level)?;
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
    let r = open_response(ch, sess, &layout(plan))?;
    let local = matmul_u64(x, w, s);
    Ok(r.iter().zip(local).map(|(a, b)| a.wrapping_add(b) & mask(l)).collect())
}

/// Whether a plan returns its products compressed (for reports).
pub fn compression_name(p: &OltPlan) -> &'static str {
    match p.compression {
        Compression::None => "none",
        Compression::Interleave => "interleave",
        Compression::PackLwes => "packlwes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_he::Params;
    use nectar_net::{MemChannel, Role};
    use rand_core::RngCore;

    fn run(k: usize, m: usize, n: usize, params: Params, l: u32) {
        let shape = Shape::new(k, m, n).unwrap();
        let plan = cop_plan(shape, params.n(), &CostModel::balanced_olt()).unwrap();
        assert!(plan.rhs_encrypts);
        let mut prg = Prg::new([7; 16]);
        let m_l = mask(l);
        let rand = |prg: &mut Prg, len: usize| (0..len).map(|_| prg.next_u64() & m_l).collect::<Vec<u64>>();
        let (x, w) = (rand(&mut prg, k * m), rand(&mut prg, m * n));
        let xs = rand(&mut prg, k * m);
        let xc: Vec<u64> = x.iter().zip(&xs).map(|(a, b)| a.wrapping_sub(*b) & m_l).collect();
        let (mut c0, mut c1) = MemChannel::pair();
        let p1 = params.clone();
        let (s0, s1) = std::thread::scope(|sc| {
            let h = sc.spawn(move || {
                let mut prg = Prg::new([2; 16]);
                let sess = HeSession::setup(&mut c1, Role::Client, p1, true, &mut prg).unwrap();
                let wts = cop_recv_weights(&mut c1, &sess, &plan).unwrap();
                assert_eq!(wts.len(), plan.sent_cts);
                // Two queries on one encryption of the weight.
                let a = cop_client(&mut c1, &sess, &wts, &xc, l, &mut prg).unwrap();
                let b = cop_client(&mut c1, &sess, &wts, &xc, l, &mut prg).unwrap();
                (a, b)
            });
            let mut prg = Prg::new([3; 16]);
            let sess = HeSession::setup(&mut c0, Role::Server, params, true, &mut prg).unwrap();
            cop_send_weights(&mut c0, &sess, &plan, &w, &mut prg).unwrap();
            let a = cop_server(&mut c0, &sess, &plan, &xs, &w, l).unwrap();
            let b = cop_server(&mut c0, &sess, &plan, &xs, &w, l).unwrap();
            ((a, b), h.join().unwrap())
        });
        let want: Vec<u64> = matmul_u64(&x, &w, shape).into_iter().map(|v| v & m_l).collect();
        for (srv, cli) in [(&s0.0, &s1.0), (&s0.1, &s1.1)] {
            let off = srv
                .iter()
                .zip(cli)
                .zip(&want)
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
    fn cop_in_the_narrow_olt_ring() {
        let p = Params::nectar_olt_narrow();
        let b = crate::h2a::plain_bits(&p, 0);
        run(8, 48, 40, p, b);
    }

    #[test]
    fn the_plan_keeps_the_setup_bounded() {
        let c = CostModel::balanced_olt();
        for &(k, m, n) in &[(128, 768, 768), (128, 768, 3072), (128, 3072, 768), (32, 384, 1536), (1, 7, 3)] {
            let s = Shape::new(k, m, n).unwrap();
            let p = cop_plan(s, 8192, &c).unwrap();
            assert!(p.rhs_encrypts);
            let w = p.windows;
            assert!(w.kw * w.mw * w.nw <= 8192);
            let (_, mb, nb) = w.blocks(s);
            assert_eq!(p.sent_cts, mb * nb);
            assert!(p.sent_cts <= SETUP_FACTOR * (m * n).div_ceil(8192).max(1) * 2, "{s:?}: {} weight cts", p.sent_cts);
        }
    }
}
