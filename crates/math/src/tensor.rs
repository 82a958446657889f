//! Row-major shaped tensors.

use crate::MathError;

/// A dense row-major tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

impl<T> Tensor<T> {
    /// A tensor from its shape and row-major data; the lengths must agree.
    pub fn new(shape: Vec<usize>, data: Vec<T>) -> Result<Self, MathError> {
        let expected: usize = shape.iter().product();
        if expected != data.len() {
            return Err(MathError::BadLength { shape, expected, got: data.len() });
        }
        Ok(Tensor { shape, data })
    }

    /// A one-dimensional tensor.
    pub fn from_vec(data: Vec<T>) -> Self {
        Tensor { shape: vec![data.len()], data }
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    pub fn data(&self) -> &[T] {
        &self.data
    }
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
    pub fn into_data(self) -> Vec<T> {
        self.data
    }
    pub fn len(&self) -> usize {
        self.data.len()
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The same data under another shape with as many elements.
    pub fn reshape(self, shape: Vec<usize>) -> Result<Self, MathError> {
        Tensor::new(shape, self.data)
    }

    /// Elementwise map.
    pub fn map<U>(&self, f: impl FnMut(&T) -> U) -> Tensor<U> {
        Tensor { shape: self.shape.clone(), data: self.data.iter().map(f).collect() }
    }

    /// Elementwise combination of two tensors of one shape.
    pub fn zip_with<U, V>(
        &self,
        other: &Tensor<U>,
        mut f: impl FnMut(&T, &U) -> V,
    ) -> Result<Tensor<V>, MathError> {
        if self.shape != other.shape {
            return Err(MathError::ShapeMismatch(self.shape.clone(), other.shape.clone()));
        }
        Ok(Tensor {
            shape: self.shape.clone(),
            data: self.data.iter().zip(&other.data).map(|(a, b)| f(a, b)).collect(),
        })
    }
}

impl<T: Clone + Default> Tensor<T> {
    /// A tensor of default values (zeros).
    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Tensor { shape, data: vec![T::default(); n] }
    }
}
