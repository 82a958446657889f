//! Benchmarks of the linear protocols for `nectar bench linear` (BumbleBee Table II / VII).
//!
//! Both parties run in this process over a [`MemChannel`] pair, optionally wrapped in
//! [`Simulated`] with a LAN/WAN [`LinkModel`]. Key generation and the exchange of public/Galois
//! keys are excluded (as in BumbleBee Table II); seconds are wall-clock from the end of the
//! setup to the end of the slower party; bytes are payload plus frame headers as counted by the
//! channels.

use nectar_he::keys::interleave_galois_elements;
use nectar_he::{Ciphertext, Params, PlainNtt, Plaintext, SecretKey};
use nectar_linear::bole;
use nectar_linear::interleave::{interleave, pack_lwes};
use nectar_linear::krdy::{matmul_u64, Shape, Windows};
use nectar_linear::matmul::{batch_matmul_shared_shared, matmul_shared_weight};
use nectar_linear::olt::{olt, CtRing, Side};
use nectar_linear::parse_mat::ResultLayout;
use nectar_linear::session::HeSession;
use nectar_linear::cop::{cop_client, cop_plan, cop_recv_weights, cop_send_weights, cop_server, cop_windows, CopWeights};
use nectar_linear::window::{Compression, CostModel, CtBytes, OltPlan, Variant};
use nectar_linear::LinearError;
use nectar_math::Prg;
use nectar_net::{linked_pair, Channel, LinkModel, Role, Stats};
use rand_core::RngCore;
use std::time::Instant;

/// Which protocol to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Olt,
    Matmul,
    BatchMatmul,
    Bole,
    Mul,
    Square,
    /// Nimbus's COP (`nectar_linear::cop`): the weight's encryption (setup, reported apart) and
    /// one online product `[X]·W`.
    Cop,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "olt" => Op::Olt,
            "matmul" => Op::Matmul,
            "batch_matmul" => Op::BatchMatmul,
            "bole" => Op::Bole,
            "mul" => Op::Mul,
            "square" => Op::Square,
            "cop" => Op::Cop,
            _ => return None,
        })
    }
    pub fn name(&self) -> &'static str {
        match self {
            Op::Olt => "olt",
            Op::Matmul => "matmul",
            Op::BatchMatmul => "batch_matmul",
            Op::Bole => "bole",
            Op::Mul => "mul",
            Op::Square => "square",
            Op::Cop => "cop",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LinearBenchSpec {
    pub op: Op,
    /// `k, m, n` for the matrix ops; `[size]` for bole/mul/square.
    pub shape: Vec<usize>,
    /// Number of products for `BatchMatmul`.
    pub heads: usize,
    pub variant: Variant,
    /// `None`: no simulated link.
    pub net: Option<LinkModel>,
    /// Force partition windows instead of the chooser's.
    pub windows: Option<Windows>,
    /// Ring width of the shares.
    pub l: u32,
    /// Reconstruct the output and compare it with the plaintext result.
    pub verify: bool,
    /// The matrix ops under [`Params::nectar_olt_narrow`] (`olt-ring = narrow`: `t = 2^51`,
    /// shares of at most 51 bits) instead of [`Params::bumblebee_olt`].
    pub narrow: bool,
}

impl LinearBenchSpec {
    /// The CLI's arguments: `op` in `olt, matmul, batch_matmul, bole, mul, square`; `shape`
    /// `"k,m,n"` for the matrix ops or `"size"` for the element-wise ones; `variant` in `krdy,
    /// krdy_plus, interleave`; `net` in `none, lan, wan`; `heads` for `batch_matmul`; `l` the ring
    /// width (64 in the paper's benchmarks).
    pub fn parse(
        op: &str,
        shape: &str,
        variant: &str,
        net: &str,
        heads: usize,
        l: u32,
    ) -> Result<Self, LinearError> {
        let op =
            Op::parse(op).ok_or_else(|| LinearError::BadParams(format!("unknown op {op:?}")))?;
        let shape: Vec<usize> = shape
            .split(',')
            .map(|x| x.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|e| LinearError::BadShape(format!("{shape:?}: {e}")))?;
        let want = match op {
            Op::Olt | Op::Matmul | Op::BatchMatmul | Op::Cop => 3,
            _ => 1,
        };
        if shape.len() != want || shape.contains(&0) {
            return Err(LinearError::BadShape(format!(
                "{} needs {want} positive dimension(s)",
                op.name()
            )));
        }
        let variant = Variant::parse(variant)
            .ok_or_else(|| LinearError::BadParams(format!("unknown variant {variant:?}")))?;
        let net = LinkModel::parse(net).map_err(LinearError::BadParams)?;
        if l == 0 || l > 64 {
            return Err(LinearError::BadParams(format!("ring width {l}")));
        }
        Ok(LinearBenchSpec {
            op,
            shape,
            heads: heads.max(1),
            variant,
            net,
            windows: None,
            l,
            verify: true,
            narrow: false,
        })
    }

    /// The matrix ops under nectar's narrow OLT parameters (`olt-ring = narrow`), on shares of
    /// `Z_{2^min(l, 51)}`.
    pub fn with_narrow_ring(mut self) -> Self {
        self.narrow = true;
        self.l = self.l.min(Params::OLT_NARROW_BITS);
        self
    }

    /// Fixes the windows to the chooser's choice under the cost model `c` (e.g.
    /// [`CostModel::lan_commodity`]) instead of the default model's; element-wise ops are
    /// returned unchanged. Both parties of the bench use the same windows (AGREEMENT).
    pub fn with_cost_model(mut self, c: &CostModel) -> Result<Self, LinearError> {
        if let (Op::Olt | Op::Matmul | Op::BatchMatmul, [k, m, n]) = (self.op, &self.shape[..]) {
            let shape = Shape::new(*k, *m, *n)?;
            let degree = Params::bumblebee_olt().n();
            self.windows = Some(OltPlan::choose(shape, degree, self.variant, c)?.windows);
        }
        Ok(self)
    }

    /// Fixes the windows to `kw,mw,nw` (a matrix op only; checked against `N` and, unless the
    /// variant is plain KRDY, `m_w` a power of two).
    pub fn with_windows(mut self, w: &str) -> Result<Self, LinearError> {
        if !matches!(self.op, Op::Olt | Op::Matmul | Op::BatchMatmul | Op::Cop) {
            return Err(LinearError::BadParams(format!("--windows needs a matrix op, not {}", self.op.name())));
        }
        let v: Vec<usize> = w
            .split(',')
            .map(|x| x.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|e| LinearError::BadParams(format!("windows {w:?}: {e}")))?;
        let [kw, mw, nw] = v[..] else {
            return Err(LinearError::BadParams(format!("windows {w:?}: kw,mw,nw expected")));
        };
        let degree = Params::bumblebee_olt().n();
        self.windows = Some(Windows::new(kw, mw, nw, degree, self.variant != Variant::Krdy)?);
        Ok(self)
    }
}

/// Counts this party's flights (maximal runs of sends) from its creation on.
struct Flights<'a> {
    inner: &'a mut dyn Channel,
    sending: bool,
    flights: u64,
}

