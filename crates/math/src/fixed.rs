//! Fixed-point numbers in `Z_{2^l}` with `f` fractional bits.
//!
//! A real `x` is encoded as `round(x * 2^f) mod 2^l` (two's complement). BumbleBee uses
//! `l = 64, f = 18` for the whole network and `l' = 32, f' = 12` for activations (§V-C, §VII);
//! those are [`FixedPoint::BUMBLEBEE`] and [`FixedPoint::BUMBLEBEE_ACT`] (AGREEMENT).

use crate::{MathError, Ring, Word};

/// A fixed-point format `(l, f)` (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedPoint {
    l: u32,
    f: u32,
}

impl Default for FixedPoint {
    fn default() -> Self {
        Self::BUMBLEBEE
    }
}

impl FixedPoint {
    /// BumbleBee's network-wide format, `l = 64, f = 18` (§VII "Implementation").
    pub const BUMBLEBEE: FixedPoint = FixedPoint { l: 64, f: 18 };
    /// BumbleBee's mixed bit-width activation format, `l' = 32, f' = 12` (§V-C).
    pub const BUMBLEBEE_ACT: FixedPoint = FixedPoint { l: 32, f: 12 };

    /// A format with `0 < f < l <= 128`.
    pub fn new(l: u32, f: u32) -> Result<Self, MathError> {
        if f == 0 || f >= l || l > 128 || l < 2 {
            return Err(MathError::BadFixedFormat { l, f });
        }
        Ok(FixedPoint { l, f })
    }

    #[inline]
    pub fn l(&self) -> u32 {
        self.l
    }
    #[inline]
    pub fn f(&self) -> u32 {
        self.f
    }

    /// `2^f`.
    #[inline]
    pub fn scale(&self) -> f64 {
        pow2(self.f)
    }

    /// The largest magnitude that encodes without wrapping: `2^(l-1-f)`.
    pub fn bound(&self) -> f64 {
        pow2(self.l - 1 - self.f)
    }

    /// The ring `Z_{2^l}` on words `T` (`T::BITS >= l`).
    pub fn ring<T: Word>(&self) -> Result<Ring<T>, MathError> {
        Ring::new(self.l)
    }

    /// `round(x * 2^f)` as a signed integer; an error if `|x|` exceeds [`Self::bound`] or is NaN.
    pub fn to_int(&self, x: f64) -> Result<i128, MathError> {
        let v = (x * self.scale()).round();
        let lim = pow2(self.l - 1);
        if !(v >= -lim && v < lim) {
            return Err(MathError::OutOfRange { value: x, bound: self.bound() });
        }
        // |v| < 2^(l-1): the i64 conversion is exact for l <= 64 and much cheaper than i128's.
        Ok(if self.l <= 64 { v as i64 as i128 } else { v as i128 })
    }

    /// Encode `x` into `Z_{2^l}`; an error when out of range.
    pub fn encode<T: Word>(&self, x: f64) -> Result<T, MathError> {
        let r = Ring::<T>::new(self.l)?;
        Ok(r.from_signed(self.to_int(x)?))
    }

    /// Encode with saturation at the range ends (NaN encodes as 0).
    pub fn encode_saturating<T: Word>(&self, x: f64) -> T {
        let lim = pow2(self.l - 1);
        let v = (x * self.scale()).round();
        let v = if v.is_nan() { 0.0 } else { v.clamp(-lim, lim - 1.0) };
        // `lim - 1.0` rounds to `lim` in f64 when l > 54; cap the integer instead.
        let max = if self.l == 128 { i128::MAX } else { (1i128 << (self.l - 1)) - 1 };
        let i = if v >= lim { max } else { v as i128 };
        Ring::<T>::new(self.l).map(|r| r.from_signed(i)).unwrap_or(T::ZERO)
    }

    /// Decode an element of `Z_{2^l}` (two's complement) to a real.
    pub fn decode<T: Word>(&self, v: T) -> f64 {
        match Ring::<T>::new(self.l) {
            Ok(r) => r.to_signed(v) as f64 / self.scale(),
            Err(_) => f64::NAN,
        }
    }

    /// Encode a slice; the first out-of-range value is an error.
    pub fn encode_vec<T: Word>(&self, xs: &[f64]) -> Result<Vec<T>, MathError> {
        xs.iter().map(|&x| self.encode(x)).collect()
    }

    /// Decode a slice.
    pub fn decode_vec<T: Word>(&self, vs: &[T]) -> Vec<f64> {
        vs.iter().map(|&v| self.decode(v)).collect()
    }
}

/// `2^e` exactly, from the exponent bits (`e <= 128` here, far inside f64's range); the
/// weight encoders call this per element, where `exp2` showed up in profiles.
#[inline]
fn pow2(e: u32) -> f64 {
    f64::from_bits((1023 + e as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pow2_is_exact() {
        for e in 0..=128u32 {
            assert_eq!(pow2(e), (e as f64).exp2(), "2^{e}");
        }
    }

    #[test]
    fn formats() {
        assert!(FixedPoint::new(64, 0).is_err());
        assert!(FixedPoint::new(64, 64).is_err());
        assert!(FixedPoint::new(129, 18).is_err());
        let fp = FixedPoint::default();
        assert_eq!((fp.l(), fp.f()), (64, 18));
        assert_eq!(fp.encode::<u64>(-1.0).unwrap(), (1u64 << 18).wrapping_neg());
        assert_eq!(fp.decode::<u64>(3 << 17), 1.5);
    }

    #[test]
    fn out_of_range_and_saturation() {
        let fp = FixedPoint::new(16, 8).unwrap();
        assert_eq!(fp.bound(), 128.0);
        assert!(fp.encode::<u64>(128.0).is_err());
        assert!(fp.encode::<u64>(f64::NAN).is_err());
        assert!(fp.encode::<u64>(-128.0).is_ok());
        assert_eq!(fp.decode(fp.encode_saturating::<u64>(1e9)), 128.0 - 1.0 / 256.0);
        assert_eq!(fp.decode(fp.encode_saturating::<u64>(-1e9)), -128.0);
        let big = FixedPoint::new(64, 18).unwrap();
        assert_eq!(big.encode_saturating::<u64>(1e300), i64::MAX as u64);
    }

    #[test]
    fn wrap_around_of_sums() {
        // Two in-range values whose sum leaves the range wrap to the other sign, as in Z_{2^l}.
        let fp = FixedPoint::new(16, 8).unwrap();
        let r = fp.ring::<u64>().unwrap();
        let a: u64 = fp.encode(100.0).unwrap();
        let s = r.add(a, a);
        assert_eq!(fp.decode(s), 200.0 - 256.0);
    }

    proptest! {
        #[test]
        fn round_trip_error(x in -1.0e6f64..1.0e6, f in 1u32..30) {
            let fp = FixedPoint::new(64, f).unwrap();
            let y = fp.decode(fp.encode::<u64>(x).unwrap());
            prop_assert!((x - y).abs() <= 0.5 / fp.scale() + 1e-12, "{} {}", x, y);
            let fp = FixedPoint::new(104, f).unwrap();
            let y = fp.decode(fp.encode::<u128>(x).unwrap());
            prop_assert!((x - y).abs() <= 0.5 / fp.scale() + 1e-12);
        }
    }
}
