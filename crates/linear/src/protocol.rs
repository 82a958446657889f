//! What every linear protocol (`matmul`, `matmul-shared`; `crate::layer`, `crate::attention`)
//! shares: its session keys ([`LinearProtocol`]) and the session it runs on ([`LinearCx`], one
//! party's engine, `nectar_model::secure::SecureEngine`).

use crate::session::HeSession;
use crate::{LinearError, OltPlan, Variant};
use nectar_math::registry::Protocol;
use nectar_math::Prg;
use nectar_mpc::Mpc;
use nectar_net::{Channel, Role};
use std::any::Any;
use std::sync::Arc;

/// One party's session state of a linear protocol (its keys), made at setup.
pub type State = Box<dyn Any + Send>;

/// One party's session as a linear protocol sees it: the channel, the MPC protocols, the PRG
/// and the protocol's state ([`LinearCx::session`]).
pub struct Session<'a> {
    pub ch: &'a mut dyn Channel,
    pub mpc: &'a mut Mpc,
    pub prg: &'a mut Prg,
    /// The state made at setup under the protocol's [`LinearProtocol::state_key`].
    pub state: Option<&'a mut (dyn Any + Send)>,
}

/// The session's OLT as a protocol that runs its halves itself ([`crate::layer::olt_ahead`])
/// sees it, with the state kept under the key asked for.
pub struct OltParts<'a> {
    pub ch: &'a mut dyn Channel,
    pub prg: &'a mut Prg,
    /// The session's OLT keys, shareable with work that outlives the call.
    pub sess: &'a Arc<HeSession>,
    /// The plan the session's OLT uses for the server's weight of the shape asked for.
    pub plan: OltPlan,
    /// The OLT's ring `Z_{2^bits}` (the suite's `olt-ring`).
    pub bits: u32,
    pub state: Option<&'a mut (dyn Any + Send)>,
}

/// What a linear protocol runs on: one party's engine (`nectar_model::secure::SecureEngine`).
pub trait LinearCx {
    /// The shares' fixed-point format `(l, f)`.
    fn format(&self) -> (u32, u32);
    /// The channel, MPC protocols, PRG and the state kept under `key`.
    fn session(&mut self, key: Option<&str>) -> Session<'_>;
    /// `x·W` by the session's OLT (every session holds the OLT keys: the embeddings and heads
    /// use them under every `matmul`) with the packing `variant` (AGREEMENT: it shapes the
    /// plan), truncated by `shift`.
    fn olt_matmul_weight(&mut self, x: &[u64], shape: (usize, usize, usize), w: Option<&[u64]>, shift: u32, variant: Variant) -> Result<Vec<u64>, LinearError>;
    /// Per head `A_h·B_h` of shares by the session's two OLTs, truncated by `shift`; with
    /// `duplex` the two OLTs cross the link in the same flights
    /// ([`crate::matmul::batch_matmul_shared_shared_duplex`]).
    fn olt_batch_matmul(&mut self, a: &[u64], b: &[u64], shape: (usize, usize, usize, usize), shift: u32, duplex: bool) -> Result<Vec<u64>, LinearError>;
    /// The session's OLT for a `rows × in × out` product with the server's weight (the plan
    /// [`LinearCx::olt_matmul_weight`] uses with [`Variant::Interleave`]), and the state kept
    /// under `key`.
    fn olt_parts(&mut self, shape: (usize, usize, usize), key: Option<&str>) -> Result<OltParts<'_>, LinearError>;
    /// Shares of raw OLT products (mod `2^bits` of [`OltParts`]) back in the shares' ring,
    /// truncated by `shift`: what [`LinearCx::olt_matmul_weight`] does after its OLT.
    fn olt_finish(&mut self, raw: Vec<u64>, shift: u32) -> Result<Vec<u64>, LinearError>;
    /// Whether another decoding step — one new row through every layer weight — follows the
    /// step this call belongs to (set by the generation loop from the public generation
    /// length, the same on both parties; false outside a generation).
    fn steps_follow(&self) -> bool;
}

/// What every linear protocol (`matmul`, `matmul-shared`) has beyond its name: the keys it
/// exchanges once per session.
pub trait LinearProtocol: Protocol {
    /// The key its session state is kept under; protocols sharing keys share it (`matmul =
    /// ckks` and `matmul-shared = ckks` hold one CKKS key set). `None`: no keys beyond the OLT
    /// keys every session has.
    fn state_key(&self) -> Option<&'static str> {
        None
    }

    /// Exchanges its keys at session setup, after the OLT keys, once per state key; both
    /// parties call it (AGREEMENT).
    fn setup(&self, ch: &mut dyn Channel, role: Role, format: (u32, u32), prg: &mut Prg) -> Result<Option<State>, LinearError> {
        let _ = (ch, role, format, prg);
        Ok(None)
    }
}

