//! `nectar bench nn --op {gelu,softmax,...}`: [`bench_secure`] runs both parties of
//! [`nectar_nn::SecureBackend`] in two threads over an in-memory channel (optionally through a
//! simulated LAN/WAN link) on the same operator code as the twin: seconds, bytes each way,
//! flights, bits per element, and the COT production cost measured on a steady-state
//! extension run before the operator (see [`SecureBench::refill_bits_per_cot`]). (Primitive counts on the plaintext twin are
//! [`nectar_nn::counting::primitive_counts`]; the per-operator cost breakdown of a run is
//! `nectar_model::secure::Profile`.)

use nectar_math::FixedPoint;
use nectar_nn::backend::DynBackend;
use nectar_nn::gelu::{Gelu, GeluForm};
use nectar_nn::mixed::ActRing;
use nectar_nn::silu::Silu;
use nectar_nn::exp::Exp;
use nectar_nn::layernorm::LAYERNORM_DEFAULT;
use nectar_nn::norm::{Norm, NormCall};
use nectar_nn::reciprocal::Reciprocal;
use nectar_nn::rsqrt::Rsqrt;
use nectar_nn::softmax::{Softmax, SoftmaxCall};
use nectar_nn::{Backend, NnError};
use std::time::Instant;

/// What a secure bench runs: a registered protocol (`nectar_nn::gelu::ALL`, `softmax::ALL`, ...)
/// with what it is evaluated in or composed with, or an operator with one protocol
/// ([`Fixed`]).
#[derive(Clone, Copy, Debug)]
pub enum Kernel {
    /// A GeLU protocol of the registry.
    Gelu { p: Gelu, form: GeluForm, ring: ActRing },
    /// A SiLU protocol of the registry.
    Silu { p: Silu, ring: ActRing },
    /// An exponential protocol of the registry (in the backend's format).
    Exp { p: Exp },
    /// The tanh of an exponential protocol that has one of its own (East's OPPE table).
    Tanh { p: Exp },
    /// A reciprocal protocol of the registry, on [`nectar_nn::reciprocal::RANGE`].
    Reciprocal { p: Reciprocal },
    /// An rsqrt protocol of the registry, on [`nectar_nn::rsqrt::RANGE`].
    Rsqrt { p: Rsqrt },
    /// A softmax composition of the registry with the exponential and reciprocal it composes.
    Softmax { p: Softmax, exp: Exp, recip: Reciprocal },
    /// A norm formulation of the registry with its rsqrt: LayerNorm (`layer`, `β = 0`) or
    /// RMSNorm, `γ = 1` public.
    Norm { p: Norm, rsqrt: Rsqrt, layer: bool },
    /// An operator with one protocol.
    Fixed(Fixed),
}

/// The operators with one protocol each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixed {
    /// BumbleBee's exponential in the mixed ring (§V-C; the model runs exp in the full ring).
    ExpMixed,
    /// ELU from BumbleBee's exponential.
    Elu,
    /// Row argmax (comparison tree).
    Argmax,
    /// One-hot rows of shared ids (`i_equal`).
    Onehot,
}

impl Fixed {
    /// Every fixed kernel.
    pub const ALL: [Fixed; 4] = [Fixed::ExpMixed, Fixed::Elu, Fixed::Argmax, Fixed::Onehot];

    /// Its operator name.
    pub fn name(self) -> &'static str {
        match self {
            Fixed::ExpMixed => "exp-mixed",
            Fixed::Elu => "elu",
            Fixed::Argmax => "argmax",
            Fixed::Onehot => "onehot",
        }
    }
}

