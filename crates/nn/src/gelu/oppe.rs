//! `gelu = oppe`: East's oblivious piecewise polynomial (§4.1) with the committed table of the
//! checkpoint's GeLU form (`crates/nn/data/east`, fitted by [`crate::fit`]); the evaluator is
//! [`crate::oppe`].

use super::{by_form, GeluForm, GeluProtocol};
use crate::backend::DynBackend;
use crate::mixed::ActRing;
use crate::oppe::{east_table, oppe, oppe_mixed, tables_params};
use crate::tolerance::{oppe_mixed_tol, oppe_mixed_twin_error, oppe_tol};
use crate::NnError;
use nectar_math::registry::Protocol;

/// The protocol `gelu = oppe`.
pub struct Oppe;

/// The table of `form`.
fn table_name(form: GeluForm) -> &'static str {
    by_form(form, "gelu", "gelu_tanh")
}

impl Protocol for Oppe {
    fn name(&self) -> &'static str {
        "oppe"
    }
    fn source(&self) -> &'static str {
        "East §4.1 OPPE"
    }
    fn params(&self) -> serde_json::Value {
        tables_params(&["gelu", "gelu_tanh"])
    }
}

impl GeluProtocol for Oppe {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        let t = east_table(table_name(form))?;
        match ring {
            ActRing::Full => oppe(b, x, t),
            ActRing::Mixed => oppe_mixed(b, x, t),
        }
    }
    fn tolerance(&self, form: GeluForm, ring: ActRing) -> Result<i64, NnError> {
        let t = east_table(table_name(form))?;
        Ok(ring.pick(oppe_tol(t), oppe_mixed_tol(t)))
    }
    /// The table's recorded twin error (at (64, 18), on its domain) with 1 % slack; in the
    /// mixed ring (32, 10) also the twin's own rounding there ([`oppe_mixed_twin_error`]).
    fn approx_error(&self, form: GeluForm, ring: ActRing) -> Result<f64, NnError> {
        let t = east_table(table_name(form))?;
        Ok(t.fit.twin_max_abs * 1.01 + ring.pick(0.0, oppe_mixed_twin_error(t)))
    }
    /// The breakpoints of both tables: exact comparisons pick the same piece in the twin and
    /// the protocol, but in the mixed ring the entering truncation may move `x` one LSB' below
    /// a breakpoint in one of them.
    fn pivots(&self) -> Vec<f64> {
        let mut v: Vec<f64> = ["gelu", "gelu_tanh"]
            .iter()
            .filter_map(|f| east_table(f).ok())
            .flat_map(|t| t.breaks.iter().copied())
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }
}