impl Channel for Flights<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<(), nectar_net::NetError> {
        if !self.sending {
            self.flights += 1;
            self.sending = true;
        }
        self.inner.send(msg)
    }
    fn recv(&mut self) -> Result<Vec<u8>, nectar_net::NetError> {
        self.sending = false;
        self.inner.recv()
    }
    fn flush(&mut self) -> Result<(), nectar_net::NetError> {
        self.inner.flush()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

/// One measurement, plain numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinearBenchLine {
    pub op: String,
    pub variant: String,
    pub shape: Vec<usize>,
    pub heads: usize,
    /// `(k_w, m_w, n_w)` (matrix ops).
    pub windows: Option<(usize, usize, usize)>,
    pub compression: String,
    /// Wall-clock seconds (slower party).
    pub seconds: f64,
    pub server_seconds: f64,
    pub client_seconds: f64,
    pub bytes_server_to_client: u64,
    pub bytes_client_to_server: u64,
    pub bytes_total: u64,
    /// Message flights of both parties (one round trip = 2).
    pub rounds: u64,
    /// Ciphertexts sent by the encrypting party / returned (per OLT, from the plan).
    pub cts_sent: usize,
    pub cts_returned: usize,
    pub automorphisms: usize,
    /// With `verify`: entries whose reconstruction is off by more than the protocol's bound
    /// (0 for the matrix ops, 1 for bOLEe / mul / square).
    pub mismatches: Option<usize>,
    /// COP: the weight's encryption and transfer, apart from the online figures above
    /// (`seconds`, bytes and `rounds` are then the online product's alone).
    pub setup: Option<SetupCost>,
}