impl Kernel {
    /// The operator's key (`gelu`, `layernorm`, ...).
    pub fn operator(&self) -> &'static str {
        match self {
            Kernel::Gelu { .. } => "gelu",
            Kernel::Silu { .. } => "silu",
            Kernel::Exp { .. } => "exp",
            Kernel::Tanh { .. } => "tanh",
            Kernel::Reciprocal { .. } => "reciprocal",
            Kernel::Rsqrt { .. } => "rsqrt",
            Kernel::Softmax { .. } => "softmax",
            Kernel::Norm { layer: true, .. } => "layernorm",
            Kernel::Norm { layer: false, .. } => "rmsnorm",
            Kernel::Fixed(f) => f.name(),
        }
    }

    /// How bench lines name it: `gelu=sq8` (with `+act-ring=mixed` in the activation ring,
    /// `+form=tanh` for the tanh form), `softmax=coarse+exp=taylor4+reciprocal=newton`,
    /// `layernorm=bumblebee+rsqrt=newton`, or the fixed operator's name.
    pub fn label(&self) -> String {
        match self {
            Kernel::Gelu { p, form, ring } => {
                let mut s = format!("gelu={p}");
                if *ring == ActRing::Mixed {
                    s.push_str("+act-ring=mixed");
                }
                if *form == GeluForm::Tanh {
                    s.push_str("+form=tanh");
                }
                s
            }
            Kernel::Silu { p, ring } => match ring {
                ActRing::Full => format!("silu={p}"),
                ActRing::Mixed => format!("silu={p}+act-ring=mixed"),
            },
            Kernel::Exp { p } => format!("exp={p}"),
            Kernel::Tanh { p } => format!("tanh+exp={p}"),
            Kernel::Reciprocal { p } => format!("reciprocal={p}"),
            Kernel::Rsqrt { p } => format!("rsqrt={p}"),
            Kernel::Softmax { p, exp, recip } if p.composes() => format!("softmax={p}+exp={exp}+reciprocal={recip}"),
            Kernel::Softmax { p, .. } => format!("softmax={p}"),
            Kernel::Norm { p, rsqrt, .. } => format!("{}={p}+rsqrt={rsqrt}", self.operator()),
            Kernel::Fixed(f) => f.name().to_string(),
        }
    }

    /// Whether it works on rows (softmax, norms, argmax).
    fn row_op(&self) -> bool {
        matches!(self, Kernel::Softmax { .. } | Kernel::Norm { .. } | Kernel::Fixed(Fixed::Argmax))
    }

    /// Every kernel the registry lists: the GeLU / SiLU protocols in every ring they support,
    /// every exponential (and its own tanh), reciprocal and rsqrt, the softmax and norm
    /// compositions (`nectar_nn::softmax::compositions`, `nectar_nn::norm::compositions`), and
    /// the fixed operators.
    pub fn registered() -> Vec<Kernel> {
        let mut out = Vec::new();
        for p in Gelu::all() {
            for ring in [ActRing::Full, ActRing::Mixed] {
                if p.supports(ring).is_ok() {
                    out.push(Kernel::Gelu { p, form: GeluForm::Erf, ring });
                }
            }
        }
        for p in Silu::all() {
            for ring in [ActRing::Full, ActRing::Mixed] {
                if p.supports(ring).is_ok() {
                    out.push(Kernel::Silu { p, ring });
                }
            }
        }
        out.extend(Exp::all().map(|p| Kernel::Exp { p }));
        out.extend(Exp::all().filter(|p| p.tanh_tolerance(FixedPoint::BUMBLEBEE).is_ok()).map(|p| Kernel::Tanh { p }));
        out.extend(Reciprocal::all().map(|p| Kernel::Reciprocal { p }));
        out.extend(Rsqrt::all().map(|p| Kernel::Rsqrt { p }));
        out.extend(nectar_nn::softmax::compositions().into_iter().map(|(p, exp, recip)| Kernel::Softmax { p, exp, recip }));
        for (p, rsqrt) in nectar_nn::norm::compositions() {
            out.extend([true, false].map(|layer| Kernel::Norm { p, rsqrt, layer }));
        }
        out.extend(Fixed::ALL.map(Kernel::Fixed));
        out
    }
}

