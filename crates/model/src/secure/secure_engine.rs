//! [`SecureEngine`]: the [`Engine`] of one party of the BumbleBee suite — `nectar-nn`'s
//! [`SecureBackend`] (additive shares over `Z_{2^l}`; bOLEe `Π_mul` / `Π_square`, §IV; the OT
//! protocols of `nectar-mpc` for comparison, MSB, mux, AND, B2A, truncation, ring extension, §V,
//! App. E) plus the linear operators by OLT (`nectar-linear`, BumbleBee §III, InterLeave).
//!
//! This is the secure twin of [`crate::twin::PlainEngine`]: every method is one protocol call
//! on whole vectors (O(1) rounds), with the error models documented on [`nectar_nn::Backend`]
//! and [`Engine`].
//!
//! The suite fixes the backend: its `ot`, `mul` and `compare` configure the COT producer, the
//! products and the comparisons ([`Suite::backend_opts`]), its `olt-cost` the OLT window prices; the
//! layers' `matmul` and the attention's `matmul-shared` are protocols of the registry
//! (`nectar_linear::layer`, `nectar_linear::attention`) that run on this engine as their
//! session (`nectar_linear::protocol::LinearCx`); the block's other operators dispatch on the
//! rest ([`crate::secure::operators`]).
//!
//! Session setup ([`SecureEngine::setup`]): the suite is validated first (a planned protocol is
//! refused before any key is generated), then the backend's (OT session: base OTs both
//! directions and the COT producer; bOLEe keys), then the OLT key exchange (public and Galois
//! keys for InterLeave, `Params::bumblebee_olt()`, or `Params::nectar_olt_narrow()` with
//! `olt-ring = narrow`: the embeddings and heads use them under every `matmul`), then the
//! linear protocols' own keys, once per state key (`matmul = ckks` / `matmul-shared = ckks`: the
//! client's CKKS keys for BLB's per-operator matmuls). All from the party's own fresh `Prg`.
//! LEAF's keys (`ffn = leaf`, [`crate::secure::leaf`]) follow; BLB's fused executor
//! (`matmul = blb-fused`, [`crate::secure::blb`]) makes its state on first use. Both run on
//! the engine's [`Engine::session`], the engine holds no field of theirs.
//! One engine serves any number of queries of the session.

use crate::secure::engine::{Engine, EngineSession, WeightRef};
use crate::secure::profile::Profile;
use crate::secure::SecureError;
use crate::suite::Suite;
use nectar_linear::protocol::{LinearCx, LinearProtocol, OltParts, Session, State};
use nectar_linear::matmul::{batch_matmul_shared_shared, batch_matmul_shared_shared_duplex, matmul_shared_weight};
use nectar_linear::prefetch::{Prefetch, PrefetchWorker};
use nectar_linear::{CostModel, CtBytes, HeSession, LinearError, OltPlan, QueryLevel, Shape, Side, Variant};
use nectar_math::{FixedPoint, Prg};
use nectar_net::{Channel, Role, Stats};
use nectar_nn::secure::SecureBackend;
use nectar_nn::{Backend, NnError};
use std::collections::HashMap;

fn be<E: std::error::Error + Send + Sync + 'static>(e: E) -> NnError {
    NnError::Backend(Box::new(e))
}



/// Largest block-diagonal operand (entries) of a decoding step's batched head products
/// ([`SecureEngine`]'s `olt_batch_matmul`; 128 MiB of `u64`): longer caches run per head.
const DECODE_BLOCK_DIAGONAL_MAX: usize = 1 << 24;

