//! [`SecureEngine`]: the [`Engine`] of one party of the BumbleBee suite — additive shares over
//! `Z_{2^l}`, linear layers by OLT (`nectar-linear`, BumbleBee §III), element-wise products by
//! bOLEe `Π_mul` / `Π_square` (§IV) and the OT-based protocols of `nectar-mpc` (comparison,
//! MSB, mux, AND, B2A, truncation, ring extension; §V, App. E) for everything else.
//!
//! This is the secure twin of [`crate::secure::PlainEngine`]: every `Backend` method maps to one
//! protocol call on whole vectors (O(1) rounds), with the error models documented on
//! [`nectar_nn::Backend`]. (`nectar-nn` has no secure `Backend` of its own yet; this one lives
//! here, next to the engine that needs the channel for the OLTs as well.)
//!
//! Session setup ([`SecureEngine::setup`]): the OT session (base OTs both directions and the
//! COT producer), then two HE key exchanges: the OLT parameters (with Galois keys for
//! InterLeave) and the bOLEe parameters. All from the party's own fresh `Prg`.
//!
//! Products: `Π_mul` / `Π_square` by bOLEe cost a full `N = 8192`-slot query per call however
//! short the vector, so vectors shorter than [`BOLE_MIN_LEN`] use the OT-based Gilboa product of
//! `nectar-mpc` instead (cheaper below that length; AGREEMENT — both parties decide from the
//! public length). Both are followed by the truncation `Backend::mul` promises.

use crate::secure::engine::{Engine, WeightRef};
use crate::secure::profile::Profile;
use crate::secure::SecureError;
use nectar_he::Params;
use nectar_linear::matmul::{batch_matmul_shared_shared, matmul_shared_weight};
use nectar_linear::{CostModel, HeSession, OltPlan, Shape, Variant};
use nectar_math::{FixedPoint, Prg};
use nectar_mpc::Mpc;
use nectar_net::{Channel, Role, Stats};
use nectar_nn::{Backend, NnError};
use nectar_ot::Producer;
use std::collections::HashMap;

/// Vectors shorter than this use the OT-based product instead of bOLEe (AGREEMENT).
pub const BOLE_MIN_LEN: usize = 1024;

fn be<E: std::error::Error + Send + Sync + 'static>(e: E) -> NnError {
    NnError::Backend(Box::new(e))
}

/// One party's secure engine over a channel (see module docs).
pub struct SecureEngine<'c> {
    ch: &'c mut dyn Channel,
    role: Role,
    fp: FixedPoint,
    mpc: Mpc,
    olt: HeSession,
    bole: HeSession,
    prg: Prg,
    variant: Variant,
    plans: HashMap<(usize, usize, usize), OltPlan>,
    profile: Profile,
}

impl<'c> SecureEngine<'c> {
    /// Runs the session setup over `ch` (both parties call it; the peer must use the same
    /// `fp` and `producer`). `prg` must be freshly seeded for this session.
    pub fn setup(
        ch: &'c mut dyn Channel,
        role: Role,
        fp: FixedPoint,
        mut prg: Prg,
        producer: Producer,
    ) -> Result<Self, SecureError> {
        let mpc = Mpc::setup(role, &mut *ch, prg.fork(), producer).map_err(be)?;
        let olt = HeSession::setup(&mut *ch, role, Params::bumblebee_olt(), true, &mut prg)
            .map_err(be)?;
        let bole = HeSession::setup(&mut *ch, role, Params::bumblebee_bole(), false, &mut prg)
            .map_err(be)?;
        Ok(SecureEngine {
            ch,
            role,
            fp,
            mpc,
            olt,
            bole,
            prg,
            variant: Variant::Interleave,
            plans: HashMap::new(),
            profile: Profile::default(),
        })
    }

    /// The recorded per-operator profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Takes the recorded profile, leaving an empty one (one query of a session).
    pub fn take_profile(&mut self) -> Profile {
        std::mem::take(&mut self.profile)
    }

    fn l(&self) -> u32 {
        self.fp.l()
    }

    fn mask(&self) -> u64 {
        if self.l() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.l()) - 1
        }
    }

    fn plan(&mut self, k: usize, m: usize, n: usize) -> Result<OltPlan, NnError> {
        if let Some(p) = self.plans.get(&(k, m, n)) {
            return Ok(*p);
        }
        let shape = Shape::new(k, m, n).map_err(be)?;
        let p = OltPlan::choose(
            shape,
            self.olt.degree(),
            self.variant,
            &CostModel::default(),
        )
        .map_err(be)?;
        self.plans.insert((k, m, n), p);
        Ok(p)
    }

    fn same(op: &'static str, a: usize, b: usize) -> Result<(), NnError> {
        if a == b {
            Ok(())
        } else {
            Err(NnError::Length { op, a, b })
        }
    }

    fn zip(
        &self,
        op: &'static str,
        x: &[u64],
        y: &[u64],
        f: impl Fn(u64, u64) -> u64,
    ) -> Result<Vec<u64>, NnError> {
        Self::same(op, x.len(), y.len())?;
        let m = self.mask();
        Ok(x.iter().zip(y).map(|(&a, &b)| f(a, b) & m).collect())
    }
}

