//! `silu = oppe`: East's oblivious piecewise polynomial (§4.1) with the committed SiLU table
//! (`crates/nn/data/east`); the evaluator is [`crate::oppe`].

use super::SiluProtocol;
use crate::backend::DynBackend;
use crate::mixed::ActRing;
use crate::oppe::{east_table, oppe, tables_params};
use crate::tolerance::oppe_tol;
use crate::NnError;
use nectar_math::registry::Protocol;

/// The protocol `silu = oppe`.
pub struct Oppe;

impl Protocol for Oppe {
    fn name(&self) -> &'static str {
        "oppe"
    }
    fn source(&self) -> &'static str {
        "East §4.1 OPPE"
    }
    fn params(&self) -> serde_json::Value {
        tables_params(&["silu"])
    }
}

impl SiluProtocol for Oppe {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, ring: ActRing) -> Result<Vec<u64>, NnError> {
        self.supports(ring).map_err(NnError::BadArgument)?;
        oppe(b, x, east_table("silu")?)
    }
    /// The table spans `|x| ≤ 16`: its cubes need more than OPPE's mixed format (32, 10) holds.
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        ring.full_only("silu=oppe:", "the SiLU table's cubes on |x| <= 16 do not fit OPPE's activation format (32, 10): use act-ring=full")
    }
    fn tolerance(&self, _ring: ActRing) -> Result<i64, NnError> {
        Ok(oppe_tol(east_table("silu")?))
    }
    /// The table's recorded twin error on its domain, with 1 % slack.
    fn approx_error(&self, _ring: ActRing) -> Result<f64, NnError> {
        Ok(east_table("silu")?.fit.twin_max_abs * 1.01)
    }
}
