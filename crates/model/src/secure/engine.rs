//! [`Engine`]: the arithmetic a transformer runs on — `nectar-nn`'s [`Backend`] (fixed-point
//! primitives and the nonlinear protocols built on them) plus the linear operators on whole
//! tensors (BumbleBee §III: OLT-based matrix products).
//!
//! Tensors are row-major `Val`s with explicit shapes. Products are returned **untruncated**
//! (raw ring products: scale `f_x + f_w`); the caller truncates once (see
//! [`crate::secure::layers::linear`]) — one truncation per output element, after the whole sum.
//!
//! Roles: the server's weights are its secret, so every operator that takes a weight takes a
//! [`WeightRef`]: the server passes `WeightRef::Server(values)`, the client `WeightRef::Client`
//! (it only knows the shape, which is public). The same model code therefore serves both
//! parties; a party passing the wrong variant gets [`NnError::BadArgument`].

use crate::secure::profile::Profile;
use crate::secure::SecureError;
use crate::suite::Suite;
use nectar_net::{Role, Stats};
use nectar_nn::{Backend, NnError};
use std::time::Instant;

/// A server-held fixed-point tensor as seen by one party (see module docs).
#[derive(Clone, Copy, Debug)]
pub enum WeightRef<'a> {
    /// The server's values (raw ring elements of the current format).
    Server(&'a [u64]),
    /// The server's values, shared: a protocol may keep them past the call
    /// (`nectar_linear::layer::MatmulProtocol::layer_matmul_shared`).
    Shared(&'a std::sync::Arc<Vec<u64>>),
    /// The client's view: the shape only.
    Client,
}

impl<'a> WeightRef<'a> {
    /// `Server(v)` if `v` is `Some`, else `Client`.
    pub fn from_option(v: Option<&'a [u64]>) -> Self {
        v.map_or(WeightRef::Client, WeightRef::Server)
    }
    /// `Shared(v)` if `v` is `Some`, else `Client`.
    pub fn from_shared(v: Option<&'a std::sync::Arc<Vec<u64>>>) -> Self {
        v.map_or(WeightRef::Client, WeightRef::Shared)
    }
    /// The values, if this party holds them.
    pub fn values(&self) -> Option<&'a [u64]> {
        match self {
            WeightRef::Server(v) => Some(v),
            WeightRef::Shared(v) => Some(v.as_slice()),
            WeightRef::Client => None,
        }
    }
}

/// One party's two-party session as [`Engine::session`] hands it out.
pub struct EngineSession<'a> {
    pub ch: &'a mut dyn nectar_net::Channel,
    pub mpc: &'a mut nectar_mpc::Mpc,
    pub prg: &'a mut nectar_math::Prg,
    pub role: Role,
    /// The session states of the protocols that keep keys, by key (made at setup or on first
    /// use).
    pub states: &'a mut std::collections::HashMap<&'static str, nectar_linear::protocol::State>,
}

/// The arithmetic of a two-party transformer (see module docs). Values are `Vec<u64>` like
/// every backend's, so a registered protocol (`nectar_nn::backend::DynBackend`) runs on any engine.
///
/// Cost of the secure implementation (BumbleBee §III, §VII): `matmul_weight` is one OLT (client
/// share × server weight, plus the server's local product), one flight each way;
/// `batch_matmul_shared` is two batched OLTs (the cross terms) for all heads at once.
pub trait Engine: Backend<Val = Vec<u64>, Bit = Vec<bool>> {
    /// Which party this engine runs (the twin answers `Server`: it holds everything).
    fn role(&self) -> Role;

    /// The protocol of every operator (fixed for the engine's lifetime; the block's operators
    /// dispatch on it, see [`crate::secure::operators`]).
    fn suite(&self) -> &Suite;

    /// Whether this engine holds both parties' secrets (the plaintext twin).
    fn is_twin(&self) -> bool {
        false
    }

    /// Whether operator `op` (a profile-row name of [`crate::secure::exact::EXACT_OPS`]) is
    /// to be evaluated exactly instead of by the suite's approximation: only the twin can be
    /// asked for this (error attribution, `nectar accuracy`); a secure engine answers `false`.
    fn exact(&self, _op: &str) -> bool {
        false
    }