/// One party's secure engine over a channel (see module docs).
pub struct SecureEngine<'c> {
    b: SecureBackend<'c>,
    suite: Suite,
    olt: std::sync::Arc<HeSession>,
    /// The session states of the protocols that keep keys, by key: the linear protocols'
    /// (`LinearProtocol::state_key`: `ckks` for BLB's per-operator CKKS matmuls), LEAF's
    /// (`crate::secure::leaf`), BLB's fused executor's (`crate::secure::blb`, made on first use).
    states: HashMap<&'static str, State>,
    variant: Variant,
    /// Prices the OLT window chooser minimises (AGREEMENT: both parties must use the same,
    /// or their plans differ). Default: the artifact's, which minimise bytes.
    cost: CostModel,
    plans: HashMap<(usize, usize, usize, Variant, QueryLevel), OltPlan>,
    profile: Profile,
    /// The next layer matmul's weight blocks being prepared (server; [`Engine::prefetch_layer_matmul`]).
    prefetch: Option<Prefetch>,
    /// The thread preparing them (started at the first announcement).
    prefetcher: Option<PrefetchWorker>,
    /// Bytes of prepared weight blocks a prefetch may hold ([`DEFAULT_PREFETCH_BUDGET`]).
    prefetch_budget: usize,
    /// Whether another one-row decoding step follows the current one ([`Engine::set_steps_follow`]).
    steps_follow: bool,
}

/// Default bytes of the server's prefetched weight blocks (LOCAL; `--memory-budget-mib`). One
/// block at the product level is 128 KB (2 primes × 8192 coefficients); MiniLM's largest
/// weight operator at 32 tokens has 2304 blocks (288 MiB), so this budget prepares every block
/// of each MiniLM layer; the server's peak RSS rises by about that much while a prefetched
/// operator runs. 0 disables the prefetch.
pub const DEFAULT_PREFETCH_BUDGET: usize = 320 << 20;

impl<'c> SecureEngine<'c> {
    /// Runs the session setup over `ch` (both parties call it with the same `suite`,
    /// AGREEMENT). `prg` must be freshly seeded for this session. A suite naming a protocol
    /// that is not implemented is refused before anything is sent.
    pub fn setup(
        ch: &'c mut dyn Channel,
        role: Role,
        suite: &Suite,
        mut prg: Prg,
    ) -> Result<Self, SecureError> {
        suite.validate()?;
        let opts = suite.backend_opts();
        let mut b = SecureBackend::setup(role, ch, prg.fork(), opts)?;
        let olt = std::sync::Arc::new(HeSession::setup(b.channel_mut(), role, suite.olt_ring.he_params(), true, &mut prg).map_err(be)?);
        // The linear protocols' keys (BLB's per-operator CKKS: the client's CKKS public and
        // relinearisation keys), once per state key; `matmul = blb-fused` does its attention
        // products inside its own blocks.
        let mut states = HashMap::new();
        let fp = b.format();
        let shared = (!suite.matmul.fused()).then_some(suite.matmul_shared.get() as &dyn LinearProtocol);
        let lookup = suite.embed.lookup().map(|p| p as &dyn LinearProtocol);
        for p in [Some(suite.matmul.get() as &dyn LinearProtocol), shared, lookup].into_iter().flatten() {
            let Some(key) = p.state_key() else { continue };
            if !states.contains_key(key) {
                if let Some(st) = p.setup(b.channel_mut(), role, (fp.l(), fp.f()), &mut prg)? {
                    states.insert(key, st);
                }
            }
        }
        // The FFN block's keys (`ffn = leaf`: the client's BFV / RLWE keys, ≈ 0.3 GB, once).
        if let Some(key) = suite.ffn.state_key() {
            if let Some(st) = suite.ffn.setup(b.channel_mut(), role, &mut prg)? {
                states.insert(key, st);
            }
        }
        Ok(SecureEngine {
            b,
            suite: *suite,
            olt,
            states,
            variant: Variant::Interleave,
            cost: suite.olt_cost.cost_model(),
            plans: HashMap::new(),
            profile: Profile::default(),
            prefetch: None,
            prefetcher: None,
            prefetch_budget: DEFAULT_PREFETCH_BUDGET,
            steps_follow: false,
        })
    }

    /// Sets the bytes the server may hold in weight blocks prepared ahead of their operator
    /// ([`DEFAULT_PREFETCH_BUDGET`]; 0: none). Local to the server: the protocol and the
    /// client's view do not change.
    pub fn set_prefetch_budget(&mut self, bytes: usize) {
        self.prefetch_budget = bytes;
    }

