//! [`PlainEngine`]: the whole-model fixed-point **twin** — `nectar-nn`'s [`PlainBackend`] for
//! the primitives plus exact ring matrix products for the linear operators.
//!
//! One process holds both parties' secrets (weights and token ids), so `WeightRef::Server` and
//! `Some(..)` inputs are required; a twin computes exactly what the secure protocols compute up
//! to their randomised errors (±1 LSB truncations, H2A's rare LSB error), which is why the
//! secure run is checked against it and it is checked against the f32 reference.

use crate::secure::engine::{Engine, WeightRef};
use crate::secure::profile::Profile;
use crate::suite::Suite;
use nectar_math::FixedPoint;
use nectar_net::{Role, Stats};
use nectar_nn::{Backend, NnError, PlainBackend};
use rayon::prelude::*;

/// The whole-model twin (see module docs).
#[derive(Clone, Debug)]
pub struct PlainEngine {
    b: PlainBackend,
    suite: Suite,
    profile: Profile,
    /// Operators evaluated exactly instead of approximated ([`PlainEngine::with_exact`]).
    exact: Vec<&'static str>,
}

impl PlainEngine {
    /// A twin in format `fp` (BumbleBee: [`FixedPoint::BUMBLEBEE`]) applying the
    /// approximations `suite` names (the same as the secure run it is compared with).
    pub fn new(fp: FixedPoint, suite: &Suite) -> Result<Self, NnError> {
        Ok(PlainEngine {
            b: PlainBackend::new(fp)?,
            suite: *suite,
            profile: Profile::default(),
            exact: Vec::new(),
        })
    }

    /// The twin with the operators `ops` (names of [`crate::secure::exact::EXACT_OPS`])
    /// evaluated exactly in f64 instead of by the suite's approximations: the error left is
    /// that of the other operators and of the fixed-point format (error attribution of
    /// `nectar accuracy`). An unknown name is an error.
    pub fn with_exact(mut self, ops: &[&str]) -> Result<Self, NnError> {
        for op in ops {
            let known = crate::secure::exact::EXACT_OPS
                .iter()
                .find(|k| *k == op)
                .ok_or_else(|| NnError::BadArgument(format!("no exact form of operator '{op}'")))?;
            if !self.exact.contains(known) {
                self.exact.push(known);
            }
        }
        Ok(self)
    }

    /// The recorded per-operator profile (times only; no communication).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    fn mask(&self) -> u64 {
        let l = self.b.format().l();
        if l >= 64 {
            u64::MAX
        } else {
            (1u64 << l) - 1
        }
    }
}

fn need<'a>(v: Option<&'a [u64]>, n: usize, what: &str) -> Result<&'a [u64], NnError> {
    match v {
        Some(v) if v.len() == n => Ok(v),
        Some(v) => Err(NnError::Length {
            op: "twin input",
            a: v.len(),
            b: n,
        }),
        None => Err(NnError::BadArgument(format!(
            "the twin needs the {what} (it plays both parties)"
        ))),
    }
}

/// `y[rows, out] = x[rows, in] · w[in, out]` mod 2^64 (zero entries of `x` skipped: one-hot rows
/// cost one table row).
fn ring_matmul(
    x: &[u64],
    w: &[u64],
    rows: usize,
    inner: usize,
    cols: usize,
    mask: u64,
) -> Vec<u64> {
    let mut y = vec![0u64; rows * cols];
    y.par_chunks_mut(cols.max(1))
        .enumerate()
        .for_each(|(i, yr)| {
            for (t, &a) in x[i * inner..(i + 1) * inner].iter().enumerate() {
                if a == 0 {
                    continue;
                }
                let wr = &w[t * cols..(t + 1) * cols];
                for (o, &wv) in yr.iter_mut().zip(wr) {
                    *o = o.wrapping_add(a.wrapping_mul(wv));
                }
            }
            for o in yr.iter_mut() {
                *o &= mask;
            }
        });
    y
}

impl Engine for PlainEngine {
    fn suite(&self) -> &Suite {
        &self.suite
    }
    fn role(&self) -> Role {
        Role::Server
    }
    fn is_twin(&self) -> bool {
        true
    }
    fn exact(&self, op: &str) -> bool {
        self.exact.iter().any(|k| *k == op)
    }
    fn server_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Vec<u64>, NnError> {
        self.b.constant(need(v, n, "server's weights")?)
    }
    fn client_input(&mut self, v: Option<&[u64]>, n: usize) -> Result<Vec<u64>, NnError> {
        self.b.constant(need(v, n, "client's input")?)
    }
    fn matmul_weight(
        &mut self,
        x: &Vec<u64>,
        rows: usize,
        in_dim: usize,
        out_dim: usize,
        w: WeightRef<'_>,
    ) -> Result<Vec<u64>, NnError> {
        if x.len() != rows * in_dim {
            return Err(NnError::Length {
                op: "matmul_weight X",
                a: x.len(),
                b: rows * in_dim,
            });
        }
        let w = need(w.values(), in_dim * out_dim, "server's weights")?;
        Ok(ring_matmul(x, w, rows, in_dim, out_dim, self.mask()))
    }
    fn batch_matmul_shared(
        &mut self,
        a: &Vec<u64>,
        b: &Vec<u64>,
        heads: usize,
        k: usize,
        m: usize,
        n: usize,
    ) -> Result<Vec<u64>, NnError> {
        if a.len() != heads * k * m {
            return Err(NnError::Length {
                op: "batch_matmul A",
                a: a.len(),
                b: heads * k * m,
            });
        }
        if b.len() != heads * m * n {
            return Err(NnError::Length {
                op: "batch_matmul B",
                a: b.len(),
                b: heads * m * n,
            });
        }
        let mask = self.mask();
        Ok((0..heads)
            .flat_map(|h| {
                ring_matmul(
                    &a[h * k * m..(h + 1) * k * m],
                    &b[h * m * n..(h + 1) * m * n],
                    k,
                    m,
                    n,
                    mask,
                )
            })
            .collect())
    }
    fn reveal_to(&mut self, x: &Vec<u64>, _to: Role) -> Result<Option<Vec<u64>>, NnError> {
        Ok(Some(x.clone()))
    }
    fn net_stats(&self) -> Stats {
        Stats::default()
    }
    fn profile_mut(&mut self) -> &mut Profile {
        &mut self.profile
    }
}

crate::secure::engine::delegate_backend!(PlainEngine);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmuls_are_exact_ring_products() {
        let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &Suite::bumblebee()).unwrap();
        let x = vec![1, 2, 3, 4, 5, 6]; // 2x3
        let w = vec![1, 0, 0, 1, 1, u64::MAX]; // 3x2
        let y = e.matmul_weight(&x, 2, 3, 2, WeightRef::Server(&w)).unwrap();
        assert_eq!(y, vec![4, 2u64.wrapping_sub(3), 10, 5u64.wrapping_sub(6)]);
        assert!(e.matmul_weight(&x, 2, 3, 2, WeightRef::Client).is_err());
        let z = e
            .batch_matmul_shared(
                &[x.clone(), x.clone()].concat(),
                &[w.clone(), w].concat(),
                2,
                2,
                3,
                2,
            )
            .unwrap();
        assert_eq!(&z[..4], &y[..]);
        assert_eq!(&z[4..], &y[..]);
    }
}