    /// Shares of a server-private vector of `n` raw ring elements (server: `Some(v)`, its share
    /// is `v` and the client's is 0). Local, exact.
    fn server_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Self::Val, NnError>;

    /// Shares of a client-private vector of `n` raw ring elements (client: `Some(v)`). Local,
    /// exact.
    fn client_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Self::Val, NnError>;

    /// `X · W` for shared `X` (`rows × in_dim`) and the server's `W` (`in_dim × out_dim`,
    /// row-major); the raw ring product (not truncated), `rows × out_dim`.
    /// Secure error model: exact mod `2^l` up to H2A's rare ±1 LSB; with `olt-ring = narrow`
    /// for raw products `|x·w| < 2^49` (computed mod `2^51`, then extended).
    fn matmul_weight(
        &mut self,
        x: &Self::Val,
        rows: usize,
        in_dim: usize,
        out_dim: usize,
        w: WeightRef<'_>,
    ) -> Result<Self::Val, NnError>;

    /// `H` products `A_h · B_h` of shared `A_h` (`k × m`) and `B_h` (`m × n`), concatenated
    /// in `a` (`H·k·m`) and `b` (`H·m·n`); the raw products `H·k·n`, concatenated.
    fn batch_matmul_shared(
        &mut self,
        a: &Self::Val,
        b: &Self::Val,
        heads: usize,
        k: usize,
        m: usize,
        n: usize,
    ) -> Result<Self::Val, NnError>;

    /// [`Engine::matmul_weight`] truncated once by `shift` (heads, LayerNorm `outer`, and the
    /// default [`Engine::layer_matmul`]). Default: the raw product, then the backend's
    /// truncation; the secure engine with `olt-ring = narrow` truncates while it extends.
    fn matmul_weight_trunc(
        &mut self,
        x: &Self::Val,
        (rows, in_dim, out_dim): (usize, usize, usize),
        w: WeightRef<'_>,
        shift: u32,
    ) -> Result<Self::Val, NnError> {
        let raw = self.matmul_weight(x, rows, in_dim, out_dim, w)?;
        self.trunc(&raw, shift)
    }

    /// [`Engine::batch_matmul_shared`] truncated once by `shift` (the default
    /// [`Engine::attention_matmul`]). Default: the raw products, then the backend's truncation.
    fn batch_matmul_shared_trunc(
        &mut self,
        a: &Self::Val,
        b: &Self::Val,
        (heads, k, m, n): (usize, usize, usize, usize),
        shift: u32,
    ) -> Result<Self::Val, NnError> {
        let raw = self.batch_matmul_shared(a, b, heads, k, m, n)?;
        self.trunc(&raw, shift)
    }

    /// `X · W` truncated once by `f`, for a transformer layer's linear operators (the suite's
    /// `matmul`; heads, patch and token embeddings use [`Engine::matmul_weight`]). Default:
    /// the raw product, then the backend's truncation. `key` names the weight for both parties
    /// (its tensor names; `nectar_linear::layer::MatmulProtocol::layer_matmul`).
    fn layer_matmul(
        &mut self,
        x: &Self::Val,
        rows: usize,
        in_dim: usize,
        out_dim: usize,
        w: WeightRef<'_>,
        key: &str,
    ) -> Result<Self::Val, NnError> {
        let _ = key;
        truncated_matmul_weight(self, x, rows, in_dim, out_dim, w)
    }

    /// The token-embedding lookup `one_hot × table` (`x`: `rows × vocab` one-hot rows as ring
    /// integers; `w`: the server's `vocab × dim` table), not truncated. `key` names the table
    /// for both parties. Default: [`Engine::matmul_weight`] (an OLT, unless the suite's `embed`
    /// names a lookup protocol, `nectar_nn::embed::EmbedProtocol::lookup`).
    fn embed_matmul(&mut self, x: &Self::Val, rows: usize, vocab: usize, dim: usize, w: WeightRef<'_>, key: &str) -> Result<Self::Val, NnError> {
        let _ = key;
        self.matmul_weight(x, rows, vocab, dim, w)
    }

