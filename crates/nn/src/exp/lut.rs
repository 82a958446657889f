//! `exp = lut`: ROTL's two `2^8`-entry lookup tables (§II-E; CipherGPT): the integer and the
//! fractional part of `x` each index one table, the two entries multiplied; the evaluator is
//! [`crate::lut::exp_lut`].

use super::ExpProtocol;
use crate::backend::DynBackend;
use crate::lut::{exp_lut, EXP_LUT};
use crate::tolerance::exp_lut_tol;
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The protocol `exp = lut`.
pub struct Lut;

impl Protocol for Lut {
    fn name(&self) -> &'static str {
        "lut"
    }
    fn source(&self) -> &'static str {
        "ROTL §II-E LUT exp"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "lut": EXP_LUT, "tables": EXP_LUT.tables_f64() })
    }
    fn security(&self) -> Result<nectar_math::registry::Security, String> {
        Ok(crate::lut::security())
    }
}

impl ExpProtocol for Lut {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, _clip_l: Option<u32>) -> Result<Vec<u64>, NnError> {
        exp_lut(b, x, &EXP_LUT)
    }
    /// The tables' indices need `l >= f + 22` ([`exp_lut`]).
    fn fits(&self, fp: FixedPoint) -> Result<(), String> {
        if fp.f() < EXP_LUT.frac_bits || fp.l() < fp.f() + 22 {
            return Err(format!("exp=lut needs l >= f + 22 and f >= {}, not ({}, {})", EXP_LUT.frac_bits, fp.l(), fp.f()));
        }
        Ok(())
    }
    fn tolerance(&self, fp: FixedPoint) -> Result<i64, NnError> {
        Ok(exp_lut_tol(&EXP_LUT, fp.f()))
    }
    /// Only its own rounding: the table entries (2^−19 each) and the input's truncation to the
    /// tables' grid (relative 2^−12 of an output ≤ 1), as [`exp_lut_tol`] states in LSB.
    fn approx_error(&self) -> Result<f64, NnError> {
        Ok(exp_lut_tol(&EXP_LUT, 18) as f64 / 18f64.exp2())
    }
}