/// A one-time setup's cost (COP's weight transfer).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SetupCost {
    pub seconds: f64,
    pub bytes: u64,
    pub ciphertexts: usize,
}

/// A party's output, seconds and traffic.
type PartyRun<T> = (T, f64, Stats);

/// Runs `f0` (server) and `f1` (client) after an HE session setup; returns the outputs, times
/// and traffic excluding the setup.
fn two_party<A: Send, B: Send>(
    params: Params,
    galois: bool,
    net: Option<LinkModel>,
    f0: impl FnOnce(&mut dyn Channel, &HeSession, &mut Prg) -> Result<A, LinearError> + Send,
    f1: impl FnOnce(&mut dyn Channel, &HeSession, &mut Prg) -> Result<B, LinearError> + Send,
) -> Result<(PartyRun<A>, PartyRun<B>), LinearError> {
    let (mut c0, mut c1) = linked_pair(net);
    let p1 = params.clone();
    std::thread::scope(|s| {
        let h = s.spawn(move || -> Result<(B, f64, Stats), LinearError> {
            let mut prg = Prg::from_entropy();
            let sess = HeSession::setup(&mut *c1, Role::Client, p1, galois, &mut prg)?;
            let before = c1.stats();
            let t = Instant::now();
            let mut fl = Flights {
                inner: &mut *c1,
                sending: false,
                flights: 0,
            };
            let out = f1(&mut fl, &sess, &mut prg)?;
            let flights = fl.flights;
            let mut st = c1.stats() - before;
            st.rounds = flights;
            Ok((out, t.elapsed().as_secs_f64(), st))
        });
        let r0 = (|| -> Result<(A, f64, Stats), LinearError> {
            let mut prg = Prg::from_entropy();
            let sess = HeSession::setup(&mut *c0, Role::Server, params, galois, &mut prg)?;
            let before = c0.stats();
            let t = Instant::now();
            let mut fl = Flights {
                inner: &mut *c0,
                sending: false,
                flights: 0,
            };
            let out = f0(&mut fl, &sess, &mut prg)?;
            let flights = fl.flights;
            let mut st = c0.stats() - before;
            st.rounds = flights;
            Ok((out, t.elapsed().as_secs_f64(), st))
        })();
        let r1 = h
            .join()
            .map_err(|_| LinearError::BadParams("client thread panicked".into()))?;
        Ok((r0?, r1?))
    })
}

/// A setup step's result on one party: what it keeps, when it started, the counters then.
type SetupRun = (Option<CopWeights>, Instant, Stats);

/// The shares, setup cost `(seconds, bytes, client share, client online seconds, client online
/// traffic)` and the server's online seconds and traffic, of [`two_party_setup`].
type SetupBench = ((Vec<u64>, (f64, u64, Vec<u64>, f64, Stats)), f64, Stats);

