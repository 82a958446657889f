//! The plaintext fixed-point twin: [`PlainBackend`] implements [`Backend`] on the values
//! themselves (`Vec<u64>` in `Z_{2^l}`, `l <= 64`) and bits (`Vec<bool>`).
//!
//! It computes what the secure protocols compute, with their deterministic semantics (ring
//! wrap-around, MSB-of-difference comparisons, approximate less-than on `l − k` bits) and the
//! exact version of their randomised ones (floor truncation, error-free products); see the error
//! models in [`crate::backend`]. No communication, no randomness.

use crate::backend::{Backend, LutIndex};
use crate::NnError;
use nectar_math::{FixedPoint, Ring};

/// The plaintext twin (see module docs).
#[derive(Clone, Debug)]
pub struct PlainBackend {
    fp: FixedPoint,
    ring: Ring<u64>,
}

impl PlainBackend {
    /// A twin in format `fp` (`l <= 64`).
    pub fn new(fp: FixedPoint) -> Result<Self, NnError> {
        let ring = Ring::<u64>::new(fp.l())?;
        Ok(PlainBackend { fp, ring })
    }

    /// Encode reals in the current format (error when out of range).
    pub fn encode(&self, xs: &[f64]) -> Result<Vec<u64>, NnError> {
        Ok(self.fp.encode_vec(xs)?)
    }

    /// Decode values of the current format.
    pub fn decode(&self, v: &[u64]) -> Vec<f64> {
        self.fp.decode_vec(v)
    }

    fn same_len(op: &'static str, a: usize, b: usize) -> Result<(), NnError> {
        if a == b {
            Ok(())
        } else {
            Err(NnError::Length { op, a, b })
        }
    }

    /// Broadcast a constant slice (len 1 or n) to an element accessor.
    fn constant_at<'a>(op: &'static str, c: &'a [u64], n: usize) -> Result<impl Fn(usize) -> u64 + 'a, NnError> {
        if c.len() != 1 && c.len() != n {
            return Err(NnError::Length { op, a: n, b: c.len() });
        }
        Ok(move |i: usize| if c.len() == 1 { c[0] } else { c[i] })
    }

    fn shift(&self, v: u64, s: u32) -> u64 {
        self.ring.from_signed(self.ring.to_signed(v) >> s.min(127))
    }
}

impl Backend for PlainBackend {
    type Val = Vec<u64>;
    type Bit = Vec<bool>;

    fn format(&self) -> FixedPoint {
        self.fp
    }
    fn set_format(&mut self, fp: FixedPoint) {
        self.fp = fp;
        // `fp.l() >= 2` by construction; formats wider than 64 bits cannot be held in u64 words
        // and are clamped (the operators only use l <= 64).
        self.ring = crate::backend::ring_of(fp);
    }
    fn len(&self, x: &Vec<u64>) -> usize {
        x.len()
    }
    fn bit_len(&self, b: &Vec<bool>) -> usize {
        b.len()
    }

    fn constant(&mut self, c: &[u64]) -> Result<Vec<u64>, NnError> {
        Ok(c.iter().map(|&v| self.ring.reduce(v)).collect())
    }
    fn gather(&mut self, x: &Vec<u64>, idx: &[usize]) -> Result<Vec<u64>, NnError> {
        idx.iter()
            .map(|&i| x.get(i).copied().ok_or(NnError::Index { op: "gather", index: i, len: x.len() }))
            .collect()
    }
    fn gather_bits(&mut self, b: &Vec<bool>, idx: &[usize]) -> Result<Vec<bool>, NnError> {
        idx.iter()
            .map(|&i| b.get(i).copied().ok_or(NnError::Index { op: "gather_bits", index: i, len: b.len() }))
            .collect()
    }
    fn concat(&mut self, xs: &[&Vec<u64>]) -> Result<Vec<u64>, NnError> {
        Ok(xs.iter().flat_map(|x| x.iter().copied()).collect())
    }
    fn concat_bits(&mut self, bs: &[&Vec<bool>]) -> Result<Vec<bool>, NnError> {
        Ok(bs.iter().flat_map(|x| x.iter().copied()).collect())
    }
    fn sum_groups(&mut self, x: &Vec<u64>, group: usize) -> Result<Vec<u64>, NnError> {
        if group == 0 || !x.len().is_multiple_of(group) {
            return Err(NnError::Length { op: "sum_groups", a: x.len(), b: group });
        }
        Ok(x.chunks(group).map(|c| c.iter().fold(0u64, |a, &v| self.ring.add(a, v))).collect())
    }