    /// The recorded per-operator profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Takes the recorded profile, leaving an empty one (one query of a session).
    pub fn take_profile(&mut self) -> Profile {
        std::mem::take(&mut self.profile)
    }

    /// The nonlinear backend (e.g. to clear its bOLEe query cache).
    pub fn backend_mut(&mut self) -> &mut SecureBackend<'c> {
        &mut self.b
    }

    fn mask(&self) -> u64 {
        let l = self.b.format().l();
        if l >= 64 {
            u64::MAX
        } else {
            (1u64 << l) - 1
        }
    }

    /// The ring `Z_{2^b}` the OLTs compute in: the shares' own (`b = l`), or with
    /// `olt-ring = narrow` the session's `t = 2^51` when the shares' ring is wider.
    fn olt_bits(&self) -> u32 {
        self.b.format().l().min(nectar_linear::h2a::plain_bits(&self.olt.params, 0))
    }

    /// OLT products in `Z_{2^olt_bits}` back in the shares' ring, truncated by `shift`: the
    /// products as they are when the rings agree (then [`nectar_nn::Backend::trunc`]), else
    /// one [`nectar_mpc::Mpc::trunc_extend`] (heuristic: `|raw| < 2^(olt_bits − 2)`, error
    /// `{0, −1}` LSB like the truncation it replaces; exact for `shift = 0`).
    fn olt_back(&mut self, raw: Vec<u64>, shift: u32) -> Result<Vec<u64>, NnError> {
        let (from, to) = (self.olt_bits(), self.b.format().l());
        if from == to {
            return if shift == 0 { Ok(raw) } else { self.b.trunc(&raw, shift) };
        }
        if raw.is_empty() {
            return Ok(raw);
        }
        let (ch, mpc, _, _) = self.b.parts();
        mpc.trunc_extend(ch, &raw, from, shift, to).map_err(be)
    }

    /// Whether an outer product `r ⊗ w` (`rows × 1 × cols`, the server's row `w`) is cheaper
    /// by [`Self::outer_by_ole`] than by the OLT: its bits (`rows·cols` OLEs of
    /// `l + l(l + 1)/2` bits at the OLT's `l`) against the OLT plan's predicted bytes
    /// ([`CtBytes::olt`]). A decoding step's single row (`norm = outer`'s `r ⊗ γ`: 1 × 576 for
    /// SmolLM2) fills one query and one response ciphertext of 8192 slots with 576 values;
    /// MiniLM's 32 rows × 384 keep the OLT. AGREEMENT: both parties decide from the public
    /// shape.
    fn ole_pays(&mut self, rows: usize, cols: usize) -> Result<bool, NnError> {
        let l = self.olt_bits() as usize;
        let ole_bits = rows.saturating_mul(cols).saturating_mul(l + l * (l + 1) / 2);
        let plan = self.weight_plan(rows, 1, cols, self.variant)?;
        let (sent, returned) = plan.bytes(CtBytes::olt(&self.olt.params));
        Ok(ole_bits <= 8 * (sent + returned))
    }

    /// `r ⊗ w` for the shared column `r` (`rows`) and the server's row `w` (`cols`), raw in
    /// `Z_{2^olt_bits}` as the OLT's: the server's term `r_S ⊗ w` local, the client's
    /// `r_C ⊗ w` by [`nectar_mpc::Mpc::ole`] (each `r_C[i]` against each `w[c]`). Exact (the
    /// OLT's raw product may be off by one in its last bit); [`Self::olt_back`] follows as for
    /// the OLT.
    fn outer_by_ole(&mut self, x: &[u64], rows: usize, cols: usize, w: WeightRef<'_>) -> Result<Vec<u64>, NnError> {
        Self::same("outer product r", x.len(), rows)?;
        let l = self.olt_bits();
        let m = nectar_mpc::words::mask(l).map_err(be)?;
        let role = self.b.role();
        let mine: Vec<u64> = match (role, w.values()) {
            (Role::Server, Some(w)) => {
                Self::same("outer product w", w.len(), cols)?;
                (0..rows).flat_map(|_| w.iter().map(|&v| v & m)).collect()
            }
            (Role::Server, None) => return Err(NnError::BadArgument("the server must provide the weight".into())),
            (Role::Client, _) => x.iter().flat_map(|&v| std::iter::repeat(v & m).take(cols)).collect(),
        };
        let (ch, mpc, _, _) = self.b.parts();
        let cross = mpc.ole(ch, &mine, l).map_err(be)?;
        Ok(match (role, w.values()) {
            (Role::Server, Some(w)) => cross
                .iter()
                .enumerate()
                .map(|(p, &c)| c.wrapping_add(x[p / cols].wrapping_mul(w[p % cols])) & m)
                .collect(),
            _ => cross,
        })
    }

    /// [`Engine::matmul_weight`]'s OLT, its product in `Z_{2^olt_bits}`.
    fn olt_matmul_weight(&mut self, x: &[u64], (rows, in_dim, out_dim): (usize, usize, usize), w: WeightRef<'_>, variant: Variant) -> Result<Vec<u64>, NnError> {
        Self::same("matmul_weight X", x.len(), rows * in_dim)?;
        if self.b.role() == Role::Server && w.values().is_none() {
            return Err(NnError::BadArgument(
                "the server must provide the weight".into(),
            ));
        }
        let plan = self.weight_plan(rows, in_dim, out_dim, variant)?;
        let (l, role) = (self.olt_bits(), self.b.role());
        // The blocks prepared for this very weight, if the last announcement was this one.
        let prepared = match (&self.prefetch, w.values()) {
            (Some(p), Some(v)) if p.matches(&plan, Side::Rhs, v) => self.prefetch.take().map(|p| p.finish()).transpose().map_err(be)?,
            _ => None,
        };
        let (ch, _, _, prg) = self.b.parts();
        matmul_shared_weight(ch, &self.olt, role, &plan, x, w.values(), l, prg, prepared).map_err(be)
    }

    /// The two OLTs of `H` shared products on `plan`, one after the other or (`duplex`) in the
    /// same flights, their products in `Z_{2^olt_bits}`.
    fn shared_products(&mut self, plan: &OltPlan, xs: &[&[u64]], ys: &[&[u64]], duplex: bool) -> Result<Vec<u64>, NnError> {
        let (l, role) = (self.olt_bits(), self.b.role());
        let (ch, _, _, prg) = self.b.parts();
        let run = if duplex { batch_matmul_shared_shared_duplex::<dyn Channel> } else { batch_matmul_shared_shared::<dyn Channel> };
        run(ch, &self.olt, role, plan, xs, ys, l, prg).map_err(be)
    }

    /// [`Engine::batch_matmul_shared`]'s two OLTs, their products in `Z_{2^olt_bits}`
    /// ([`Self::shared_products`]).
    fn olt_batch_matmul(&mut self, a: &[u64], b: &[u64], (heads, k, m, n): (usize, usize, usize, usize), duplex: bool) -> Result<Vec<u64>, NnError> {
        Self::same("batch_matmul A", a.len(), heads * k * m)?;
        Self::same("batch_matmul B", b.len(), heads * m * n)?;
        let (hm, hn) = (heads * m, heads * n);
        if k == 1 && heads > 1 && hm.saturating_mul(hn) <= DECODE_BLOCK_DIAGONAL_MAX {
            // One query row per head (a decoding step with the KV cache): the heads as one
            // product `(1 × H·m)·blockdiag(Y_h)` of `H·m × H·n`, whose output row is the heads'
            // outputs in order. Each cross term's OLT then sends one query ciphertext and the
            // few response ciphertexts of `H·n` values, instead of at least one of each per head
            // (the zero blocks cost plaintext products only). Same ring values; both parties
            // choose it from the public shape.
            let mut bd = vec![0u64; hm * hn];
            for (h, yh) in b.chunks(m * n).enumerate() {
                for (i, row) in yh.chunks(n).enumerate() {
                    let at = (h * m + i) * hn + h * n;
                    bd[at..at + n].copy_from_slice(row);
                }
            }
            let plan = self.plan(1, hm, hn)?;
            return self.shared_products(&plan, &[a], &[&bd], duplex);
        }
        let g = self.head_group(heads, k, m, n)?;
        if g > 1 {
            return self.grouped_batch_matmul(a, b, (heads, k, m, n), g, duplex);
        }
        let plan = self.plan(k, m, n)?;
        let xs: Vec<&[u64]> = a.chunks(k * m).collect();
        let ys: Vec<&[u64]> = b.chunks(m * n).collect();
        self.shared_products(&plan, &xs, &ys, duplex)
    }

    /// Heads per block-diagonal product of a batched `k × m × n` product with `k > 1`
    /// (attention prefill; a batch of inputs makes inputs × heads of them, issue 52): the group
    /// size `g` (a power of two, `g·m × g·n` within [`DECODE_BLOCK_DIAGONAL_MAX`]) of least
    /// predicted OLT cost, `⌈H/g⌉ · cost(k, g·m, g·n)` against `H · cost(k, m, n)`; 1 runs
    /// each head alone. Small heads fill few ciphertext slots each, so grouping them sends
    /// far fewer query and response ciphertexts; the zero blocks cost plaintext products
    /// only. Both parties choose from the public shape.
    fn head_group(&mut self, heads: usize, k: usize, m: usize, n: usize) -> Result<usize, NnError> {
        if k <= 1 || heads <= 1 {
            return Ok(1);
        }
        let cost = self.cost;
        let one = heads as f64 * self.plan(k, m, n)?.cost(&cost);
        let (mut best, mut best_cost) = (1, one);
        let mut g = 2;
        while g <= heads.next_power_of_two() && (g * m).saturating_mul(g * n) <= DECODE_BLOCK_DIAGONAL_MAX {
            let c = heads.div_ceil(g) as f64 * self.plan(k, g * m, g * n)?.cost(&cost);
            if c < best_cost {
                (best, best_cost) = (g, c);
            }
            g *= 2;
        }
        Ok(best)
    }

    /// [`Engine::batch_matmul_shared`] with the heads in groups of `g`, each group one product
    /// `(k × g·m)·blockdiag(Y_h)` whose output row `i` is the group's heads' rows `i` side by
    /// side (the last group padded with zero heads); all groups in one batched OLT.
    fn grouped_batch_matmul(&mut self, a: &[u64], b: &[u64], (heads, k, m, n): (usize, usize, usize, usize), g: usize, duplex: bool) -> Result<Vec<u64>, NnError> {
        let groups = heads.div_ceil(g);
        let (gm, gn) = (g * m, g * n);
        let mut xs = vec![vec![0u64; k * gm]; groups];
        let mut ys = vec![vec![0u64; gm * gn]; groups];
        for h in 0..heads {
            let (q, j) = (h / g, h % g);
            for i in 0..k {
                xs[q][i * gm + j * m..i * gm + (j + 1) * m].copy_from_slice(&a[(h * k + i) * m..(h * k + i + 1) * m]);
            }
            for r in 0..m {
                ys[q][(j * m + r) * gn + j * n..(j * m + r) * gn + (j + 1) * n].copy_from_slice(&b[(h * m + r) * n..(h * m + r + 1) * n]);
            }
        }
        let plan = self.plan(k, gm, gn)?;
        let xr: Vec<&[u64]> = xs.iter().map(Vec::as_slice).collect();
        let yr: Vec<&[u64]> = ys.iter().map(Vec::as_slice).collect();
        let out = self.shared_products(&plan, &xr, &yr, duplex)?;
        let mut c = Vec::with_capacity(heads * k * n);
        for h in 0..heads {
            let (q, j) = (h / g, h % g);
            for i in 0..k {
                let at = q * k * gn + i * gn + j * n;
                c.extend_from_slice(&out[at..at + n]);
            }
        }
        Ok(c)
    }

    fn plan(&mut self, k: usize, m: usize, n: usize) -> Result<OltPlan, NnError> {
        self.plan_with(k, m, n, self.variant)
    }

    /// The plan of a `k × m × n` product with the server's weight: its query at the response
    /// level where the suite's OLT ring sends them there
    /// ([`nectar_linear::olt_ring::OltRingProtocol::low_weight_queries`]), its windows priced
    /// with that query ([`OltPlan::choose_for`]).
    fn weight_plan(&mut self, k: usize, m: usize, n: usize, variant: Variant) -> Result<OltPlan, NnError> {
        let query = if self.suite.olt_ring.low_weight_queries() { QueryLevel::Response } else { QueryLevel::Top };
        self.plan_for(k, m, n, variant, query)
    }

    /// The OLT plan of a `k × m × n` product with the packing `variant` (cached).
    fn plan_with(&mut self, k: usize, m: usize, n: usize, variant: Variant) -> Result<OltPlan, NnError> {
        self.plan_for(k, m, n, variant, QueryLevel::Top)
    }

    fn plan_for(&mut self, k: usize, m: usize, n: usize, variant: Variant, query: QueryLevel) -> Result<OltPlan, NnError> {
        if let Some(p) = self.plans.get(&(k, m, n, variant, query)) {
            return Ok(*p);
        }
        let shape = Shape::new(k, m, n).map_err(be)?;
        let p = OltPlan::choose_for(shape, self.olt.degree(), variant, &self.cost, query).map_err(be)?;
        self.plans.insert((k, m, n, variant, query), p);
        Ok(p)
    }

    fn same(op: &'static str, a: usize, b: usize) -> Result<(), NnError> {
        if a == b {
            Ok(())
        } else {
            Err(NnError::Length { op, a, b })
        }
    }
}