/// Like [`two_party`], with a one-time setup step (`s0`, `s1`: COP's weight transfer) measured
/// apart: `(server share, (setup seconds, setup bytes, client share, client online seconds,
/// client online traffic)), server online seconds, server online traffic`. Session keys: the
/// server's only ([`HeSession::setup_server_key`]).
#[allow(clippy::type_complexity)]
fn two_party_setup(
    params: Params,
    net: Option<LinkModel>,
    s0: impl FnOnce(&mut dyn Channel, &HeSession, &mut Prg) -> Result<SetupRun, LinearError> + Send,
    s1: impl FnOnce(&mut dyn Channel, &HeSession, &mut Prg) -> Result<SetupRun, LinearError> + Send,
    f0: impl FnOnce(&mut dyn Channel, &HeSession, &mut Prg, Option<CopWeights>) -> Result<Vec<u64>, LinearError> + Send,
    f1: impl FnOnce(&mut dyn Channel, &HeSession, &mut Prg, Option<CopWeights>) -> Result<Vec<u64>, LinearError> + Send,
) -> Result<SetupBench, LinearError> {
    let (mut c0, mut c1) = linked_pair(net);
    let p1 = params.clone();
    type Party = (Vec<u64>, f64, u64, f64, Stats);
    let run = |ch: &mut dyn Channel, role: Role, params: Params, setup: Box<dyn FnOnce(&mut dyn Channel, &HeSession, &mut Prg) -> Result<SetupRun, LinearError> + Send + '_>, online: Box<dyn FnOnce(&mut dyn Channel, &HeSession, &mut Prg, Option<CopWeights>) -> Result<Vec<u64>, LinearError> + Send + '_>| -> Result<Party, LinearError> {
        let mut prg = Prg::from_entropy();
        let sess = HeSession::setup_server_key(ch, role, params, &mut prg)?;
        let (held, t, before) = setup(ch, &sess, &mut prg)?;
        let (setup_s, mid) = (t.elapsed().as_secs_f64(), ch.stats());
        let setup_bytes = (mid - before).bytes_total();
        let t = Instant::now();
        let mut fl = Flights { inner: ch, sending: false, flights: 0 };
        let out = online(&mut fl, &sess, &mut prg, held)?;
        let flights = fl.flights;
        let mut st = ch.stats() - mid;
        st.rounds = flights;
        Ok((out, setup_s, setup_bytes, t.elapsed().as_secs_f64(), st))
    };
    std::thread::scope(|sc| {
        let h = sc.spawn(move || run(&mut *c1, Role::Client, p1, Box::new(s1), Box::new(f1)));
        let r0 = run(&mut *c0, Role::Server, params, Box::new(s0), Box::new(f0));
        let r1 = h.join().map_err(|_| LinearError::BadParams("client thread panicked".into()))?;
        let ((o0, su0, sb0, t0, st0), (o1, su1, sb1, t1, st1)) = (r0?, r1?);
        let _ = sb1;
        Ok(((o0, (su0.max(su1), sb0, o1, t1, st1)), t0, st0))
    })
}

fn random_vec(prg: &mut Prg, n: usize, l: u32) -> Vec<u64> {
    let m = if l >= 64 { u64::MAX } else { (1 << l) - 1 };
    (0..n).map(|_| prg.next_u64() & m).collect()
}

