//! The rings `Z_{2^l}` for `2 <= l <= 128`.
//!
//! Values are stored in a machine word [`Word`] (`u64` for `l <= 64`, `u128` above — BLB needs
//! `l + 40` bits of slack) and always kept reduced: the bits above `l` are zero. Arithmetic is
//! the word's wrapping arithmetic followed by a mask, which is exact because `2^l` divides the
//! word modulus.

use crate::{MathError, Prg};
use rand_core::RngCore;

/// A machine word holding ring elements: `u64` or `u128`.
pub trait Word:
    Copy + Clone + Eq + Ord + Default + Send + Sync + std::fmt::Debug + std::hash::Hash + 'static
{
    /// Bits in the word.
    const BITS: u32;
    const ZERO: Self;
    const ONE: Self;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn wneg(self) -> Self;
    fn and(self, o: Self) -> Self;
    fn shl(self, s: u32) -> Self;
    fn shr(self, s: u32) -> Self;
    /// Low `BITS` bits of `x`.
    fn from_u128(x: u128) -> Self;
    fn to_u128(self) -> u128;
    fn random(prg: &mut Prg) -> Self;
}

impl Word for u64 {
    const BITS: u32 = 64;
    const ZERO: Self = 0;
    const ONE: Self = 1;
    #[inline]
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline]
    fn wsub(self, o: Self) -> Self {
        self.wrapping_sub(o)
    }
    #[inline]
    fn wmul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline]
    fn wneg(self) -> Self {
        self.wrapping_neg()
    }
    #[inline]
    fn and(self, o: Self) -> Self {
        self & o
    }
    #[inline]
    fn shl(self, s: u32) -> Self {
        self.checked_shl(s).unwrap_or(0)
    }
    #[inline]
    fn shr(self, s: u32) -> Self {
        self.checked_shr(s).unwrap_or(0)
    }
    #[inline]
    fn from_u128(x: u128) -> Self {
        x as u64
    }
    #[inline]
    fn to_u128(self) -> u128 {
        self as u128
    }
    fn random(prg: &mut Prg) -> Self {
        prg.next_u64()
    }
}

impl Word for u128 {
    const BITS: u32 = 128;
    const ZERO: Self = 0;
    const ONE: Self = 1;
    #[inline]
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline]
    fn wsub(self, o: Self) -> Self {
        self.wrapping_sub(o)
    }
    #[inline]
    fn wmul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline]
    fn wneg(self) -> Self {
        self.wrapping_neg()
    }
    #[inline]
    fn and(self, o: Self) -> Self {
        self & o
    }
    #[inline]
    fn shl(self, s: u32) -> Self {
        self.checked_shl(s).unwrap_or(0)
    }
    #[inline]
    fn shr(self, s: u32) -> Self {
        self.checked_shr(s).unwrap_or(0)
    }
    #[inline]
    fn from_u128(x: u128) -> Self {
        x
    }
    #[inline]
    fn to_u128(self) -> u128 {
        self
    }
    fn random(prg: &mut Prg) -> Self {
        prg.next_u128()
    }
}

/// The ring `Z_{2^l}` on words `T` (AGREEMENT: both parties must use the same `l`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ring<T: Word> {
    bits: u32,
    mask: T,
}

impl<T: Word> Ring<T> {
    /// `Z_{2^bits}`; `2 <= bits <= T::BITS`.
    pub fn new(bits: u32) -> Result<Self, MathError> {
        if !(2..=T::BITS).contains(&bits) {
            return Err(MathError::BadRingWidth { bits, max: T::BITS });
        }
        let mask = if bits == T::BITS { T::ZERO.wsub(T::ONE) } else { T::ONE.shl(bits).wsub(T::ONE) };
        Ok(Ring { bits, mask })
    }

    /// The bit width `l`.
    #[inline]
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// `2^l - 1`.
    #[inline]
    pub fn mask(&self) -> T {
        self.mask
    }

    #[inline]
    pub fn reduce(&self, x: T) -> T {
        x.and(self.mask)
    }
    #[inline]
    pub fn add(&self, a: T, b: T) -> T {
        a.wadd(b).and(self.mask)
    }
    #[inline]
    pub fn sub(&self, a: T, b: T) -> T {
        a.wsub(b).and(self.mask)
    }
    #[inline]
    pub fn mul(&self, a: T, b: T) -> T {
        a.wmul(b).and(self.mask)
    }
    #[inline]
    pub fn neg(&self, a: T) -> T {
        a.wneg().and(self.mask)
    }

    /// The most significant bit (bit `l-1`): the sign in two's complement.
    #[inline]
    pub fn msb(&self, a: T) -> bool {
        a.shr(self.bits - 1).and(T::ONE) == T::ONE
    }

    /// Two's-complement value of `a` in `[-2^(l-1), 2^(l-1))`.
    pub fn to_signed(&self, a: T) -> i128 {
        let u = self.reduce(a).to_u128();
        if self.bits == 128 {
            u as i128
        } else if self.msb(a) {
            (u as i128).wrapping_sub(1i128.wrapping_shl(self.bits))
        } else {
            u as i128
        }
    }

    /// `x mod 2^l` for any signed `x`.
    pub fn from_signed(&self, x: i128) -> T {
        self.reduce(T::from_u128(x as u128))
    }

    /// A uniform element.
    pub fn random(&self, prg: &mut Prg) -> T {
        self.reduce(T::random(prg))
    }

    /// `n` uniform elements.
    pub fn random_vec(&self, prg: &mut Prg, n: usize) -> Vec<T> {
        (0..n).map(|_| self.random(prg)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn widths_validated() {
        assert!(Ring::<u64>::new(1).is_err());
        assert!(Ring::<u64>::new(65).is_err());
        assert!(Ring::<u128>::new(128).is_ok());
        assert!(Ring::<u64>::new(64).is_ok());
    }

    #[test]
    fn wraparound() {
        let r = Ring::<u64>::new(8).unwrap();
        assert_eq!(r.add(200, 100), 44);
        assert_eq!(r.sub(3, 5), 254);
        assert_eq!(r.to_signed(254), -2);
        assert_eq!(r.from_signed(-2), 254);
        assert_eq!(r.mul(16, 16), 0);
        let r = Ring::<u128>::new(104).unwrap();
        assert_eq!(r.to_signed(r.neg(1)), -1);
        assert!(r.msb(r.neg(1)));
    }

    proptest! {
        #[test]
        fn signed_round_trip(bits in 2u32..=128, x in any::<i128>()) {
            let r = Ring::<u128>::new(bits).unwrap();
            // An arithmetic shift maps any i128 into the signed range of `bits` bits.
            let x = x >> (128 - bits);
            prop_assert_eq!(r.to_signed(r.from_signed(x)), x);
        }

        #[test]
        fn ring_laws_u64(bits in 2u32..=64, a in any::<u64>(), b in any::<u64>()) {
            let r = Ring::<u64>::new(bits).unwrap();
            let (a, b) = (r.reduce(a), r.reduce(b));
            prop_assert_eq!(r.sub(r.add(a, b), b), a);
            prop_assert_eq!(r.add(a, r.neg(a)), 0);
            let m = if bits == 64 { u128::MAX >> 64 } else { (1u128 << bits) - 1 };
            prop_assert_eq!(r.mul(a, b) as u128, (a as u128 * b as u128) & m);
        }
    }
}
