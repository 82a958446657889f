//! InterLeave (BumbleBee §III-C, Fig. 6) and PackLWEs (Chen–Dai–Kim–Song, the KRDY⁺ baseline),
//! written once over any ring with automorphisms ([`AutoRing`]): RLWE ciphertexts in the
//! protocol, plain polynomials over `Z_q` ([`PlainRing`]) in tests and plaintext twins.
//!
//! **InterLeave** merges `2^r` polynomials whose useful coefficients sit at multiples of `2^r`
//! into one polynomial `c` with `c[i] = a_{i mod 2^r}[⌊i/2^r⌋·2^r]`. FFT-style: scale every input
//! by `2^{-r} mod q` (odd `q`), then for `h = 2^{r-1}, …, 1` and `j < h`:
//! `O = b_{j+h}·X^h`, `b_j ← (b_j + O) + Auto(b_j − O, N/h + 1)`; output `b_0`.
//! Cost: `2^r − 1` automorphisms with every input present. An absent input (`None`) is not
//! zero in the output: a butterfly with one absent half doubles the other instead of running
//! its automorphism ([`interleave_autos`] counts them), which leaves garbage in the absent
//! input's slots — a product of 48 blocks in a gap of 128 (a decoding step's FFN1) takes 47
//! automorphisms instead of 111. Callers read only the present inputs' slots.
//! Why it works: `Auto(·, N/h + 1)` flips the sign of coefficients at odd multiples of `h` and
//! keeps even multiples, so `E + Auto(E)` keeps `E`'s even multiples of `h` (doubled) and
//! `O − Auto(O)` keeps `O`'s odd multiples (doubled); the `2^{-r}` pre-scaling cancels the `r`
//! doublings.
//!
//! **PackLWEs** merges `n = 2^ℓ ≤ N` polynomials whose useful coefficient is the constant term
//! into one with input `i` at coefficient `i·N/n`: recursively
//! `ct = (E + X^{N/2^d}·O) + Auto(E − X^{N/2^d}·O, 2^d + 1)` on even/odd halves, then a partial
//! trace `ct ← ct + Auto(ct, N/2^j + 1)` for `j = 0..log2(N/n)` clears the other coefficients; the
//! inputs are pre-scaled by `N^{-1}`. Cost: `n − 1 + log2(N/n)` automorphisms with `n` inputs;
//! with fewer (the count rounded up to `n`) the same rule as InterLeave's: a node with one
//! absent half is doubled, its absent slots on the output grid hold garbage.

use crate::LinearError;
use rayon::prelude::*;

/// A ring `Z_q[X]/(X^N + 1)` (or ciphertexts over it) with the operations InterLeave needs.
pub trait AutoRing {
    type Elem: Clone;
    /// `N`.
    fn degree(&self) -> usize;
    fn add(&self, a: &Self::Elem, b: &Self::Elem) -> Result<Self::Elem, LinearError>;
    fn sub(&self, a: &Self::Elem, b: &Self::Elem) -> Result<Self::Elem, LinearError>;
    /// `a · X^e`, `0 ≤ e < 2N` (negacyclic shift).
    fn mul_monomial(&self, a: &Self::Elem, e: usize) -> Result<Self::Elem, LinearError>;
    /// `a · 2^{-log_d} mod q`.
    fn div_pow2(&self, a: &Self::Elem, log_d: u32) -> Result<Self::Elem, LinearError>;
    /// `a(X) ↦ a(X^g)`, `g` odd (needs the Galois key of `g` for ciphertexts).
    fn automorphism(&self, a: &Self::Elem, g: usize) -> Result<Self::Elem, LinearError>;
    /// `a + b`, consuming `a` (rings with large elements override this to work in place).
    fn add_owned(&self, a: Self::Elem, b: &Self::Elem) -> Result<Self::Elem, LinearError> {
        self.add(&a, b)
    }
    /// `a − b`, consuming `a`.
    fn sub_owned(&self, a: Self::Elem, b: &Self::Elem) -> Result<Self::Elem, LinearError> {
        self.sub(&a, b)
    }
    /// `a · X^e`, consuming `a`.
    fn mul_monomial_owned(&self, a: Self::Elem, e: usize) -> Result<Self::Elem, LinearError> {
        self.mul_monomial(&a, e)
    }
    /// `a · 2^{-log_d}`, consuming `a`.
    fn div_pow2_owned(&self, a: Self::Elem, log_d: u32) -> Result<Self::Elem, LinearError> {
        self.div_pow2(&a, log_d)
    }
}

