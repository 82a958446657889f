//! `exp = oppe`: East's oblivious piecewise polynomial (§4.1) with the committed exp table; the
//! BERT pooler's tanh then takes East's own OPPE tanh table (`crates/nn/data/east`).

use super::ExpProtocol;
use crate::backend::DynBackend;
use crate::oppe::{east_table, oppe, tables_params};
use crate::tolerance::oppe_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `exp = oppe`.
pub struct Oppe;

impl Protocol for Oppe {
    fn name(&self) -> &'static str {
        "oppe"
    }
    fn source(&self) -> &'static str {
        "East §4.1 OPPE"
    }
    fn params(&self) -> serde_json::Value {
        tables_params(&["exp", "tanh"])
    }
}

impl ExpProtocol for Oppe {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, _clip_l: Option<u32>) -> Result<Vec<u64>, NnError> {
        oppe(b, x, east_table("exp")?)
    }
    /// Its table's powers need the full ring's headroom.
    fn fits(&self, fp: FixedPoint) -> Result<(), String> {
        let t = east_table("exp").map_err(|e| e.to_string())?;
        crate::poly::check_headroom("oppe", fp, t.power_log2()).map_err(|e| e.to_string())
    }
    fn tanh(&self, b: &mut DynBackend<'_>, x: &Vec<u64>) -> Option<Result<Vec<u64>, NnError>> {
        Some(east_table("tanh").and_then(|t| oppe(b, x, t)))
    }
    fn tanh_tolerance(&self, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(oppe_tol(east_table("tanh")?))
    }
    fn tolerance(&self, _fp: FixedPoint) -> Result<i64, NnError> {
        Ok(oppe_tol(east_table("exp")?))
    }
    /// The table's recorded twin error on its domain, with 1 % slack.
    fn approx_error(&self) -> Result<f64, NnError> {
        Ok(east_table("exp")?.fit.twin_max_abs * 1.01)
    }
}