/// One two-party measurement of an operator (JSON-friendly; see [`bench_secure`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SecureBench {
    pub op: String,
    /// Elements (for row operators: rows × cols).
    pub elements: usize,
    /// Row length of row operators (softmax, layernorm, argmax); 1 otherwise.
    pub cols: usize,
    /// `bole` or `ot` products, and the COT producer.
    pub variant: String,
    pub net: String,
    /// Wall seconds of the operator (both parties concurrently; setup excluded).
    pub seconds: f64,
    /// Bytes sent by P0 (server) and by P1 (client) during the operator, frame headers included.
    pub bytes_p0: u64,
    pub bytes_p1: u64,
    pub bytes_total: u64,
    /// Flights: bursts of sends, summed over both parties.
    pub rounds: u64,
    pub bits_per_element: f64,
    /// COTs consumed per element (both directions, each COT counted once); their production
    /// cost is included in the bytes only where an extension ran during the operator.
    pub cots_per_element: f64,
    /// Bytes of the COT extensions that ran during the operator (part of `bytes_total`).
    pub refill_bytes: u64,
    /// Measured steady-state cost of a COT: one extension per direction runs after the setup
    /// (outside both the setup and the operator figures); its traffic from the channel
    /// counters around it ([`nectar_ot::RefillTraffic`]), in bits, over the COTs it produced.
    pub refill_bits_per_cot: f64,
    /// `(bytes_total − refill_bytes) · 8 / elements + cots_per_element · refill_bits_per_cot`:
    /// the operator's cost with COT production spread evenly at its measured rate.
    pub steady_bits_per_element: f64,
    /// Session setup (OT base OTs + Ferret bootstrap of both directions + bOLEe key exchange).
    pub setup_seconds: f64,
    pub setup_bytes: u64,
    /// Largest |revealed − twin| over the outputs, in LSB of the output format.
    pub max_lsb_vs_twin: i64,
    /// The operator's stated twin-vs-secure bound ([`stated_tolerance`]; `None` off the
    /// (64, 18) format, where none is derived).
    pub tol_lsb: Option<i64>,
    /// Part of `bytes_total` / `seconds` spent in input-independent preprocessing (ROTL
    /// rotations and the COTs reserved for their online phase; 0 for protocols without one),
    /// from the channel counters around each preprocessing call.
    pub prepro_bytes: u64,
    pub prepro_seconds: f64,
    /// `bytes_total − prepro_bytes`, `seconds − prepro_seconds`.
    pub online_bytes: u64,
    pub online_seconds: f64,
}

/// Pivots of the operators that select a segment by an approximate comparison (see
/// [`nectar_nn::tolerance`]); the bench inputs keep [`nectar_nn::tolerance::PIVOT_GAP`] away.
fn pivots(k: Kernel) -> Vec<f64> {
    match k {
        Kernel::Gelu { p, .. } => p.pivots(),
        Kernel::Silu { p, .. } => p.pivots(),
        Kernel::Exp { p } => p.pivots(),
        Kernel::Fixed(Fixed::ExpMixed) => vec![nectar_nn::exp::EXP_BUMBLEBEE.t_exp],
        Kernel::Fixed(Fixed::Elu) => vec![nectar_nn::exp::EXP_BUMBLEBEE.t_exp, 0.0],
        _ => Vec::new(),
    }
}

/// The stated twin-vs-secure error bound of `k` in LSB of the (64, 18) output (each
/// protocol's own, `nectar_nn::tolerance`), for the bench's inputs (off the pivots; reciprocal
/// on `[1, 4001]`, rsqrt on `[1, 1001]`, softmax and norms on rows of `cols`); `None` for
/// another format.
pub fn stated_tolerance(k: Kernel, cols: usize, fp: FixedPoint) -> Result<Option<i64>, NnError> {
    use nectar_nn::tolerance::{ELU_TOL, EXP_MIXED_TOL};
    if fp != FixedPoint::BUMBLEBEE {
        return Ok(None);
    }
    let t = match k {
        Kernel::Gelu { p, form, ring } => p.tolerance(form, ring)?,
        Kernel::Silu { p, ring } => p.tolerance(ring)?,
        Kernel::Exp { p } => p.tolerance(fp)?,
        Kernel::Tanh { p } => p.tanh_tolerance(fp)?,
        Kernel::Reciprocal { p } => p.tolerance(&nectar_nn::reciprocal::RANGE, fp)?,
        Kernel::Rsqrt { p } => p.tolerance(&nectar_nn::rsqrt::RANGE, fp)?,
        Kernel::Softmax { p, exp, recip } => p.tolerance(exp, recip, cols, fp)?,
        Kernel::Norm { p, rsqrt, .. } => p.tolerance(rsqrt, cols, fp)?,
        Kernel::Fixed(Fixed::ExpMixed) => EXP_MIXED_TOL,
        Kernel::Fixed(Fixed::Elu) => ELU_TOL,
        Kernel::Fixed(Fixed::Argmax | Fixed::Onehot) => 0,
    };
    Ok(Some(t))
}

