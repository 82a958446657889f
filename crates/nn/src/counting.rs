//! [`CountingBackend`]: a wrapper that counts, per primitive, the calls and the elements
//! processed, so the cost of an operator in the secure backend can be derived from a twin run
//! (calls ≈ rounds, elements × per-element cost ≈ bytes; REFERENCE.md §2.4–2.7 give the
//! per-element costs).
//!
//! For `less_than_const` the element count is `n × thresholds`, and `bits` records the width of
//! the compared values (`l − ignore_low_bits`); for ring-width–dependent primitives `bits` is the
//! current `l` (sum over calls of elements × bits), so a cost model can be `Σ bits × c`.
//!
//! [`primitive_counts`] runs one whole operator on the plaintext twin under a
//! [`CountingBackend`] and returns its counts ([`TwinCounts`]; the numbers of
//! `docs/results/nonlinear.md`).

use crate::backend::{Backend, LutIndex};
use crate::NnError;
use nectar_math::FixedPoint;
use std::collections::BTreeMap;
use std::time::Instant;

/// Counts of one primitive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCount {
    /// Calls (each is O(1) rounds in the secure backend).
    pub calls: u64,
    /// Elements processed over all calls.
    pub elements: u64,
    /// Σ over calls of elements × ring bits of the operation.
    pub element_bits: u64,
}

/// A backend that forwards to `inner` and counts (see module docs).
#[derive(Clone, Debug)]
pub struct CountingBackend<B> {
    pub inner: B,
    counts: BTreeMap<&'static str, OpCount>,
}

impl<B: Backend> CountingBackend<B> {
    pub fn new(inner: B) -> Self {
        CountingBackend { inner, counts: BTreeMap::new() }
    }
    /// Counts so far, by primitive name (only primitives that were called).
    pub fn counts(&self) -> &BTreeMap<&'static str, OpCount> {
        &self.counts
    }
    /// Count of one primitive (zero if never called).
    pub fn count(&self, op: &str) -> OpCount {
        self.counts.get(op).copied().unwrap_or_default()
    }
    /// Calls of interactive primitives (an upper bound on rounds / O(1)).
    pub fn interactive_calls(&self) -> u64 {
        INTERACTIVE.iter().map(|op| self.count(op).calls).sum()
    }
    pub fn reset(&mut self) {
        self.counts.clear();
    }
    fn rec(&mut self, op: &'static str, n: usize, bits: u32) {
        let c = self.counts.entry(op).or_default();
        c.calls += 1;
        c.elements += n as u64;
        c.element_bits += n as u64 * bits as u64;
    }
    fn l(&self) -> u32 {
        self.inner.format().l()
    }
}

/// The primitives that communicate in the secure backend.
pub const INTERACTIVE: [&str; 12] =
    ["mul", "square", "trunc", "mul_const_trunc", "less_than", "msb", "mux", "and", "b2a", "lut", "extend", "reveal"];

impl<B: Backend> Backend for CountingBackend<B> {
    type Val = B::Val;
    type Bit = B::Bit;