/// The session a linear protocol runs on (`nectar_linear::protocol`): the backend's channel, MPC
/// protocols and PRG, the protocols' states, and the OLT every session holds.
impl LinearCx for SecureEngine<'_> {
    fn format(&self) -> (u32, u32) {
        let fp = self.b.format();
        (fp.l(), fp.f())
    }
    fn session(&mut self, key: Option<&str>) -> Session<'_> {
        let state = key.and_then(|k| self.states.get_mut(k)).map(|s| s.as_mut() as &mut (dyn std::any::Any + Send));
        let (ch, mpc, _, prg) = self.b.parts();
        Session { ch, mpc, prg, state }
    }
    fn olt_matmul_weight(&mut self, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, shift: u32, variant: Variant) -> Result<Vec<u64>, LinearError> {
        let raw = self.olt_matmul_weight(x, shape, WeightRef::from_option(w), variant).map_err(session)?;
        self.olt_back(raw, shift).map_err(session)
    }
    fn olt_batch_matmul(&mut self, a: &[u64], b: &[u64], shape: (usize, usize, usize, usize), shift: u32, duplex: bool) -> Result<Vec<u64>, LinearError> {
        let raw = self.olt_batch_matmul(a, b, shape, duplex).map_err(session)?;
        self.olt_back(raw, shift).map_err(session)
    }
    fn olt_parts(&mut self, (rows, in_dim, out_dim): (usize, usize, usize), key: Option<&str>) -> Result<OltParts<'_>, LinearError> {
        let plan = self.weight_plan(rows, in_dim, out_dim, Variant::Interleave).map_err(session)?;
        let bits = self.olt_bits();
        let state = key.and_then(|k| self.states.get_mut(k)).map(|s| s.as_mut() as &mut (dyn std::any::Any + Send));
        let (ch, _, _, prg) = self.b.parts();
        Ok(OltParts { ch, prg, sess: &self.olt, plan, bits, state })
    }
    fn olt_finish(&mut self, raw: Vec<u64>, shift: u32) -> Result<Vec<u64>, LinearError> {
        self.olt_back(raw, shift).map_err(session)
    }
    fn steps_follow(&self) -> bool {
        self.steps_follow
    }
}