/// Input reals of a benchmark (deterministic; inside each operator's documented domain, and
/// more than [`nectar_nn::tolerance::PIVOT_GAP`] away from the pivots of approximate
/// comparisons, where only the f64 bound holds).
fn bench_inputs(k: Kernel, n: usize, cols: usize) -> Vec<f64> {
    let u = |i: usize| ((i.wrapping_mul(7919) + 13) % 1000) as f64 / 1000.0;
    let ps = pivots(k);
    let gap = nectar_nn::tolerance::PIVOT_GAP;
    let off = |x: f64| match ps.iter().find(|&&t| (x - t).abs() <= gap) {
        // to the side it was on, just past the gap (2^-3 in all: still a grid of reals)
        Some(&t) => if x < t { t - 2.0 * gap } else { t + 2.0 * gap },
        None => x,
    };
    let (r, q) = (nectar_nn::reciprocal::RANGE, nectar_nn::rsqrt::RANGE);
    let (lo, hi) = match k {
        Kernel::Gelu { .. } => nectar_nn::gelu::DOMAIN,
        Kernel::Silu { .. } => nectar_nn::silu::DOMAIN,
        Kernel::Exp { .. } => nectar_nn::exp::DOMAIN,
        Kernel::Reciprocal { .. } => (r.lo, r.hi - 1.0),
        Kernel::Rsqrt { .. } => (q.lo, q.hi),
        Kernel::Softmax { .. } => (-6.0, 6.0),
        Kernel::Fixed(Fixed::ExpMixed) => (-16.0, 0.0),
        Kernel::Fixed(Fixed::Elu) => (-16.0, 4.0),
        Kernel::Fixed(Fixed::Argmax) => (-50.0, 50.0),
        Kernel::Fixed(Fixed::Onehot) => {
            return (0..n).map(|i| ((i * 31) % cols.max(1)) as f64 / FixedPoint::BUMBLEBEE.scale()).collect();
        }
        Kernel::Tanh { .. } | Kernel::Norm { .. } => (-4.0, 4.0),
    };
    (0..n).map(|i| off(lo + (hi - lo) * u(i))).collect()
}

/// Runs `k` on the backend `b` (one party, or the twin) on `x`; returns the revealed output.
fn run_op(b: &mut DynBackend<'_>, k: Kernel, x: &Vec<u64>, rows: usize, cols: usize) -> Result<Vec<u64>, NnError> {
    use nectar_nn::*;
    let fp = b.format();
    let y = match k {
        Kernel::Gelu { p, form, ring } => p.eval(b, x, form, ring)?,
        Kernel::Silu { p, ring } => p.eval(b, x, ring)?,
        Kernel::Exp { p } => p.eval(b, x, None)?,
        Kernel::Tanh { p } => match p.tanh(b, x) {
            Some(y) => y?,
            None => return Err(NnError::BadArgument(format!("exp={p} has no tanh of its own"))),
        },
        Kernel::Reciprocal { p } => p.eval(b, x, &nectar_nn::reciprocal::RANGE)?,
        Kernel::Rsqrt { p } => p.eval(b, x, &nectar_nn::rsqrt::RANGE)?,
        Kernel::Softmax { p, exp, recip } => p.eval(b, x, &SoftmaxCall { rows, cols, mask: None }, exp, recip)?,
        Kernel::Norm { p, rsqrt, layer } => {
            let ones = fp.encode_vec::<u64>(&vec![1.0; cols])?;
            let g = b.constant(&ones)?;
            let be = b.constant(&vec![0; cols])?;
            let call = NormCall {
                rows,
                cols,
                eps: LAYERNORM_DEFAULT.eps,
                gamma: &g,
                gamma_server: Some(&ones),
                beta: layer.then_some(&be),
                stats_shift: 0,
            };
            p.eval(b, x, &call, rsqrt)?
        }
        Kernel::Fixed(Fixed::ExpMixed) => exp::exp_neg_mixed(b, x, &exp::EXP_BUMBLEBEE)?,
        Kernel::Fixed(Fixed::Elu) => elu::elu(b, x, 1.0, &exp::EXP_BUMBLEBEE)?,
        Kernel::Fixed(Fixed::Argmax) => max::argmax_rows(b, x, rows, cols)?.1,
        Kernel::Fixed(Fixed::Onehot) => onehot::one_hot(b, x, cols)?,
    };
    b.reveal(&y)
}