impl Backend for SecureEngine<'_> {
    type Val = Vec<u64>;
    type Bit = Vec<bool>;

    fn format(&self) -> FixedPoint {
        self.fp
    }
    fn set_format(&mut self, fp: FixedPoint) {
        self.fp = fp;
    }
    fn len(&self, x: &Vec<u64>) -> usize {
        x.len()
    }
    fn bit_len(&self, b: &Vec<bool>) -> usize {
        b.len()
    }
    fn constant(&mut self, c: &[u64]) -> Result<Vec<u64>, NnError> {
        self.mpc.constant(c, self.l()).map_err(be)
    }
    fn gather(&mut self, x: &Vec<u64>, idx: &[usize]) -> Result<Vec<u64>, NnError> {
        idx.iter()
            .map(|&i| {
                x.get(i).copied().ok_or(NnError::Index {
                    op: "gather",
                    index: i,
                    len: x.len(),
                })
            })
            .collect()
    }
    fn gather_bits(&mut self, b: &Vec<bool>, idx: &[usize]) -> Result<Vec<bool>, NnError> {
        idx.iter()
            .map(|&i| {
                b.get(i).copied().ok_or(NnError::Index {
                    op: "gather_bits",
                    index: i,
                    len: b.len(),
                })
            })
            .collect()
    }
    fn concat(&mut self, xs: &[&Vec<u64>]) -> Result<Vec<u64>, NnError> {
        Ok(xs.iter().flat_map(|x| x.iter().copied()).collect())
    }
    fn concat_bits(&mut self, bs: &[&Vec<bool>]) -> Result<Vec<bool>, NnError> {
        Ok(bs.iter().flat_map(|x| x.iter().copied()).collect())
    }
    fn sum_groups(&mut self, x: &Vec<u64>, group: usize) -> Result<Vec<u64>, NnError> {
        if group == 0 || x.len() % group != 0 {
            return Err(NnError::Length {
                op: "sum_groups",
                a: x.len(),
                b: group,
            });
        }
        let m = self.mask();
        Ok(x.chunks(group)
            .map(|c| c.iter().fold(0u64, |a, &v| a.wrapping_add(v)) & m)
            .collect())
    }
    fn add(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        self.zip("add", x, y, u64::wrapping_add)
    }
    fn sub(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        self.zip("sub", x, y, u64::wrapping_sub)
    }
    fn neg(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        let m = self.mask();
        Ok(x.iter().map(|&a| a.wrapping_neg() & m).collect())
    }
    fn add_const(&mut self, x: &Vec<u64>, c: &[u64]) -> Result<Vec<u64>, NnError> {
        if c.len() != 1 && c.len() != x.len() {
            return Err(NnError::Length {
                op: "add_const",
                a: x.len(),
                b: c.len(),
            });
        }
        self.mpc.add_public(x, c, self.l()).map_err(be)
    }
    fn mul_const(&mut self, x: &Vec<u64>, c: &[u64], shift: u32) -> Result<Vec<u64>, NnError> {
        if c.len() != 1 && c.len() != x.len() {
            return Err(NnError::Length {
                op: "mul_const",
                a: x.len(),
                b: c.len(),
            });
        }
        let y = self.mpc.mul_public(x, c, self.l()).map_err(be)?;
        if shift == 0 {
            Ok(y)
        } else {
            self.trunc(&y, shift)
        }
    }
    fn mul(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same("mul", x.len(), y.len())?;
        let l = self.l();
        let p = if x.len() < BOLE_MIN_LEN {
            self.mpc.mul(&mut *self.ch, x, y, l).map_err(be)?
        } else {
            nectar_linear::bole::mul(&mut *self.ch, &self.bole, self.role, x, y, l, &mut self.prg)
                .map_err(be)?
                .0
        };
        let f = self.fp.f();
        self.trunc(&p, f)
    }
    fn square(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        let l = self.l();
        let p = if x.len() < BOLE_MIN_LEN {
            self.mpc.square(&mut *self.ch, x, l).map_err(be)?
        } else {
            nectar_linear::bole::square(&mut *self.ch, &self.bole, self.role, x, l, &mut self.prg)
                .map_err(be)?
                .0
        };
        let f = self.fp.f();
        self.trunc(&p, f)
    }
    fn trunc(&mut self, x: &Vec<u64>, shift: u32) -> Result<Vec<u64>, NnError> {
        if shift == 0 || x.is_empty() {
            return Ok(x.clone());
        }
        let l = self.l();
        self.mpc.trunc(&mut *self.ch, x, l, shift).map_err(be)
    }
    fn less_than_const(
        &mut self,
        x: &Vec<u64>,
        t: &[u64],
        k: u32,
    ) -> Result<Vec<Vec<bool>>, NnError> {
        let l = self.l();
        self.mpc
            .less_than_const(&mut *self.ch, x, t, l, k)
            .map_err(be)
    }
    fn msb(&mut self, x: &Vec<u64>) -> Result<Vec<bool>, NnError> {
        let l = self.l();
        self.mpc.msb(&mut *self.ch, x, l).map_err(be)
    }
    fn mux(&mut self, b: &Vec<bool>, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same("mux", b.len(), x.len())?;
        let l = self.l();
        self.mpc.mux(&mut *self.ch, b, x, l).map_err(be)
    }
    fn and(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Self::same("and", a.len(), b.len())?;
        self.mpc.and(&mut *self.ch, a, b).map_err(be)
    }
    fn xor(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        self.mpc.xor(a, b).map_err(be)
    }
    fn not(&mut self, a: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Ok(self.mpc.not(a))
    }
    fn b2a(&mut self, b: &Vec<bool>) -> Result<Vec<u64>, NnError> {
        let l = self.l();
        self.mpc.b2a(&mut *self.ch, b, l).map_err(be)
    }
    fn extend(&mut self, x: &Vec<u64>, from: u32, to: u32) -> Result<Vec<u64>, NnError> {
        self.mpc.extend(&mut *self.ch, x, from, to).map_err(be)
    }
    fn reduce(&mut self, x: &Vec<u64>, to: u32) -> Result<Vec<u64>, NnError> {
        let m = if to >= 64 { u64::MAX } else { (1u64 << to) - 1 };
        Ok(x.iter().map(|&v| v & m).collect())
    }
    fn reveal(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        let l = self.l();
        self.mpc.reveal(&mut *self.ch, x, l).map_err(be)
    }
    fn reveal_bits(&mut self, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        self.mpc.reveal_bits(&mut *self.ch, b).map_err(be)
    }
}

