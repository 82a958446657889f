//! `ffn = leaf`: LEAF §2–3 — `act(X·W1 + b1)` by the server alone under FHE (coefficient PCMM
//! and BFV functional bootstrapping, [`nectar_fhe::ffn`]) between two share conversions. Its
//! session state is one party's side of the block with the client's BFV / RLWE keys (LEAF's
//! `N = 32768` set, [`LeafFfnParams::wide`]; ≈ 0.3 GB, sent once).

use super::{FfnProtocol, State};
use nectar_fhe::{FheError, LeafFfnClient, LeafFfnParams, LeafFfnServer};
use nectar_math::registry::{Protocol, Security};
use nectar_math::Prg;
use nectar_net::{Channel, Role};

/// The session state key of LEAF's keys.
pub const STATE_KEY: &str = "leaf";

/// One party's side of LEAF's block: the session state of `ffn = leaf`.
pub enum LeafParty {
    Client(LeafFfnClient),
    Server(Box<LeafFfnServer>),
}

/// The protocol `ffn = leaf`.
pub struct Leaf;

impl Protocol for Leaf {
    fn name(&self) -> &'static str {
        "leaf"
    }
    fn source(&self) -> &'static str {
        "LEAF §2-3"
    }
    fn params(&self) -> serde_json::Value {
        match LeafFfnParams::wide() {
            Ok(p) => serde_json::json!({ "bfv": format!("{:#x}", p.bfv.fingerprint()), "rlwe_n": p.fmt.rp.n(), "rlwe_log_q": p.fmt.rp.log_q(), "x_frac": p.fmt.x_frac, "out_frac": p.fmt.out_frac }),
            Err(e) => serde_json::Value::from(format!("invalid ({e})")),
        }
    }
    fn security(&self) -> Result<Security, String> {
        Ok(LeafFfnParams::wide().map_err(|e| format!("LEAF parameters: {e}"))?.security())
    }
}

impl FfnProtocol for Leaf {
    fn whole_block(&self) -> bool {
        true
    }
    fn state_key(&self) -> Option<&'static str> {
        Some(STATE_KEY)
    }
    /// The client sends its keys; the server keeps them with its evaluator.
    fn setup(&self, ch: &mut dyn Channel, role: Role, prg: &mut Prg) -> Result<Option<State>, FheError> {
        let p = LeafFfnParams::wide()?;
        Ok(Some(match role {
            Role::Client => Box::new(LeafParty::Client(LeafFfnClient::setup(ch, p, prg)?)),
            Role::Server => Box::new(LeafParty::Server(Box::new(LeafFfnServer::setup(ch, p)?))),
        }))
    }
}