    /// Session setup's share of [`Engine::embed_matmul`] on the table `key` (`vocab × dim`; `w`
    /// the server's): what its lookup protocol would send at the first query
    /// (`nectar_linear::layer::MatmulProtocol::preload_lookup`). Both parties call it once,
    /// right after the engine's setup ([`crate::secure::SecureModel::preload`]). Default:
    /// nothing.
    fn preload_embed(&mut self, vocab: usize, dim: usize, w: WeightRef<'_>, key: &str) -> Result<(), NnError> {
        let _ = (vocab, dim, w, key);
        Ok(())
    }

    /// Whether another decoding step of one new row follows the step that runs next (the
    /// generation loop's, [`crate::arch::ArchOps::steps_follow`]): a `matmul` protocol may
    /// prepare that step's products ahead (`olt-ahead`). Default: ignored.
    fn set_steps_follow(&mut self, more: bool) {
        let _ = more;
    }

    /// Announces the next [`Engine::layer_matmul`] of the server's `w` (`in_dim × out_dim`, on
    /// `rows` rows) while other operators run first: an engine may prepare its part of that
    /// product in the background (the secure server transforms the weight's OLT blocks on an
    /// idle core, [`nectar_linear::prefetch`]), holding `w` (the server's; `None` on the
    /// client) until the product takes it. Nothing is sent; the product's messages and result
    /// do not change. Default: nothing.
    fn prefetch_layer_matmul(&mut self, _rows: usize, _in_dim: usize, _out_dim: usize, _w: Option<&std::sync::Arc<Vec<u64>>>) -> Result<(), NnError> {
        Ok(())
    }

    /// The attention products (`Q_h·K_h^T`, `P_h·V_h`; the suite's `matmul-shared`) as in
    /// [`Engine::batch_matmul_shared`], truncated once by `f`. Default: the raw products, then
    /// the backend's truncation.
    fn attention_matmul(
        &mut self,
        a: &Self::Val,
        b: &Self::Val,
        heads: usize,
        k: usize,
        m: usize,
        n: usize,
    ) -> Result<Self::Val, NnError> {
        truncated_batch_matmul(self, a, b, heads, k, m, n)
    }

    /// One shared×shared product `A · B` (`k×m` · `m×n`), raw.
    fn matmul_shared(
        &mut self,
        a: &Self::Val,
        b: &Self::Val,
        k: usize,
        m: usize,
        n: usize,
    ) -> Result<Self::Val, NnError> {
        self.batch_matmul_shared(a, b, 1, k, m, n)
    }

    /// `x + bias` broadcast over `rows` rows of `cols`, the bias being the server's (the server
    /// adds it to its share; the client passes `WeightRef::Client`). Local, exact.
    fn add_bias(
        &mut self,
        x: &Self::Val,
        rows: usize,
        cols: usize,
        bias: WeightRef<'_>,
    ) -> Result<Self::Val, NnError> {
        let b = self.server_input(bias.values(), cols)?;
        let t = self.gather(&b, &(0..rows * cols).map(|p| p % cols).collect::<Vec<_>>())?;
        self.add(x, &t)
    }

    /// The two-party session under this engine — channel, MPC protocols, PRG, role and the
    /// session states of the protocols that keep keys (`nectar_linear::protocol::State`, by
    /// key) — or `None` for the plaintext twin. A protocol that runs whole blocks of its own on
    /// shares (BLB's fused blocks, `crate::secure::blb`; LEAF's FFN block,
    /// `crate::secure::leaf`) runs its secure side on it and its twin where there is none.
    fn session(&mut self) -> Option<EngineSession<'_>> {
        None
    }

    /// Opens `x` to `to` only: returns `Some(values)` on that party, `None` on the other.
    fn reveal_to(&mut self, x: &Self::Val, to: Role) -> Result<Option<Vec<u64>>, NnError>;

    /// This party's channel counters so far (zero for the twin).
    fn net_stats(&self) -> Stats;

    /// Cumulative bytes (both directions) and seconds of input-independent preprocessing so
    /// far (zero for the twin and for suites without a preprocessing phase).
    fn prepro_cost(&self) -> (u64, f64) {
        (0, 0.0)
    }

    /// The per-operator profile being recorded.
    fn profile_mut(&mut self) -> &mut Profile;
    /// Called by [`timed`] as each operator starts (both parties at the same point,
    /// AGREEMENT): the secure engine forgets its cached bOLEe queries there, so a query is
    /// reused only inside one operator (module docs of `nectar_nn::secure`, query reuse).
    fn operator_boundary(&mut self) {}
}