    fn add(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same_len("add", x.len(), y.len())?;
        Ok(x.iter().zip(y).map(|(&a, &b)| self.ring.add(a, b)).collect())
    }
    fn sub(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same_len("sub", x.len(), y.len())?;
        Ok(x.iter().zip(y).map(|(&a, &b)| self.ring.sub(a, b)).collect())
    }
    fn neg(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Ok(x.iter().map(|&a| self.ring.neg(a)).collect())
    }
    fn add_const(&mut self, x: &Vec<u64>, c: &[u64]) -> Result<Vec<u64>, NnError> {
        let at = Self::constant_at("add_const", c, x.len())?;
        Ok(x.iter().enumerate().map(|(i, &a)| self.ring.add(a, at(i))).collect())
    }
    fn mul_const(&mut self, x: &Vec<u64>, c: &[u64], shift: u32) -> Result<Vec<u64>, NnError> {
        let at = Self::constant_at("mul_const", c, x.len())?;
        Ok(x.iter().enumerate().map(|(i, &a)| self.shift(self.ring.mul(a, at(i)), shift)).collect())
    }

    fn mul(&mut self, x: &Vec<u64>, y: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same_len("mul", x.len(), y.len())?;
        let f = self.fp.f();
        Ok(x.iter().zip(y).map(|(&a, &b)| self.shift(self.ring.mul(a, b), f)).collect())
    }
    fn square(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        let f = self.fp.f();
        Ok(x.iter().map(|&a| self.shift(self.ring.mul(a, a), f)).collect())
    }
    fn trunc(&mut self, x: &Vec<u64>, shift: u32) -> Result<Vec<u64>, NnError> {
        Ok(x.iter().map(|&a| self.shift(a, shift)).collect())
    }
    fn less_than_const(
        &mut self,
        x: &Vec<u64>,
        thresholds: &[u64],
        ignore_low_bits: u32,
    ) -> Result<Vec<Vec<bool>>, NnError> {
        let l = self.ring.bits();
        let k = ignore_low_bits;
        if k + 2 > l {
            return Err(NnError::BadArgument(format!("ignore_low_bits {k} leaves < 2 bits of Z_2^{l}")));
        }
        let small = Ring::<u64>::new(l - k)?;
        Ok(thresholds
            .iter()
            .map(|&t| {
                let ts = self.ring.to_signed(t) >> k;
                x.iter()
                    .map(|&v| {
                        let xs = self.ring.to_signed(v) >> k;
                        small.msb(small.sub(small.from_signed(xs), small.from_signed(ts)))
                    })
                    .collect()
            })
            .collect())
    }
    fn msb(&mut self, x: &Vec<u64>) -> Result<Vec<bool>, NnError> {
        Ok(x.iter().map(|&a| self.ring.msb(a)).collect())
    }
    fn mux(&mut self, b: &Vec<bool>, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Self::same_len("mux", b.len(), x.len())?;
        Ok(b.iter().zip(x).map(|(&s, &a)| if s { a } else { 0 }).collect())
    }
    fn and(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Self::same_len("and", a.len(), b.len())?;
        Ok(a.iter().zip(b).map(|(&p, &q)| p & q).collect())
    }
    fn xor(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Self::same_len("xor", a.len(), b.len())?;
        Ok(a.iter().zip(b).map(|(&p, &q)| p ^ q).collect())
    }
    fn not(&mut self, a: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Ok(a.iter().map(|&p| !p).collect())
    }
    fn b2a(&mut self, b: &Vec<bool>) -> Result<Vec<u64>, NnError> {
        Ok(b.iter().map(|&p| p as u64).collect())
    }
    fn lut(&mut self, x: &Vec<u64>, idx: LutIndex, tables: &[&[u64]]) -> Result<Vec<Vec<u64>>, NnError> {
        idx.check(self.fp.l(), tables)?;
        let m = (1u64 << idx.bits) - 1;
        let i: Vec<usize> = x.iter().map(|&v| ((self.ring.reduce(v) >> idx.shift) & m) as usize).collect();
        Ok(tables.iter().map(|t| i.iter().map(|&j| self.ring.reduce(t[j])).collect()).collect())
    }