/// Both parties of the secure backend run `op` on `size` elements (row operators: rows of
/// `cols`, `size` rounded up to whole rows; `onehot`: `size` ids over a vocabulary of `cols`)
/// over an in-memory channel, through `net` if given, with the backend options `opts` (the
/// caller derives them from its suite; the report's `variant` names them).
/// Session setup (base OTs, the Ferret bootstrap of both pools, bOLEe keys) is run first and
/// reported apart; pool refills during the operator are included.
pub fn bench_secure(
    k: Kernel,
    size: usize,
    cols: usize,
    opts: nectar_nn::secure::SecureOpts,
    net: Option<nectar_net::LinkModel>,
) -> Result<SecureBench, NnError> {
    use nectar_nn::secure::SecureBackend;
    use nectar_math::Prg;
    use nectar_net::{linked_pair, Channel, Role};
    use nectar_ot::bits::mask64;
    let cols = cols.max(1);
    let row_op = k.row_op();
    let rows = if row_op { size.div_ceil(cols) } else { size };
    let n = if row_op { rows * cols } else { size };
    let fp = opts.format;
    let mut twin = nectar_nn::PlainBackend::new(fp)?;
    let x = twin.encode(&bench_inputs(k, n, cols))?;
    let want = run_op(&mut twin as &mut DynBackend<'_>, k, &x, rows, cols)?;
    let mut prg = Prg::from_entropy();
    let r: Vec<u64> = x.iter().map(|_| prg.next_u128() as u64).collect();
    let x0: Vec<u64> = x.iter().zip(&r).map(|(a, b)| a.wrapping_sub(*b) & mask64(fp.l())).collect();
    let x1: Vec<u64> = r.iter().map(|v| v & mask64(fp.l())).collect();

    type PartyOut = (f64, nectar_net::Stats, f64, nectar_net::Stats, u64, Vec<u64>, [nectar_ot::RefillTraffic; 2], nectar_nn::secure::PreproCost);
    let backend_err = |e: nectar_ot::OtError| NnError::Backend(Box::new(e));
    let party = |role: Role, ch: &mut dyn Channel, share: Vec<u64>| -> Result<PartyOut, NnError> {
        let t = Instant::now();
        let mut b = SecureBackend::setup(role, ch, Prg::from_entropy(), opts)?;
        // Ferret bootstrap of both pools (one AND uses a random OT in each direction).
        let one = vec![role == Role::Server];
        b.and(&one, &one)?;
        b.channel_mut().flush().map_err(|e| NnError::Backend(Box::new(e)))?;
        let (setup_s, setup_stats) = (t.elapsed().as_secs_f64(), b.stats());
        // One steady-state extension per direction, measured (outside setup and operator).
        let (ch, mpc, _, _) = b.parts();
        mpc.ot().refill(ch).map_err(backend_err)?;
        let steady = mpc.ot().steady_traffic();
        let r0 = mpc.ot().refill_traffic();
        let before = b.stats();
        let k0 = b.cots_consumed();
        let p0 = b.prepro_cost();
        let t = Instant::now();
        let out = run_op(&mut b as &mut DynBackend<'_>, k, &share, rows, cols)?;
        b.channel_mut().flush().map_err(|e| NnError::Backend(Box::new(e)))?;
        let secs = t.elapsed().as_secs_f64();
        let k = b.cots_consumed() - k0;
        let in_op = b.parts().1.ot().refill_traffic().since(&r0);
        let pre = b.prepro_cost().since(&p0);
        Ok((secs, b.stats() - before, setup_s, setup_stats, k, out, [steady, in_op], pre))
    };
    let (b0, b1) = linked_pair(net);
    let (r0, r1) = std::thread::scope(|s| {
        let h = s.spawn(move || {
            let mut c = b1;
            party(Role::Client, c.as_mut(), x1)
        });
        let mut c = b0;
        let a = party(Role::Server, c.as_mut(), x0);
        drop(c); // a failing party closes the link instead of leaving the other blocked
        (a, h.join().unwrap_or_else(|_| Err(NnError::BadArgument("client thread panicked".into()))))
    });
    // Report the party that failed first (the other one usually just sees the closed link).
    let (r0, r1) = match (r0, r1) {
        (Err(NnError::Backend(e0)), Err(e1)) if e0.to_string().contains("closed") || e0.to_string().contains("Closed") => {
            (Err(e1), Err(NnError::Backend(e0)))
        }
        other => other,
    };
    let ((t0, s0, u0, ss0, k0, out, [steady, in_op], pre0), (t1, s1, u1, ss1, _, _, _, pre1)) = (r0?, r1?);
    let l = fp.l();
    let max_lsb_vs_twin = out
        .iter()
        .zip(&want)
        .map(|(a, b)| {
            let d = a.wrapping_sub(*b) & mask64(l);
            let d = if l < 64 && d >> (l - 1) & 1 == 1 { d as i128 - (1i128 << l) } else { d as i64 as i128 };
            d.unsigned_abs().min(i64::MAX as u128) as i64
        })
        .max()
        .unwrap_or(0);
    let bytes_total = s0.bytes_sent + s1.bytes_sent;
    let bits_per_element = bytes_total as f64 * 8.0 / n.max(1) as f64;
    // One party's two pools hand out every COT of both directions once (the peer's pools
    // count the same COTs), and its counters see both directions of every extension.
    let cots_per_element = k0 as f64 / n.max(1) as f64;
    let refill_bytes = in_op.bytes();
    let refill_bits_per_cot = steady
        .bits_per_cot()
        .ok_or_else(|| NnError::BadArgument("no steady-state extension was measured".into()))?;
    Ok(SecureBench {
        op: k.label(),
        elements: n,
        cols: if row_op || matches!(k, Kernel::Fixed(Fixed::Onehot)) { cols } else { 1 },
        variant: format!(
            "{}+{}",
            match (opts.mul, opts.reuse_queries, opts.bole_narrow) {
                (nectar_nn::secure::MulProtocol::Ot, _, _) => "ot",
                (_, true, true) => "bole",
                (_, false, true) => "bole+noreuse",
                (_, true, false) => "bole+wide",
                (_, false, false) => "bole+noreuse+wide",
            },
            match opts.producer {
                nectar_ot::Producer::Iknp => "iknp",
                nectar_ot::Producer::Ferret(p) => p.name,
            }
        ),
        net: crate::mpc::net_label(net),
        seconds: t0.max(t1),
        bytes_p0: s0.bytes_sent,
        bytes_p1: s1.bytes_sent,
        bytes_total,
        rounds: s0.rounds + s1.rounds,
        bits_per_element,
        cots_per_element,
        refill_bytes,
        refill_bits_per_cot,
        steady_bits_per_element: (bytes_total - refill_bytes) as f64 * 8.0 / n.max(1) as f64
            + cots_per_element * refill_bits_per_cot,
        setup_seconds: u0.max(u1),
        setup_bytes: ss0.bytes_sent + ss1.bytes_sent,
        max_lsb_vs_twin,
        tol_lsb: stated_tolerance(k, cols, fp)?,
        prepro_bytes: pre0.bytes_total(),
        prepro_seconds: pre0.seconds.max(pre1.seconds),
        online_bytes: bytes_total - pre0.bytes_total(),
        online_seconds: t0.max(t1) - pre0.seconds.max(pre1.seconds),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn secure_bench_small() {
        use super::Kernel;
        use nectar_nn::gelu::{self, GeluForm};
        use nectar_nn::mixed::ActRing;
        use nectar_nn::secure::{MulProtocol, SecureOpts};
        use nectar_ot::{FerretParams, Producer};
        let small = SecureOpts::bumblebee().with_producer(Producer::Ferret(FerretParams::small()));
        let ot = small.with_mul(MulProtocol::Ot);
        let seg4 = gelu::Gelu::from_name("seg4").unwrap();
        let seg4_mixed = Kernel::Gelu { p: seg4, form: GeluForm::Erf, ring: ActRing::Mixed };
        let r = super::bench_secure(seg4_mixed, 64, 1, ot, None).unwrap();
        assert_eq!(r.elements, 64);
        assert_eq!(r.op, "gelu=seg4+act-ring=mixed");
        // the COT cost is measured on a real extension: one flow of the sender's payload per
        // direction, over the usable COTs
        let p = FerretParams::small();
        let per = (p.extension_bytes() + nectar_net::FRAME_HEADER) as f64;
        assert!((r.refill_bits_per_cot - 8.0 * per / p.usable() as f64).abs() < 1e-9, "{r:?}");
        assert_eq!(r.refill_bytes, 0, "64 elements need no extension inside the operator");
        let steady = r.bits_per_element + r.cots_per_element * r.refill_bits_per_cot;
        assert!((r.steady_bits_per_element - steady).abs() < 1e-9);
        assert!(r.bytes_total > 0 && r.bytes_p0 > 0 && r.bytes_p1 > 0 && r.rounds > 0);
        // every registered protocol (and every composition the registry lists, Kernel::registered),
        // within its stated bound (inputs off the pivots of approximate comparisons;
        // nectar_nn::tolerance)
        for k in Kernel::registered() {
            let cols = if k.row_op() || matches!(k, Kernel::Fixed(super::Fixed::Onehot)) { 16 } else { 1 };
            let r = super::bench_secure(k, 64, cols, ot, None).unwrap_or_else(|e| panic!("{}: {e}", k.label()));
            assert_eq!((r.elements, r.cols), (64, cols), "{}", k.label());
            let tol = r.tol_lsb.expect("(64, 18) has stated bounds");
            assert!(r.max_lsb_vs_twin <= tol, "{}: {} > {tol} LSB: {r:?}", k.label(), r.max_lsb_vs_twin);
        }
        // every listed protocol of every kind is in the list
        let labels: Vec<String> = Kernel::registered().iter().map(|k| k.label()).collect();
        for name in nectar_nn::softmax::Softmax::all().map(|p| p.name()).chain(nectar_nn::norm::Norm::all().filter(|p| !p.needs_weights()).map(|p| p.name())) {
            assert!(labels.iter().any(|l| l.contains(&format!("={name}"))), "{name} not benched: {labels:?}");
        }
        // bOLEe query reuse and the narrow modulus save bytes, same bounds (16384 elements: in
        // the mixed ring's 32 bits bOLEe takes squares from ≈ 8 600 (narrow) / 12 900 (wide)
        // elements on, nectar_nn::secure::bole_pays)
        let a = super::bench_secure(seg4_mixed, 16384, 1, small, None).unwrap();
        let ablated = small.with_reuse_queries(false).with_bole_narrow(false);
        let b = super::bench_secure(seg4_mixed, 16384, 1, ablated, None).unwrap();
        assert!(a.bytes_total < b.bytes_total, "{a:?} {b:?}");
        let tol = nectar_nn::tolerance::SEG4_MIXED_TOL;
        assert!(a.max_lsb_vs_twin <= tol && b.max_lsb_vs_twin <= tol, "{a:?} {b:?}");
        // below the crossover OT products are the cheaper ones: 1024 elements in 32 bits (the
        // floor, BOLE_MIN_LEN, keeps them there too)
        let below = super::bench_secure(seg4_mixed, 1024, 1, small, None).unwrap();
        let forced = super::bench_secure(seg4_mixed, 1024, 1, small.with_bole_min_len(0), None).unwrap();
        assert!(below.bytes_total < forced.bytes_total, "{below:?} {forced:?}");
    }
}