/// `E + O + Auto(E − O, g)` where both operands are present (one automorphism, counted); with
/// one absent, that operand doubled (`2E`, `2O`) and no automorphism. The automorphism only
/// clears each operand's coefficients in the other's slots (`E`'s odd multiples of `h`, `O`'s
/// even ones); when the other is absent nothing lands there, so the present operand's other
/// coefficients stay in the absent input's output slots (garbage, not zero) and its own slots
/// are doubled as the full step would.
fn butterfly<R: AutoRing>(
    ring: &R,
    e: Option<R::Elem>,
    o: Option<R::Elem>,
    g: usize,
    autos: &mut usize,
) -> Result<Option<R::Elem>, LinearError> {
    Ok(match (e, o) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => {
            let y = x.clone();
            Some(ring.add_owned(x, &y)?)
        }
        (Some(e), Some(o)) => {
            *autos += 1;
            let d = ring.sub(&e, &o)?;
            let a = ring.automorphism(&d, g)?;
            drop(d);
            let s = ring.add_owned(e, &o)?;
            Some(ring.add_owned(s, &a)?)
        }
    })
}

/// Automorphisms [`interleave`] runs on inputs `present` (`true` where an input is given) with
/// gap `2^log_gap`: one per butterfly whose two halves are both present.
pub fn interleave_autos(present: &[bool], log_gap: u32) -> usize {
    let mut b: Vec<bool> = present.to_vec();
    b.resize(b.len().max(1usize << log_gap), false);
    let (mut autos, mut h) = (0, (1usize << log_gap) / 2);
    while h >= 1 {
        for j in 0..h {
            autos += usize::from(b[j] && b[j + h]);
            b[j] |= b[j + h];
        }
        h /= 2;
    }
    autos
}

/// InterLeave (Fig. 6) of up to `2^log_gap` inputs (`None`: absent, garbage in its slots).
/// Returns the merged element and the number of automorphisms run.
///
/// The `h` butterflies of one level are independent and run in parallel (rayon). A single key
/// switch parallelises only over its `l + 1` target primes (3 tasks at the OLT's response
/// level, in ~50 µs pieces), so one butterfly after another kept 2 cores half busy: the
/// MiniLM-shaped OLTs (`nectar bench linear --suite nectar`, 32 tokens, 2-core VM) went from
/// 0.74 / 0.35 / 0.67 / 0.85 s (QKV / O / FFN1 / FFN2) to 0.57 / 0.19 / 0.41 / 0.54 s. Same
/// operations in the same tree, same result.
pub fn interleave<R>(
    ring: &R,
    inputs: Vec<Option<R::Elem>>,
    log_gap: u32,
) -> Result<(R::Elem, usize), LinearError>
where
    R: AutoRing + Sync,
    R::Elem: Send,
{
    let n = ring.degree();
    let gap = 1usize << log_gap;
    if gap > n || inputs.len() > gap {
        return Err(LinearError::BadParams(format!(
            "InterLeave of {} inputs with gap 2^{log_gap} in degree {n}",
            inputs.len()
        )));
    }
    let mut b: Vec<Option<R::Elem>> = inputs
        .into_par_iter()
        .map(|x| x.map(|a| ring.div_pow2_owned(a, log_gap)).transpose())
        .collect::<Result<_, _>>()?;
    b.resize(gap, None);
    let mut autos = 0;
    let mut h = gap / 2;
    while h >= 1 {
        let (lo, hi) = b[..2 * h].split_at_mut(h);
        autos += lo
            .par_iter_mut()
            .zip(hi.par_iter_mut())
            .map(|(e, o)| -> Result<usize, LinearError> {
                let o = o.take().map(|x| ring.mul_monomial_owned(x, h)).transpose()?;
                let mut count = 0;
                *e = butterfly(ring, e.take(), o, n / h + 1, &mut count)?;
                Ok(count)
            })
            .try_reduce(|| 0, |x, y| Ok(x + y))?;
        h /= 2;
    }
    let out = b
        .swap_remove(0)
        .ok_or_else(|| LinearError::BadParams("InterLeave of no inputs".into()))?;
    Ok((out, autos))
}