/// Runs one benchmark (see [`LinearBenchSpec`]).
pub fn bench_linear(spec: &LinearBenchSpec) -> Result<Vec<LinearBenchLine>, LinearError> {
    let mut prg = Prg::from_entropy();
    let l = spec.l;
    let mut line = LinearBenchLine {
        op: spec.op.name().into(),
        variant: spec.variant.name().into(),
        shape: spec.shape.clone(),
        heads: spec.heads,
        ..Default::default()
    };
    let mut expected: Vec<u64> = Vec::new();
    let mut tolerance = 0u64;
    let res = match spec.op {
        Op::Olt | Op::Matmul | Op::BatchMatmul => {
            let [k, m, n] = spec.shape[..] else {
                return Err(LinearError::BadShape(
                    "matrix benches need --shape k,m,n".into(),
                ));
            };
            let shape = Shape::new(k, m, n)?;
            let params = if spec.narrow { Params::nectar_olt_narrow() } else { Params::bumblebee_olt() };
            let plan = match spec.windows {
                Some(w) => OltPlan::new(shape, w, params.n(), spec.variant)?,
                None => OltPlan::choose(shape, params.n(), spec.variant, &CostModel::default())?,
            };
            let w = plan.windows;
            line.windows = Some((w.kw, w.mw, w.nw));
            line.compression = format!("{:?}", plan.compression);
            let heads = if spec.op == Op::BatchMatmul {
                spec.heads.max(1)
            } else {
                1
            };
            let layout = ResultLayout {
                shape,
                windows: w,
                degree: plan.degree,
                compression: plan.compression,
                batch: heads,
            };
            line.cts_sent = plan.sent_cts * heads;
            line.cts_returned = layout.num_polys();
            line.automorphisms = layout.automorphisms();
            let galois = plan.compression != Compression::None;
            let qs: Vec<Vec<u64>> = (0..heads).map(|_| random_vec(&mut prg, k * m, l)).collect();
            let vs: Vec<Vec<u64>> = (0..heads).map(|_| random_vec(&mut prg, m * n, l)).collect();
            let op = spec.op;
            // Both parties feed the same random matrices, so the shared inputs are 2Q (and 2V).
            let want = |scale: u64| -> Vec<u64> {
                if !spec.verify {
                    return Vec::new();
                }
                qs.iter()
                    .zip(&vs)
                    .flat_map(|(q, v)| matmul_u64(q, v, shape))
                    .map(|x| x.wrapping_mul(scale))
                    .collect()
            };
            expected = match op {
                Op::Olt => want(1),
                Op::Matmul => want(2),
                _ => want(4),
            };
            let (qs, vs) = (&qs, &vs);
            let plan = &plan;
            two_party(
                params,
                galois,
                spec.net,
                move |ch, s, p| {
                    let vr: Vec<&[u64]> = vs.iter().map(|v| &v[..]).collect();
                    let qr: Vec<&[u64]> = qs.iter().map(|v| &v[..]).collect();
                    match op {
                        Op::Olt => olt(ch, s, plan, Side::Rhs, &vr, p),
                        Op::Matmul => matmul_shared_weight(
                            ch,
                            s,
                            Role::Server,
                            plan,
                            qr[0],
                            Some(vr[0]),
                            l,
                            p,
                            None,
                        ),
                        _ => batch_matmul_shared_shared(ch, s, Role::Server, plan, &qr, &vr, l, p),
                    }
                },
                move |ch, s, p| {
                    let vr: Vec<&[u64]> = vs.iter().map(|v| &v[..]).collect();
                    let qr: Vec<&[u64]> = qs.iter().map(|v| &v[..]).collect();
                    match op {
                        Op::Olt => olt(ch, s, plan, Side::Lhs, &qr, p),
                        Op::Matmul => {
                            matmul_shared_weight(ch, s, Role::Client, plan, qr[0], None, l, p, None)
                        }
                        _ => batch_matmul_shared_shared(ch, s, Role::Client, plan, &qr, &vr, l, p),
                    }
                },
            )?
        }
        Op::Cop => {
            let [k, m, n] = spec.shape[..] else {
                return Err(LinearError::BadShape("cop needs --shape k,m,n".into()));
            };
            let shape = Shape::new(k, m, n)?;
            let params = if spec.narrow { Params::nectar_olt_narrow() } else { Params::bumblebee_olt() };
            let windows = match spec.windows {
                Some(w) => w,
                None => cop_windows(m, n, params.n(), &CostModel::balanced(CtBytes::olt(&params)))?,
            };
            let plan = cop_plan(shape, windows, params.n())?;
            line.windows = Some((windows.kw, windows.mw, windows.nw));
            line.compression = format!("{:?}", plan.compression);
            line.cts_sent = plan.sent_cts;
            line.cts_returned = plan.returned_cts;
            line.automorphisms = plan.autos;
            // Both parties feed the same share q: X = 2q.
            let q = random_vec(&mut prg, k * m, l);
            let w = random_vec(&mut prg, m * n, l);
            if spec.verify {
                expected = matmul_u64(&q, &w, shape).into_iter().map(|v| v.wrapping_mul(2)).collect();
            }
            let (q, w, plan) = (&q, &w, &plan);
            let ((r0, setup), t0, s0) = two_party_setup(
                params,
                spec.net,
                move |ch, s, p| {
                    let (t, before) = (Instant::now(), ch.stats());
                    cop_send_weights(ch, s, plan, w, p)?;
                    Ok((None, t, before))
                },
                move |ch, s, _| {
                    let (t, before) = (Instant::now(), ch.stats());
                    let held = cop_recv_weights(ch, s, plan)?;
                    Ok((Some(held), t, before))
                },
                move |ch, s, _, _| cop_server(ch, s, plan, q, w, l),
                move |ch, s, p, held| {
                    let held = held.ok_or_else(|| LinearError::BadShape("no weights held".into()))?;
                    cop_client(ch, s, &held, plan, q, l, p)
                },
            )?;
            line.setup = Some(SetupCost { seconds: setup.0, bytes: setup.1, ciphertexts: plan.sent_cts });
            ((r0, t0, s0), (setup.2, setup.3, setup.4))
        }
        Op::Bole | Op::Mul | Op::Square => {
            let size = *spec
                .shape
                .first()
                .ok_or_else(|| LinearError::BadShape("--size needed".into()))?;
            let params = Params::bumblebee_bole();
            line.compression = "None".into();
            let x = random_vec(&mut prg, size, l);
            let y = random_vec(&mut prg, size, l);
            let op = spec.op;
            tolerance = 1;
            if spec.verify {
                expected = x
                    .iter()
                    .zip(&y)
                    .map(|(a, b)| match op {
                        Op::Bole => a.wrapping_mul(*b),
                        Op::Mul => a.wrapping_mul(*b).wrapping_mul(4),
                        _ => a.wrapping_mul(*a).wrapping_mul(4),
                    })
                    .collect();
            }
            let (x, y) = (&x, &y);
            two_party(
                params,
                false,
                spec.net,
                move |ch, s, p| match op {
                    Op::Bole => bole::bole(ch, s, Role::Server, x, l, p),
                    Op::Mul => bole::mul(ch, s, Role::Server, x, y, l, p).map(|r| r.0),
                    _ => bole::square(ch, s, Role::Server, x, l, p).map(|r| r.0),
                },
                move |ch, s, p| match op {
                    Op::Bole => bole::bole(ch, s, Role::Client, y, l, p),
                    Op::Mul => bole::mul(ch, s, Role::Client, x, y, l, p).map(|r| r.0),
                    _ => bole::square(ch, s, Role::Client, x, l, p).map(|r| r.0),
                },
            )?
        }
    };
    let ((r0, t0, s0), (r1, t1, s1)) = res;
    if spec.verify {
        let mask = if l >= 64 { u64::MAX } else { (1u64 << l) - 1 };
        line.mismatches = Some(
            r0.iter()
                .zip(&r1)
                .zip(&expected)
                .filter(|((a, b), w)| {
                    let e = a.wrapping_add(**b).wrapping_sub(**w) & mask;
                    e.min(e.wrapping_neg() & mask) > tolerance
                })
                .count()
                + expected.len().abs_diff(r0.len()),
        );
    }
    line.server_seconds = t0;
    line.client_seconds = t1;
    line.seconds = t0.max(t1);
    line.bytes_server_to_client = s0.bytes_sent;
    line.bytes_client_to_server = s1.bytes_sent;
    line.bytes_total = s0.bytes_sent + s1.bytes_sent;
    line.rounds = s0.rounds + s1.rounds;
    Ok(vec![line])
}