/// [`Engine::matmul_weight`] truncated once by `f` (the default of [`Engine::layer_matmul`];
/// the heads and embeddings always take this path).
pub fn truncated_matmul_weight<E: Engine + ?Sized>(
    e: &mut E,
    x: &E::Val,
    rows: usize,
    in_dim: usize,
    out_dim: usize,
    w: WeightRef<'_>,
) -> Result<E::Val, NnError> {
    let f = e.format().f();
    e.matmul_weight_trunc(x, (rows, in_dim, out_dim), w, f)
}

/// [`Engine::batch_matmul_shared`] truncated once by `f` (the default of
/// [`Engine::attention_matmul`]).
pub fn truncated_batch_matmul<E: Engine + ?Sized>(
    e: &mut E,
    a: &E::Val,
    b: &E::Val,
    heads: usize,
    k: usize,
    m: usize,
    n: usize,
) -> Result<E::Val, NnError> {
    let f = e.format().f();
    e.batch_matmul_shared_trunc(a, b, (heads, k, m, n), f)
}

/// Runs `f` and records its time and communication under `op`, with the protocol the suite
/// names for it (only at the outermost level: nested calls belong to their caller's row).
pub fn timed<E, T, F>(e: &mut E, op: &str, f: F) -> Result<T, SecureError>
where
    E: Engine,
    F: FnOnce(&mut E) -> Result<T, SecureError>,
{
    let start = Timing::enter(e);
    let out = f(e);
    start.leave(e, op);
    out
}

/// The counters at the start of a [`timed`] step, for a step whose body holds the engine
/// inside something else ([`crate::secure::block::EngineBlock`]'s steps).
pub(crate) struct Timing {
    before: nectar_net::Stats,
    pre: (u64, f64),
    t0: Instant,
}

impl Timing {
    /// Starts a step (an operator boundary, see [`Engine::operator_boundary`]).
    pub(crate) fn enter<E: Engine>(e: &mut E) -> Self {
        e.operator_boundary();
        let before = e.net_stats();
        let pre = e.prepro_cost();
        let t0 = Instant::now();
        e.profile_mut().enter();
        Timing { before, pre, t0 }
    }

    /// Ends the step and records it under `op` if it is the outermost one.
    pub(crate) fn leave<E: Engine>(self, e: &mut E, op: &str) {
        if e.profile_mut().leave() {
            let delta = e.net_stats() - self.before;
            let protocol = e.suite().protocol_for(op);
            let (pb, ps) = e.prepro_cost();
            e.profile_mut()
                .record(op, protocol, self.t0.elapsed().as_secs_f64(), delta);
            e.profile_mut().record_prepro(op, pb - self.pre.0, ps - self.pre.1);
            let msgs = |s: &nectar_net::Stats| s.msgs_sent + s.msgs_recv;
            e.profile_mut().record_span(op, msgs(&self.before), msgs(&self.before) + msgs(&delta));
        }
    }
}

