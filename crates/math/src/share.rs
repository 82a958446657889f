//! Additive 2-out-of-2 secret sharing over `Z_{2^l}`.
//!
//! A value `x` is held as `x0` by P0 (server) and `x1` by P1 (client) with
//! `x0 + x1 = x (mod 2^l)`. [`share`] draws `x0` uniformly, so each share alone is uniform and
//! independent of `x` (perfect hiding).

use crate::{MathError, Prg, Ring, Tensor, Word};

/// One party's additive share of a tensor over `Z_{2^l}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AShare<T: Word> {
    ring: Ring<T>,
    tensor: Tensor<T>,
}

impl<T: Word> AShare<T> {
    /// Wrap a party's share (values are reduced into the ring).
    pub fn new(ring: Ring<T>, mut tensor: Tensor<T>) -> Self {
        for v in tensor.data_mut() {
            *v = ring.reduce(*v);
        }
        AShare { ring, tensor }
    }

    pub fn ring(&self) -> Ring<T> {
        self.ring
    }
    pub fn tensor(&self) -> &Tensor<T> {
        &self.tensor
    }
    pub fn shape(&self) -> &[usize] {
        self.tensor.shape()
    }
    pub fn data(&self) -> &[T] {
        self.tensor.data()
    }
    pub fn into_tensor(self) -> Tensor<T> {
        self.tensor
    }

    /// Local addition of two shares (of the same party).
    pub fn add(&self, o: &AShare<T>) -> Result<AShare<T>, MathError> {
        self.check_ring(o)?;
        let r = self.ring;
        Ok(AShare { ring: r, tensor: self.tensor.zip_with(&o.tensor, |a, b| r.add(*a, *b))? })
    }

    /// Local subtraction.
    pub fn sub(&self, o: &AShare<T>) -> Result<AShare<T>, MathError> {
        self.check_ring(o)?;
        let r = self.ring;
        Ok(AShare { ring: r, tensor: self.tensor.zip_with(&o.tensor, |a, b| r.sub(*a, *b))? })
    }

    /// Multiplication by a public constant.
    pub fn mul_public(&self, c: T) -> AShare<T> {
        let r = self.ring;
        AShare { ring: r, tensor: self.tensor.map(|a| r.mul(*a, c)) }
    }

    /// Addition of a public tensor: only one party (`add_it = true`, conventionally P0) adds it.
    pub fn add_public(&self, p: &Tensor<T>, add_it: bool) -> Result<AShare<T>, MathError> {
        if !add_it {
            if p.shape() != self.shape() {
                return Err(MathError::ShapeMismatch(p.shape().to_vec(), self.shape().to_vec()));
            }
            return Ok(self.clone());
        }
        let r = self.ring;
        Ok(AShare { ring: r, tensor: self.tensor.zip_with(p, |a, b| r.add(*a, *b))? })
    }

    fn check_ring(&self, o: &AShare<T>) -> Result<(), MathError> {
        if self.ring != o.ring {
            return Err(MathError::RingMismatch(self.ring.bits(), o.ring.bits()));
        }
        Ok(())
    }
}

/// Split `x` into two shares: `(x0, x1)` with `x0` uniform.
pub fn share<T: Word>(ring: Ring<T>, x: &Tensor<T>, prg: &mut Prg) -> (AShare<T>, AShare<T>) {
    let x0 = x.map(|_| ring.random(prg));
    let x1 = x.zip_with(&x0, |a, b| ring.sub(*a, *b)).expect("same shape by construction");
    (AShare { ring, tensor: x0 }, AShare { ring, tensor: x1 })
}

/// Reconstruct `x = x0 + x1`.
pub fn reconstruct<T: Word>(a: &AShare<T>, b: &AShare<T>) -> Result<Tensor<T>, MathError> {
    Ok(a.add(b)?.tensor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn share_reconstruct(bits in 2u32..=128, seed in any::<[u8; 16]>(), n in 0usize..50) {
            let r = Ring::<u128>::new(bits).unwrap();
            let mut prg = Prg::new(seed);
            let x = Tensor::new(vec![n, 1], r.random_vec(&mut prg, n)).unwrap();
            let (a, b) = share(r, &x, &mut prg);
            prop_assert_eq!(reconstruct(&a, &b).unwrap(), x);
        }
    }

    #[test]
    fn share_is_masked() {
        // The first share of a constant tensor is uniform: its values are spread over the ring.
        let r = Ring::<u64>::new(16).unwrap();
        let mut prg = Prg::new([9; 16]);
        let x = Tensor::from_vec(vec![42u64; 4096]);
        let (a, _) = share(r, &x, &mut prg);
        let distinct: std::collections::HashSet<_> = a.data().iter().collect();
        assert!(distinct.len() > 3500);
        let mean = a.data().iter().map(|&v| v as f64).sum::<f64>() / 4096.0;
        assert!((mean / 65536.0 - 0.5).abs() < 0.03);
    }

    #[test]
    fn local_ops() {
        let r = Ring::<u64>::new(32).unwrap();
        let mut prg = Prg::new([2; 16]);
        let x = Tensor::from_vec(vec![1u64, 2, 3]);
        let y = Tensor::from_vec(vec![10u64, 20, 30]);
        let (x0, x1) = share(r, &x, &mut prg);
        let (y0, y1) = share(r, &y, &mut prg);
        let s = reconstruct(&x0.add(&y0).unwrap(), &x1.add(&y1).unwrap()).unwrap();
        assert_eq!(s.data(), &[11, 22, 33]);
        let d = reconstruct(&x0.sub(&y0).unwrap(), &x1.sub(&y1).unwrap()).unwrap();
        assert_eq!(r.to_signed(d.data()[0]), -9);
        let m = reconstruct(&x0.mul_public(3), &x1.mul_public(3)).unwrap();
        assert_eq!(m.data(), &[3, 6, 9]);
        let p = reconstruct(&x0.add_public(&y, true).unwrap(), &x1.add_public(&y, false).unwrap()).unwrap();
        assert_eq!(p.data(), &[11, 22, 33]);
        let r2 = Ring::<u64>::new(20).unwrap();
        let z = AShare::new(r2, Tensor::from_vec(vec![0u64; 3]));
        assert!(x0.add(&z).is_err());
    }
}