    fn format(&self) -> FixedPoint {
        self.inner.format()
    }
    fn set_format(&mut self, fp: FixedPoint) {
        self.inner.set_format(fp)
    }
    fn len(&self, x: &Self::Val) -> usize {
        self.inner.len(x)
    }
    fn bit_len(&self, b: &Self::Bit) -> usize {
        self.inner.bit_len(b)
    }
    fn constant(&mut self, c: &[u64]) -> Result<Self::Val, NnError> {
        self.inner.constant(c)
    }
    fn gather(&mut self, x: &Self::Val, idx: &[usize]) -> Result<Self::Val, NnError> {
        self.inner.gather(x, idx)
    }
    fn gather_bits(&mut self, b: &Self::Bit, idx: &[usize]) -> Result<Self::Bit, NnError> {
        self.inner.gather_bits(b, idx)
    }
    fn concat(&mut self, xs: &[&Self::Val]) -> Result<Self::Val, NnError> {
        self.inner.concat(xs)
    }
    fn concat_bits(&mut self, bs: &[&Self::Bit]) -> Result<Self::Bit, NnError> {
        self.inner.concat_bits(bs)
    }
    fn sum_groups(&mut self, x: &Self::Val, group: usize) -> Result<Self::Val, NnError> {
        self.inner.sum_groups(x, group)
    }
    fn add(&mut self, x: &Self::Val, y: &Self::Val) -> Result<Self::Val, NnError> {
        self.inner.add(x, y)
    }
    fn sub(&mut self, x: &Self::Val, y: &Self::Val) -> Result<Self::Val, NnError> {
        self.inner.sub(x, y)
    }
    fn neg(&mut self, x: &Self::Val) -> Result<Self::Val, NnError> {
        self.inner.neg(x)
    }
    fn add_const(&mut self, x: &Self::Val, c: &[u64]) -> Result<Self::Val, NnError> {
        self.inner.add_const(x, c)
    }
    fn mul_const(&mut self, x: &Self::Val, c: &[u64], shift: u32) -> Result<Self::Val, NnError> {
        if shift > 0 {
            let (n, l) = (self.inner.len(x), self.l());
            self.rec("mul_const_trunc", n, l);
        }
        self.inner.mul_const(x, c, shift)
    }
    fn mul(&mut self, x: &Self::Val, y: &Self::Val) -> Result<Self::Val, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("mul", n, l);
        self.inner.mul(x, y)
    }
    fn square(&mut self, x: &Self::Val) -> Result<Self::Val, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("square", n, l);
        self.inner.square(x)
    }
    fn trunc(&mut self, x: &Self::Val, shift: u32) -> Result<Self::Val, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("trunc", n, l);
        self.inner.trunc(x, shift)
    }
    fn less_than_const(
        &mut self,
        x: &Self::Val,
        thresholds: &[u64],
        ignore_low_bits: u32,
    ) -> Result<Vec<Self::Bit>, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("less_than", n * thresholds.len(), l.saturating_sub(ignore_low_bits));
        self.inner.less_than_const(x, thresholds, ignore_low_bits)
    }
    fn msb(&mut self, x: &Self::Val) -> Result<Self::Bit, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("msb", n, l);
        self.inner.msb(x)
    }
    fn mux(&mut self, b: &Self::Bit, x: &Self::Val) -> Result<Self::Val, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("mux", n, l);
        self.inner.mux(b, x)
    }
    fn and(&mut self, a: &Self::Bit, b: &Self::Bit) -> Result<Self::Bit, NnError> {
        let n = self.inner.bit_len(a);
        self.rec("and", n, 1);
        self.inner.and(a, b)
    }
    fn xor(&mut self, a: &Self::Bit, b: &Self::Bit) -> Result<Self::Bit, NnError> {
        self.inner.xor(a, b)
    }
    fn not(&mut self, a: &Self::Bit) -> Result<Self::Bit, NnError> {
        self.inner.not(a)
    }
    fn b2a(&mut self, b: &Self::Bit) -> Result<Self::Val, NnError> {
        let (n, l) = (self.inner.bit_len(b), self.l());
        self.rec("b2a", n, l);
        self.inner.b2a(b)
    }
    fn lut(&mut self, x: &Self::Val, idx: LutIndex, tables: &[&[u64]]) -> Result<Vec<Self::Val>, NnError> {
        let n = self.inner.len(x);
        self.rec("lut", n, idx.bits);
        self.inner.lut(x, idx, tables)
    }
    fn extend(&mut self, x: &Self::Val, from_bits: u32, to_bits: u32) -> Result<Self::Val, NnError> {
        let n = self.inner.len(x);
        self.rec("extend", n, to_bits.saturating_sub(from_bits));
        self.inner.extend(x, from_bits, to_bits)
    }
    fn reduce(&mut self, x: &Self::Val, to_bits: u32) -> Result<Self::Val, NnError> {
        self.inner.reduce(x, to_bits)
    }
    fn reveal(&mut self, x: &Self::Val) -> Result<Vec<u64>, NnError> {
        let (n, l) = (self.inner.len(x), self.l());
        self.rec("reveal", n, l);
        self.inner.reveal(x)
    }
    fn reveal_bits(&mut self, b: &Self::Bit) -> Result<Vec<bool>, NnError> {
        let n = self.inner.bit_len(b);
        self.rec("reveal", n, 1);
        self.inner.reveal_bits(b)
    }
}