/// Time of the compression step alone (BumbleBee Table VII): the block products of a `(k, m, n)`
/// OLT with the given windows, then InterLeave or PackLWEs, in one process.
#[derive(Clone, Debug, PartialEq)]
pub struct CompressionTiming {
    pub compression: String,
    pub inputs: usize,
    pub outputs: usize,
    pub automorphisms: usize,
    pub seconds: f64,
}

/// Measures InterLeave or PackLWEs on the products of an OLT of `shape` with windows `w`.
pub fn bench_compression(
    shape: Shape,
    w: Windows,
    compression: Compression,
) -> Result<CompressionTiming, LinearError> {
    let params = Params::bumblebee_olt();
    let n = params.n();
    let mut prg = Prg::from_entropy();
    let sk = SecretKey::generate(&params, &mut prg);
    let gk = sk.galois_keys(&params, &interleave_galois_elements(n), &mut prg)?;
    let layout = ResultLayout {
        shape,
        windows: w,
        degree: n,
        compression,
        batch: 1,
    };
    let products = layout.products();
    // One random product ciphertext per block (the compression cost does not depend on values).
    let level = nectar_linear::h2a::response_level(&params, 64);
    let mut base = sk.encrypt(
        &params,
        &Plaintext::from_coeffs(&params, &random_vec(&mut prg, n, 64), 0)?,
        &mut prg,
    )?;
    let pt = PlainNtt::new(
        &params,
        &Plaintext::from_coeffs(&params, &random_vec(&mut prg, n, 64), 0)?,
        params.max_level(),
    )?;
    base = base.mul_plain(&params, &pt)?;
    base.mod_switch_to(&params, level)?;
    let prods: Vec<Ciphertext> = (0..products)
        .map(|i| {
            let mut c = base.clone();
            c.mul_monomial_assign(&params, i % (2 * n));
            c
        })
        .collect();
    let ring = CtRing {
        params: &params,
        gk: &gk,
    };
    let t = Instant::now();
    let mut autos = 0;
    let outputs = layout.num_polys();
    match compression {
        Compression::Interleave => {
            for g in 0..outputs {
                let group: Vec<Option<Ciphertext>> = prods
                    [g * w.mw..((g + 1) * w.mw).min(products)]
                    .iter()
                    .cloned()
                    .map(Some)
                    .collect();
                autos += interleave(&ring, group, w.mw.trailing_zeros())?.1;
            }
        }
        Compression::PackLwes => {
            for g in 0..outputs {
                let inputs: Vec<Option<Ciphertext>> = layout
                    .pack_sources(g)
                    .into_iter()
                    .map(|(b, pos)| {
                        let mut c = prods[b].clone();
                        c.mul_monomial_assign(&params, 2 * n - pos);
                        Some(c)
                    })
                    .collect();
                autos += pack_lwes(&ring, inputs)?.1;
            }
        }
        Compression::None => {}
    }
    Ok(CompressionTiming {
        compression: format!("{compression:?}"),
        inputs: products,
        outputs,
        automorphisms: autos,
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// Seconds of one automorphism (key switch) at the response level on this machine: `P_C` of
/// the window chooser's cost model (LOCAL). `P_B` is a ciphertext's bytes over the bandwidth.
pub fn measure_automorphism_seconds() -> Result<f64, LinearError> {
    let params = Params::bumblebee_olt();
    let mut prg = Prg::from_entropy();
    let sk = SecretKey::generate(&params, &mut prg);
    let gk = sk.galois_keys(&params, &[3], &mut prg)?;
    let mut ct = sk.encrypt(
        &params,
        &Plaintext::from_coeffs(&params, &[1], 0)?,
        &mut prg,
    )?;
    ct.mod_switch_to(&params, nectar_linear::h2a::response_level(&params, 64))?;
    let reps = 20;
    let t = Instant::now();
    for _ in 0..reps {
        ct = ct.automorphism(&params, 3, &gk)?;
    }
    Ok(t.elapsed().as_secs_f64() / reps as f64)
}

/// The window chooser's prices measured on this machine for a link: one automorphism and one
/// ciphertext × plaintext product timed here, one response ciphertext's bytes over the link's
/// bandwidth (LOCAL; the paper's §III-D recipe).
pub fn measured_cost_model(link: LinkModel) -> Result<CostModel, LinearError> {
    let params = Params::bumblebee_olt();
    let mut prg = Prg::from_entropy();
    let sk = SecretKey::generate(&params, &mut prg);
    let ct = sk.encrypt(
        &params,
        &Plaintext::from_coeffs(&params, &random_vec(&mut prg, 16, 64), 0)?,
        &mut prg,
    )?;
    let pt = PlainNtt::new(
        &params,
        &Plaintext::from_coeffs(&params, &random_vec(&mut prg, 16, 64), 0)?,
        params.max_level(),
    )?;
    let reps = 20;
    let t = Instant::now();
    let mut acc = ct.mul_plain(&params, &pt)?;
    for _ in 1..reps {
        acc.mul_plain_accumulate(&params, &ct, &pt)?;
    }
    let mult = t.elapsed().as_secs_f64() / reps as f64;
    acc.mod_switch_to(&params, nectar_linear::h2a::response_level(&params, 64))?;
    let bytes = acc.serialized_len(&params);
    Ok(CostModel::measured(
        measure_automorphism_seconds()?,
        mult,
        bytes,
        link.bandwidth_bps,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_benches_run_and_count() {
        let s = LinearBenchSpec::parse("olt", "2,3,2", "interleave", "none", 1, 64).unwrap();
        let l = &bench_linear(&s).unwrap()[0];
        assert_eq!(l.rounds, 2);
        assert_eq!(l.mismatches, Some(0));
        assert!(l.bytes_server_to_client > 0 && l.bytes_client_to_server > 0);
        let s =
            LinearBenchSpec::parse("batch_matmul", "2,3,2", "interleave", "lan", 2, 64).unwrap();
        // Query A; response A + query B (same direction, one flight); response B.
        let b = &bench_linear(&s).unwrap()[0];
        assert_eq!((b.rounds, b.mismatches), (3, Some(0)));
        let c = measured_cost_model(LinkModel::LAN).unwrap();
        assert!(c.per_auto > 0.0 && c.per_ct > 0.0 && c.per_mult > 0.0);
        for op in ["square", "mul", "bole"] {
            let s = LinearBenchSpec::parse(op, "100", "interleave", "none", 1, 64).unwrap();
            let b = &bench_linear(&s).unwrap()[0];
            assert_eq!((b.rounds, b.mismatches), (2, Some(0)), "{op}");
        }
        assert!(LinearBenchSpec::parse("olt", "2,3", "interleave", "none", 1, 64).is_err());
        assert!(LinearBenchSpec::parse("olt", "2,3,4", "fast", "none", 1, 64).is_err());
        assert!(LinearBenchSpec::parse("bole", "10", "krdy", "moon", 1, 64).is_err());
    }
}