/// PackLWEs of up to `N` inputs whose constant terms are the messages (`None`: absent): input `i`
/// lands at coefficient `i·N/n`, `n` = the input count rounded up to a power of two.
/// Returns the packed element and the number of automorphisms run.
pub fn pack_lwes<R>(ring: &R, inputs: Vec<Option<R::Elem>>) -> Result<(R::Elem, usize), LinearError>
where
    R: AutoRing + Sync,
    R::Elem: Send,
{
    let count = inputs.len();
    let inputs: Vec<std::sync::Mutex<Option<Option<R::Elem>>>> = inputs.into_iter().map(|x| std::sync::Mutex::new(Some(x))).collect();
    pack_lwes_from(ring, count, &|i| {
        inputs[i]
            .lock()
            .map_err(|_| LinearError::BadParams("PackLWEs input lock poisoned".into()))?
            .take()
            .ok_or_else(|| LinearError::BadParams(format!("PackLWEs input {i} taken twice")))
    })
}

/// [`pack_lwes`] of `count` inputs produced on demand by `input(i)`, each called once. The tree
/// is evaluated depth first, so at most about `2·log2 n` elements are alive besides the
/// caller's: an OLT packing 4096 products no longer clones all of them first (366 MB for
/// MiniLM's embedding). The two subtrees of a node run in parallel (rayon), as InterLeave's
/// butterflies of one level do: one key switch parallelises only over its few target primes,
/// so one subtree after the other kept 2 cores half busy (a decoding step's `1 × 576 × 90`
/// product, `nectar bench linear --op batch_matmul`: 0.19 s, of which the 134 automorphisms
/// were most). Same operations, same result as the level-by-level order.
pub fn pack_lwes_from<R>(
    ring: &R,
    count: usize,
    input: &(dyn Fn(usize) -> Result<Option<R::Elem>, LinearError> + Sync),
) -> Result<(R::Elem, usize), LinearError>
where
    R: AutoRing + Sync,
    R::Elem: Send,
{
    let big_n = ring.degree();
    if count == 0 || count > big_n {
        return Err(LinearError::BadParams(format!("PackLWEs of {count} inputs in degree {big_n}")));
    }
    let n = count.next_power_of_two();
    let log_n = n.trailing_zeros() as usize;
    let log_big_n = big_n.trailing_zeros();
    // node(d, i) combines node(d−1, i) (even half) with node(d−1, i + n/2^d) (odd half) at
    // depth d: `E + X^{N/2^d}·O + Auto(E − X^{N/2^d}·O, 2^d + 1)`; node(0, i) = input i / N.
    // Returns the node and the automorphisms run below it.
    #[allow(clippy::type_complexity)]
    fn node<R>(
        ring: &R,
        d: usize,
        i: usize,
        n: usize,
        count: usize,
        log_big_n: u32,
        input: &(dyn Fn(usize) -> Result<Option<R::Elem>, LinearError> + Sync),
    ) -> Result<(Option<R::Elem>, usize), LinearError>
    where
        R: AutoRing + Sync,
        R::Elem: Send,
    {
        if d == 0 {
            if i >= count {
                return Ok((None, 0));
            }
            return Ok((input(i)?.map(|a| ring.div_pow2_owned(a, log_big_n)).transpose()?, 0));
        }
        let (e, o) = rayon::join(
            || node(ring, d - 1, i, n, count, log_big_n, input),
            || node(ring, d - 1, i + (n >> d), n, count, log_big_n, input),
        );
        let ((e, ea), (o, oa)) = (e?, o?);
        let o = o.map(|x| ring.mul_monomial_owned(x, ring.degree() >> d)).transpose()?;
        let mut autos = ea + oa;
        Ok((butterfly(ring, e, o, (1usize << d) + 1, &mut autos)?, autos))
    }
    let (ct, mut autos) = node(ring, log_n, 0, n, count, log_big_n, input)?;
    let mut ct = ct.ok_or_else(|| LinearError::BadParams("PackLWEs of no inputs".into()))?;
    let mut j = 0;
    while (big_n >> j) > n {
        // Partial trace: clear the coefficients off multiples of N/n.
        let a = ring.automorphism(&ct, (big_n >> j) + 1)?;
        ct = ring.add_owned(ct, &a)?;
        autos += 1;
        j += 1;
    }
    Ok((ct, autos))
}