/// Operators [`primitive_counts`] knows.
pub const OPERATORS: [&str; 12] = [
    "gelu", "gelu-mixed", "gelu-p4", "gelu-p4-mixed", "silu", "exp", "exp-mixed", "softmax", "layernorm", "rsqrt",
    "reciprocal", "argmax",
];

/// Counts and time of one operator run on the twin.
#[derive(Clone, Debug)]
pub struct TwinCounts {
    pub op: String,
    /// Elements (for row operators: rows × cols).
    pub elements: usize,
    pub twin_seconds: f64,
    pub counts: BTreeMap<&'static str, OpCount>,
}

/// Run `op` on `elements` inputs (row operators use rows of `cols`) under a [`CountingBackend`].
pub fn primitive_counts(op: &str, elements: usize, cols: usize) -> Result<TwinCounts, NnError> {
    use crate::*;
    let fp = FixedPoint::BUMBLEBEE;
    let mut b = CountingBackend::new(PlainBackend::new(fp)?);
    let cols = cols.max(1);
    let rows = elements.div_ceil(cols);
    let n = if matches!(op, "softmax" | "layernorm" | "argmax") { rows * cols } else { elements };
    let xs: Vec<f64> = (0..n).map(|i| 4.0 * (((i * 7919 + 13) % 1000) as f64 / 500.0 - 1.0)).collect();
    let x = b.inner.encode(&xs)?;
    let t = Instant::now();
    match op {
        "gelu" => drop(gelu::seg4_gelu(&mut b, &x, &gelu::SEG4_BUMBLEBEE)?),
        "gelu-mixed" => drop(gelu::seg4_gelu_mixed(&mut b, &x, &gelu::SEG4_BUMBLEBEE)?),
        "gelu-p4" => drop(gelu::p4_gelu(&mut b, &x, &gelu::P4_BOLT)?),
        "gelu-p4-mixed" => drop(gelu::p4_gelu_mixed(&mut b, &x, &gelu::P4_BOLT)?),
        "silu" => drop(silu::silu(&mut b, &x, &silu::SILU_BUMBLEBEE)?),
        "exp" | "exp-mixed" => {
            let nx = b.neg(&x)?;
            let d = b.add_const(&nx, &[backend::enc(&b, -4.0)?])?;
            if op == "exp" {
                drop(exp::exp_neg(&mut b, &d, &exp::EXP_BUMBLEBEE)?)
            } else {
                drop(exp::exp_neg_mixed(&mut b, &d, &exp::EXP_BUMBLEBEE)?)
            }
        }
        "softmax" => drop(softmax::softmax(&mut b, &x, rows, cols, None, &softmax::SOFTMAX_BUMBLEBEE)?),
        "layernorm" => {
            let g = b.inner.encode(&vec![1.0; cols])?;
            let be = b.inner.encode(&vec![0.0; cols])?;
            drop(layernorm::layernorm(&mut b, &x, rows, cols, &g, &be, &layernorm::LAYERNORM_DEFAULT)?)
        }
        "rsqrt" | "reciprocal" => {
            let sq = b.square(&x)?;
            let pos = b.add_const(&sq, &[backend::enc(&b, 1.0)?])?;
            b.reset();
            if op == "rsqrt" {
                drop(rsqrt::rsqrt(&mut b, &pos, &rsqrt::RSQRT_LAYERNORM, &rsqrt::BY_FOUR)?)
            } else {
                drop(reciprocal::reciprocal(&mut b, &pos, &reciprocal::RECIP_SOFTMAX)?)
            }
        }
        "argmax" => drop(max::argmax_rows_narrow(&mut b, &x, rows, cols)?),
        other => return Err(NnError::BadArgument(format!("unknown operator {other}; known: {OPERATORS:?}"))),
    }
    Ok(TwinCounts { op: op.to_string(), elements: n, twin_seconds: t.elapsed().as_secs_f64(), counts: b.counts().clone() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn all_ops_profile() {
        for op in super::OPERATORS {
            let p = super::primitive_counts(op, 256, 64).unwrap();
            assert!(!p.counts.is_empty(), "{op}");
        }
        assert!(super::primitive_counts("nope", 4, 1).is_err());
    }
}