    fn extend(&mut self, x: &Vec<u64>, from_bits: u32, to_bits: u32) -> Result<Vec<u64>, NnError> {
        if from_bits >= to_bits {
            return Err(NnError::BadArgument(format!("extend from {from_bits} to {to_bits} bits")));
        }
        let (from, to) = (Ring::<u64>::new(from_bits)?, Ring::<u64>::new(to_bits)?);
        Ok(x.iter().map(|&a| to.from_signed(from.to_signed(a))).collect())
    }
    fn reduce(&mut self, x: &Vec<u64>, to_bits: u32) -> Result<Vec<u64>, NnError> {
        let to = Ring::<u64>::new(to_bits)?;
        Ok(x.iter().map(|&a| to.reduce(a)).collect())
    }

    fn reveal(&mut self, x: &Vec<u64>) -> Result<Vec<u64>, NnError> {
        Ok(x.clone())
    }
    fn reveal_bits(&mut self, b: &Vec<bool>) -> Result<Vec<bool>, NnError> {
        Ok(b.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{enc, int};

    #[test]
    fn arithmetic_and_truncation_floor() {
        let mut b = PlainBackend::new(FixedPoint::BUMBLEBEE).unwrap();
        let x = b.encode(&[1.5, -2.25, 0.0]).unwrap();
        let y = b.encode(&[2.0, 2.0, -3.0]).unwrap();
        assert_eq!(b.decode(&b.clone().mul(&x, &y).unwrap()), vec![3.0, -4.5, 0.0]);
        // floor semantics on negative values: -1 LSB >> 1 = -1 LSB
        let m1 = vec![int(&b, -1)];
        assert_eq!(b.trunc(&m1, 1).unwrap(), m1);
        let s = b.square(&x).unwrap();
        assert_eq!(b.decode(&s), vec![2.25, 5.0625, 0.0]);
    }

    #[test]
    fn less_than_exact_and_approximate() {
        let mut b = PlainBackend::new(FixedPoint::BUMBLEBEE).unwrap();
        let x = b.encode(&[-5.1, -5.0, -4.99, 2.999, 3.0, 3.01]).unwrap();
        let t = [enc(&b, -5.0).unwrap(), enc(&b, 3.0).unwrap()];
        let lt = b.less_than_const(&x, &t, 0).unwrap();
        assert_eq!(lt[0], vec![true, false, false, false, false, false]);
        assert_eq!(lt[1], vec![true, true, true, true, false, false]);
        // ignoring 14 low bits (granularity 2^-4 at f = 18): floor(16x) < floor(16t); the
        // threshold −1.97 falls inside the bucket [−2, −1.9375), so −1.99 < −1.97 reads false.
        let x = b.encode(&[-2.01, -1.99, -1.97, -1.95]).unwrap();
        let t = [enc(&b, -1.97).unwrap()];
        assert_eq!(b.less_than_const(&x, &t, 0).unwrap()[0], vec![true, true, false, false]);
        assert_eq!(b.less_than_const(&x, &t, 14).unwrap()[0], vec![true, false, false, false]);
    }

    #[test]
    fn extend_reduce_round_trip() {
        let mut b = PlainBackend::new(FixedPoint::BUMBLEBEE).unwrap();
        let x = vec![int(&b, -7), int(&b, 123456)];
        let r = b.reduce(&x, 32).unwrap();
        assert_eq!(r[0], (1u64 << 32) - 7);
        assert_eq!(b.extend(&r, 32, 64).unwrap(), x);
        assert!(b.extend(&r, 64, 32).is_err());
    }

    #[test]
    fn length_errors_not_panics() {
        let mut b = PlainBackend::new(FixedPoint::BUMBLEBEE).unwrap();
        assert!(matches!(b.add(&vec![1, 2], &vec![1]), Err(NnError::Length { .. })));
        assert!(b.add_const(&vec![1, 2, 3], &[1, 2]).is_err());
        assert!(b.gather(&vec![1], &[1]).is_err());
        assert!(b.sum_groups(&vec![1, 2, 3], 2).is_err());
    }
}