/// `impl Backend` for an engine that wraps a `Backend<Val = Vec<u64>, Bit = Vec<bool>>` in its
/// field `b` and forwards every primitive to it (the plaintext twin and the secure engine add
/// only the linear operators of [`Engine`] on top).
macro_rules! delegate_backend {
    ($ty:ty) => {
        impl nectar_nn::Backend for $ty {
            type Val = Vec<u64>;
            type Bit = Vec<bool>;

            fn format(&self) -> FixedPoint {
                self.b.format()
            }
            fn set_format(&mut self, fp: FixedPoint) {
                self.b.set_format(fp)
            }
            fn len(&self, x: &Vec<u64>) -> usize {
                x.len()
            }
            fn bit_len(&self, b: &Vec<bool>) -> usize {
                b.len()
            }
            fn constant(&mut self, c: &[u64]) -> Result<Vec<u64>, NnError> {
                self.b.constant(c)
            }
            fn gather(&mut self, x: &Vec<u64>, idx: &[usize]) -> Result<Vec<u64>, NnError> {
                self.b.gather(x, idx)
            }
            fn gather_bits(&mut self, b: &Vec<bool>, idx: &[usize]) -> Result<Vec<bool>, NnError> {
                self.b.gather_bits(b, idx)
            }
            fn concat(&mut self, xs: &[&Vec<u64>]) -> Result<Vec<u64>, NnError> {
                self.b.concat(xs)
            }
            fn concat_bits(&mut self, bs: &[&Vec<bool>]) -> Result<Vec<bool>, NnError> {
                self.b.concat_bits(bs)
            }
            fn sum_groups(&mut self, x: &Vec<u64>, group: usize) -> Result<Vec<u64>, NnError> {
                self.b.sum_groups(x, group)
            }
            fn add(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.add(x, y)
            }
            fn sub(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.sub(x, y)
            }
            fn neg(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.neg(x)
            }
            fn add_const(&mut self, x: &Vec<u64>, c: &[u64]) -> Result<Vec<u64>, NnError> {
                self.b.add_const(x, c)
            }
            fn mul_const(
                &mut self,
                x: &Vec<u64>,
                c: &[u64],
                shift: u32,
            ) -> Result<Vec<u64>, NnError> {
                self.b.mul_const(x, c, shift)
            }
            fn mul(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.mul(x, y)
            }
            fn square(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.square(x)
            }
            fn trunc(&mut self, x: &Vec<u64>, shift: u32) -> Result<Vec<u64>, NnError> {
                self.b.trunc(x, shift)
            }
            fn less_than_const(
                &mut self,
                x: &Vec<u64>,
                t: &[u64],
                k: u32,
            ) -> Result<Vec<Vec<bool>>, NnError> {
                self.b.less_than_const(x, t, k)
            }
            fn msb(&mut self, x: &Vec<u64>) -> Result<Vec<bool>, NnError> {
                self.b.msb(x)
            }
            fn mux(&mut self, b: &Vec<bool>, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.mux(b, x)
            }
            fn and(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
                self.b.and(a, b)
            }
            fn xor(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
                self.b.xor(a, b)
            }
            fn not(&mut self, a: &Vec<bool>) -> Result<Vec<bool>, NnError> {
                self.b.not(a)
            }
            fn b2a(&mut self, b: &Vec<bool>) -> Result<Vec<u64>, NnError> {
                self.b.b2a(b)
            }
            fn lut(
                &mut self,
                x: &Vec<u64>,
                idx: nectar_nn::backend::LutIndex,
                tables: &[&[u64]],
            ) -> Result<Vec<Vec<u64>>, NnError> {
                self.b.lut(x, idx, tables)
            }
            fn extend(&mut self, x: &Vec<u64>, from: u32, to: u32) -> Result<Vec<u64>, NnError> {
                self.b.extend(x, from, to)
            }
            fn reduce(&mut self, x: &Vec<u64>, to: u32) -> Result<Vec<u64>, NnError> {
                self.b.reduce(x, to)
            }
            fn reveal(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
                self.b.reveal(x)
            }
            fn reveal_bits(&mut self, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
                self.b.reveal_bits(b)
            }
            /// One OLT against the server's row `w` (`matmul_weight_trunc` with `in_dim = 1`).
            fn outer_weight(&mut self, r: &Vec<u64>, w: Option<&[u64]>, cols: usize, shift: u32) -> Result<Vec<u64>, NnError> {
                let rows = r.len();
                let w = crate::secure::engine::WeightRef::from_option(w);
                crate::secure::engine::Engine::matmul_weight_trunc(self, r, (rows, 1, cols), w, shift)
            }
        }
    };
}
pub(crate) use delegate_backend;