/// Position of input `i` of `n_inputs` after [`pack_lwes`].
pub fn pack_lwes_position(i: usize, n_inputs: usize, degree: usize) -> usize {
    i * (degree / n_inputs.next_power_of_two())
}

/// Plain polynomials over `Z_q` (odd `q < 2^63`), for tests and plaintext twins.
#[derive(Clone, Copy, Debug)]
pub struct PlainRing {
    pub n: usize,
    pub q: u64,
}

impl PlainRing {
    fn mulmod(&self, a: u64, b: u64) -> u64 {
        ((a as u128 * b as u128) % self.q as u128) as u64
    }
    fn inv_pow2(&self, log_d: u32) -> u64 {
        // 2^{-1} mod odd q is (q+1)/2.
        let half = self.q.div_ceil(2);
        (0..log_d).fold(1u64, |acc, _| self.mulmod(acc, half))
    }
}

impl AutoRing for PlainRing {
    type Elem = Vec<u64>;
    fn degree(&self) -> usize {
        self.n
    }
    fn add(&self, a: &Vec<u64>, b: &Vec<u64>) -> Result<Vec<u64>, LinearError> {
        Ok(a.iter().zip(b).map(|(x, y)| (x + y) % self.q).collect())
    }
    fn sub(&self, a: &Vec<u64>, b: &Vec<u64>) -> Result<Vec<u64>, LinearError> {
        Ok(a.iter()
            .zip(b)
            .map(|(x, y)| (x + self.q - y) % self.q)
            .collect())
    }
    fn mul_monomial(&self, a: &Vec<u64>, e: usize) -> Result<Vec<u64>, LinearError> {
        let n = self.n;
        let mut out = vec![0; n];
        for (i, &x) in a.iter().enumerate() {
            let p = (i + e) % (2 * n);
            if p < n {
                out[p] = x;
            } else {
                out[p - n] = (self.q - x) % self.q;
            }
        }
        Ok(out)
    }
    fn div_pow2(&self, a: &Vec<u64>, log_d: u32) -> Result<Vec<u64>, LinearError> {
        let s = self.inv_pow2(log_d);
        Ok(a.iter().map(|&x| self.mulmod(x, s)).collect())
    }
    fn automorphism(&self, a: &Vec<u64>, g: usize) -> Result<Vec<u64>, LinearError> {
        if g & 1 == 0 {
            return Err(LinearError::BadParams(format!(
                "automorphism index {g} is even"
            )));
        }
        let n = self.n;
        let mut out = vec![0; n];
        for (i, &x) in a.iter().enumerate() {
            let p = (i * g) % (2 * n);
            if p < n {
                out[p] = (out[p] + x) % self.q;
            } else {
                out[p - n] = (out[p - n] + self.q - x) % self.q;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::{sample::uniform_below, Prg};

    const Q: u64 = (1 << 50) - 27; // odd

    fn random_poly(prg: &mut Prg, n: usize) -> Vec<u64> {
        (0..n).map(|_| uniform_below(prg, Q)).collect()
    }

    #[test]
    fn interleave_output_rule() {
        let mut prg = Prg::new([1; 16]);
        for &(n, r, count) in &[
            (16usize, 2u32, 4usize),
            (64, 3, 8),
            (64, 3, 5),
            (32, 0, 1),
            (32, 5, 32),
            (64, 4, 1),
        ] {
            let ring = PlainRing { n, q: Q };
            let inputs: Vec<Vec<u64>> = (0..count).map(|_| random_poly(&mut prg, n)).collect();
            let (c, autos) =
                interleave(&ring, inputs.iter().cloned().map(Some).collect(), r).unwrap();
            let gap = 1 << r;
            for i in (0..n).filter(|i| i % gap < count) {
                assert_eq!(c[i], inputs[i % gap][(i / gap) * gap], "n={n} r={r} count={count} i={i}");
            }
            assert_eq!(autos, interleave_autos(&vec![true; count], r));
            if count == gap {
                assert_eq!(autos, gap - 1);
            }
        }
    }

    /// Absent inputs anywhere (not only at the end): the present ones land in their slots, and
    /// a butterfly runs its automorphism only with both halves present.
    #[test]
    fn interleave_with_absent_inputs() {
        let mut prg = Prg::new([3; 16]);
        let (n, r) = (64usize, 4u32);
        let ring = PlainRing { n, q: Q };
        for present in [
            vec![true, false, true, true, false, false, false, true, true],
            vec![false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, true],
            vec![true; 3],
        ] {
            let inputs: Vec<Option<Vec<u64>>> = present.iter().map(|&p| p.then(|| random_poly(&mut prg, n))).collect();
            let (c, autos) = interleave(&ring, inputs.clone(), r).unwrap();
            let gap = 1usize << r;
            for i in 0..n {
                if let Some(Some(a)) = inputs.get(i % gap) {
                    assert_eq!(c[i], a[(i / gap) * gap], "{present:?} i={i}");
                }
            }
            assert_eq!(autos, interleave_autos(&present, r), "{present:?}");
        }
        // 48 blocks in a gap of 128: 16 + 16 + 8 + 4 + 2 + 1 automorphisms
        assert_eq!(interleave_autos(&[true; 48], 7), 47);
        assert_eq!(interleave_autos(&[true; 128], 7), 127);
        assert_eq!(interleave_autos(&[true; 1], 7), 0);
    }

    #[test]
    fn pack_lwes_output_rule() {
        let mut prg = Prg::new([2; 16]);
        for &(n, count) in &[(16usize, 16usize), (32, 5), (32, 1), (64, 33)] {
            let ring = PlainRing { n, q: Q };
            let inputs: Vec<Vec<u64>> = (0..count).map(|_| random_poly(&mut prg, n)).collect();
            let (c, autos) = pack_lwes(&ring, inputs.iter().cloned().map(Some).collect()).unwrap();
            for (i, a) in inputs.iter().enumerate() {
                assert_eq!(c[pack_lwes_position(i, count, n)], a[0], "n={n} count={count} input {i}");
            }
            // off the inputs' grid (multiples of N/n') the trace clears everything; the grid's
            // slots past the inputs hold garbage (butterflies with an absent half are doubled)
            let step = n / count.next_power_of_two();
            assert!((0..n).filter(|p| p % step != 0).all(|p| c[p] == 0), "n={n} count={count}");
            let trace = (n / count.next_power_of_two()).trailing_zeros() as usize;
            assert_eq!(autos, interleave_autos(&vec![true; count], count.next_power_of_two().trailing_zeros()) + trace);
        }
    }

    #[test]
    fn rejects_bad_arguments() {
        let ring = PlainRing { n: 16, q: Q };
        assert!(interleave(&ring, vec![None; 5], 2).is_err());
        assert!(interleave(&ring, vec![], 5).is_err());
        assert!(pack_lwes(&ring, vec![]).is_err());
        assert!(ring.automorphism(&vec![0; 16], 4).is_err());
    }
}