/// An engine error inside a linear protocol.
fn session(e: NnError) -> LinearError {
    LinearError::Session(Box::new(e))
}

crate::secure::engine::delegate_backend!(SecureEngine<'_>);

impl Engine for SecureEngine<'_> {
    fn suite(&self) -> &Suite {
        &self.suite
    }
    fn role(&self) -> Role {
        self.b.role()
    }
    fn server_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Vec<u64>, NnError> {
        let m = self.mask();
        match (self.b.role(), v) {
            (Role::Server, Some(v)) if v.len() == n => Ok(v.iter().map(|&a| a & m).collect()),
            (Role::Server, Some(v)) => Err(NnError::Length {
                op: "server_input",
                a: v.len(),
                b: n,
            }),
            (Role::Server, None) => Err(NnError::BadArgument(
                "the server must provide its weights".into(),
            )),
            (Role::Client, _) => Ok(vec![0; n]),
        }
    }
    fn client_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Vec<u64>, NnError> {
        let m = self.mask();
        match (self.b.role(), v) {
            (Role::Client, Some(v)) if v.len() == n => Ok(v.iter().map(|&a| a & m).collect()),
            (Role::Client, Some(v)) => Err(NnError::Length {
                op: "client_input",
                a: v.len(),
                b: n,
            }),
            (Role::Client, None) => Err(NnError::BadArgument(
                "the client must provide its input".into(),
            )),
            (Role::Server, _) => Ok(vec![0; n]),
        }
    }
    fn matmul_weight(
        &mut self,
        x: &Vec<u64>,
        rows: usize,
        in_dim: usize,
        out_dim: usize,
        w: WeightRef<'_>,
    ) -> Result<Vec<u64>, NnError> {
        let raw = self.olt_matmul_weight(x, (rows, in_dim, out_dim), w, self.variant)?;
        self.olt_back(raw, 0)
    }
    fn matmul_weight_trunc(
        &mut self,
        x: &Vec<u64>,
        shape: (usize, usize, usize),
        w: WeightRef<'_>,
        shift: u32,
    ) -> Result<Vec<u64>, NnError> {
        let (rows, in_dim, out_dim) = shape;
        let raw = if in_dim == 1 && self.ole_pays(rows, out_dim)? {
            self.outer_by_ole(x, rows, out_dim, w)?
        } else {
            self.olt_matmul_weight(x, shape, w, self.variant)?
        };
        self.olt_back(raw, shift)
    }
    fn set_steps_follow(&mut self, more: bool) {
        self.steps_follow = more;
    }
    fn prefetch_layer_matmul(&mut self, rows: usize, in_dim: usize, out_dim: usize, w: Option<&std::sync::Arc<Vec<u64>>>) -> Result<(), NnError> {
        // Only where `layer_matmul` is an OLT whose evaluator is the server.
        let Some(v) = w else {
            return Ok(());
        };
        if !self.suite.matmul.prefetch(rows) || self.prefetch_budget == 0 {
            return Ok(());
        }
        let plan = self.weight_plan(rows, in_dim, out_dim, self.variant)?;
        if plan.rhs_encrypts {
            return Ok(());
        }
        // A prefetch never used (its operator did not come) stops at its next block.
        drop(self.prefetch.take());
        if self.prefetcher.is_none() {
            self.prefetcher = Some(PrefetchWorker::new().map_err(be)?);
        }
        if let Some(w) = &self.prefetcher {
            self.prefetch = Some(w.start(&self.olt.params, plan, Side::Rhs, std::sync::Arc::clone(v), self.prefetch_budget).map_err(be)?);
        }
        Ok(())
    }
    fn batch_matmul_shared(
        &mut self,
        a: &Vec<u64>,
        b: &Vec<u64>,
        heads: usize,
        k: usize,
        m: usize,
        n: usize,
    ) -> Result<Vec<u64>, NnError> {
        let raw = self.olt_batch_matmul(a, b, (heads, k, m, n), false)?;
        self.olt_back(raw, 0)
    }
    fn batch_matmul_shared_trunc(
        &mut self,
        a: &Vec<u64>,
        b: &Vec<u64>,
        shape: (usize, usize, usize, usize),
        shift: u32,
    ) -> Result<Vec<u64>, NnError> {
        let raw = self.olt_batch_matmul(a, b, shape, false)?;
        self.olt_back(raw, shift)
    }
    fn layer_matmul(
        &mut self,
        x: &Vec<u64>,
        rows: usize,
        in_dim: usize,
        out_dim: usize,
        w: WeightRef<'_>,
        key: &str,
    ) -> Result<Vec<u64>, NnError> {
        let p = self.suite.matmul;
        match w {
            WeightRef::Server(v) => p.layer_matmul(self, x, (rows, in_dim, out_dim), Some(v), key),
            WeightRef::Shared(v) => p.layer_matmul_shared(self, x, (rows, in_dim, out_dim), Some(v), key),
            WeightRef::Client => p.layer_matmul_shared(self, x, (rows, in_dim, out_dim), None, key),
        }
        .map_err(be)
    }
    fn embed_matmul(&mut self, x: &Vec<u64>, rows: usize, vocab: usize, dim: usize, w: WeightRef<'_>, key: &str) -> Result<Vec<u64>, NnError> {
        match self.suite.embed.lookup() {
            Some(p) => p.lookup(self, x, (rows, vocab, dim), w.values(), key).map_err(be),
            None => self.matmul_weight(x, rows, vocab, dim, w),
        }
    }
    fn preload_embed(&mut self, vocab: usize, dim: usize, w: WeightRef<'_>, key: &str) -> Result<(), NnError> {
        match self.suite.embed.lookup() {
            Some(p) => p.preload_lookup(self, (vocab, dim), w.values(), key).map_err(be),
            None => Ok(()),
        }
    }
    fn attention_matmul(
        &mut self,
        a: &Vec<u64>,
        b: &Vec<u64>,
        heads: usize,
        k: usize,
        m: usize,
        n: usize,
    ) -> Result<Vec<u64>, NnError> {
        let p = self.suite.matmul_shared;
        p.attention_matmul(self, a, b, (heads, k, m, n)).map_err(be)
    }
    fn session(&mut self) -> Option<EngineSession<'_>> {
        let role = self.b.role();
        let (ch, mpc, _, prg) = self.b.parts();
        Some(EngineSession { ch, mpc, prg, role, states: &mut self.states })
    }
    fn reveal_to(&mut self, x: &Vec<u64>, to: Role) -> Result<Option<Vec<u64>>, NnError> {
        let m = self.mask();
        if self.b.role() == to {
            let theirs = self.b.channel_mut().recv_u64s_exact(x.len()).map_err(be)?;
            Ok(Some(
                x.iter()
                    .zip(theirs)
                    .map(|(&a, b)| a.wrapping_add(b) & m)
                    .collect(),
            ))
        } else {
            let mine: Vec<u64> = x.iter().map(|&a| a & m).collect();
            let ch = self.b.channel_mut();
            ch.send_u64s(&mine).map_err(be)?;
            ch.flush().map_err(be)?;
            Ok(None)
        }
    }
    fn net_stats(&self) -> Stats {
        self.b.stats()
    }
    fn prepro_cost(&self) -> (u64, f64) {
        let p = self.b.prepro_cost();
        (p.bytes_total(), p.seconds)
    }
    fn profile_mut(&mut self) -> &mut Profile {
        &mut self.profile
    }
    fn operator_boundary(&mut self) {
        // P0's bOLEe reuse test compares its own shares, and P0's share of a server input is
        // the weight itself: across operators, two equal weight vectors (e.g. LayerNorm γ of
        // two layers) would be reused and the client would see that they are equal. Inside
        // one operator the reused operands are the same secret by construction (x, x²).
        self.b.clear_query_cache();
    }
}

/// Converts errors of LEAF's block.
impl From<nectar_fhe::FheError> for SecureError {
    fn from(e: nectar_fhe::FheError) -> Self {
        SecureError::Nn(be(e))
    }
}

/// Converts setup errors of the lower layers.
impl From<nectar_linear::LinearError> for SecureError {
    fn from(e: nectar_linear::LinearError) -> Self {
        SecureError::Nn(be(e))
    }
}