impl Engine for SecureEngine<'_> {
    fn role(&self) -> Role {
        self.role
    }
    fn server_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Vec<u64>, NnError> {
        let m = self.mask();
        match (self.role, v) {
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
        match (self.role, v) {
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
        Self::same("matmul_weight X", x.len(), rows * in_dim)?;
        if self.role == Role::Server && w.values().is_none() {
            return Err(NnError::BadArgument(
                "the server must provide the weight".into(),
            ));
        }
        let plan = self.plan(rows, in_dim, out_dim)?;
        let l = self.l();
        matmul_shared_weight(
            &mut *self.ch,
            &self.olt,
            self.role,
            &plan,
            x,
            w.values(),
            l,
            &mut self.prg,
        )
        .map_err(be)
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
        Self::same("batch_matmul A", a.len(), heads * k * m)?;
        Self::same("batch_matmul B", b.len(), heads * m * n)?;
        let plan = self.plan(k, m, n)?;
        let xs: Vec<&[u64]> = a.chunks(k * m).collect();
        let ys: Vec<&[u64]> = b.chunks(m * n).collect();
        let l = self.l();
        batch_matmul_shared_shared(
            &mut *self.ch,
            &self.olt,
            self.role,
            &plan,
            &xs,
            &ys,
            l,
            &mut self.prg,
        )
        .map_err(be)
    }
    fn reveal_to(&mut self, x: &Vec<u64>, to: Role) -> Result<Option<Vec<u64>>, NnError> {
        let m = self.mask();
        if self.role == to {
            let theirs = self.ch.recv_u64s_exact(x.len()).map_err(be)?;
            Ok(Some(
                x.iter()
                    .zip(theirs)
                    .map(|(&a, b)| a.wrapping_add(b) & m)
                    .collect(),
            ))
        } else {
            let mine: Vec<u64> = x.iter().map(|&a| a & m).collect();
            self.ch.send_u64s(&mine).map_err(be)?;
            self.ch.flush().map_err(be)?;
            Ok(None)
        }
    }
    fn net_stats(&self) -> Stats {
        self.ch.stats()
    }
    fn profile_mut(&mut self) -> &mut Profile {
        &mut self.profile
    }
}

/// Converts setup errors of the lower layers.
impl From<nectar_linear::LinearError> for SecureError {
    fn from(e: nectar_linear::LinearError) -> Self {
        SecureError::Nn(be(e))
    }
}
