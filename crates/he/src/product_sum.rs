//! A sum of ciphertext × plaintext products `Σ_β ct_β ⊠ pt_β` accumulated in 128 bits, reduced
//! modulo each prime once at the end instead of once per product (lazy reduction). The OLT
//! evaluator's block products (BumbleBee §III, Alg. 1 step 2) are such sums over the inner
//! blocks `β`: MiniLM's embedding sums 120 of them per result block.
//!
//! Exactness: the result equals [`Ciphertext::mul_plain`] followed by
//! [`Ciphertext::mul_plain_accumulate`] for every term, coefficient by coefficient (both are
//! the exact sums mod `q_i`). A `u128` entry holds [`NttPlan::wide_terms`] products of values
//! below the prime; the sum folds (reduces in place) before it would exceed that, so no
//! entry overflows whatever the number of terms.
//!
//! For primes below `2^50` (the narrow OLT set) on a CPU with AVX-512 IFMA the entries are
//! `(L, H)` words of [`nectar_math::ifma::mul_acc`] instead (eight 52-bit products per
//! instruction; the same sums).
//!
//! [`NttPlan::wide_terms`]: nectar_math::ntt::NttPlan::wide_terms

use crate::ciphertext::Ciphertext;
use crate::encoding::PlainNtt;
use crate::params::Params;
use crate::poly::{with_ntt_limb, RnsPoly};
use crate::HeError;
use nectar_math::ifma;
use rayon::prelude::*;

/// `Σ ct ⊠ pt` for ciphertexts of one level and plaintext component, in 128-bit lanes.
#[derive(Clone, Debug)]
pub struct ProductSum {
    /// `c0` limbs then `c1` limbs, `2·level·N` entries, limb-major.
    wide: Vec<u128>,
    level: usize,
    plain_index: usize,
    /// Products (or reduced values) each entry holds now.
    terms: usize,
    /// The fewest terms any limb's entry can hold ([`nectar_math::ntt::NttPlan::wide_terms`],
    /// or [`ifma::ACC_TERMS`]).
    max_terms: usize,
    /// Every prime of the level is below `2^50` and the CPU has IFMA: the entries are
    /// [`ifma::mul_acc`]'s `(L, H)` words instead of 128-bit integers (same sums).
    ifma: bool,
}

impl ProductSum {
    /// An empty sum for ciphertexts at `level` of plaintext component `plain_index`.
    pub fn new(params: &Params, level: usize, plain_index: usize) -> Result<Self, HeError> {
        if level == 0 || level > params.max_level() {
            return Err(HeError::OutOfRange(format!("level {level}")));
        }
        params.check_plain_index(plain_index)?;
        let ifma = params.n() % 8 == 0 && (0..level).all(|i| ifma::available(params.modulus(i).value()));
        let max_terms = if ifma { ifma::ACC_TERMS } else { (0..level).map(|i| params.plan(i).wide_terms()).min().unwrap_or(1) };
        Ok(Self { wide: vec![0; 2 * level * params.n()], level, plain_index, terms: 0, max_terms, ifma })
    }

    /// Whether nothing was added yet.
    pub fn is_empty(&self) -> bool {
        self.terms == 0
    }

    /// `self += ct ⊠ pt`. `ct` must be at this sum's level and plaintext component (NTT form
    /// avoids a transform per call); `pt` at that level or above.
    pub fn add(&mut self, params: &Params, ct: &Ciphertext, pt: &PlainNtt) -> Result<(), HeError> {
        if ct.level() != self.level || ct.plain_index != self.plain_index {
            return Err(HeError::Mismatch(format!(
                "ciphertext (component {}, level {}) in a sum of component {}, level {}",
                ct.plain_index,
                ct.level(),
                self.plain_index,
                self.level
            )));
        }
        ct.check_pt(pt)?;
        if self.terms >= self.max_terms {
            self.fold(params);
        }
        let (n, l, wide) = (params.n(), self.level, self.ifma);
        self.wide.par_chunks_mut(n).enumerate().try_for_each(|(idx, acc)| {
            let (src, i) = if idx < l { (&ct.c0, idx) } else { (&ct.c1, idx - l) };
            with_ntt_limb(params, src, i, |a| {
                if wide {
                    ifma_ran(ifma::mul_acc(params.modulus(i).value(), acc, None, &[(a, &[], pt.poly.limb(i))]))
                } else {
                    params.plan(i).mul_accumulate_wide(acc, a, pt.poly.limb(i));
                    Ok(())
                }
            })
        })?;
        self.terms += 1;
        Ok(())
    }

    /// `self += Σ_t ct_t ⊠ pt_t`, the same sum as [`Self::add`] for each term in turn, in one
    /// pass over the accumulator per limb (see
    /// [`nectar_math::ntt::NttPlan::mul_accumulate_wide_terms`]). Every ciphertext must be at
    /// this sum's level and plaintext component, in NTT form.
    pub fn add_many(&mut self, params: &Params, terms: &[(&Ciphertext, &PlainNtt)]) -> Result<(), HeError> {
        for (ct, pt) in terms {
            if ct.level() != self.level || ct.plain_index != self.plain_index || !ct.c0.ntt || !ct.c1.ntt {
                return Err(HeError::Mismatch(format!(
                    "ciphertext (component {}, level {}, NTT form {}) in a sum of component {}, level {} (NTT form)",
                    ct.plain_index,
                    ct.level(),
                    ct.c0.ntt && ct.c1.ntt,
                    self.plain_index,
                    self.level
                )));
            }
            ct.check_pt(pt)?;
        }
        let (n, l) = (params.n(), self.level);
        // Halves of limbs as tasks: 2·level of them, as many as `add` has.
        let half = n / 2;
        for group in terms.chunks(self.max_terms.max(2) - 1) {
            if self.terms + group.len() > self.max_terms {
                self.fold(params);
            }
            let (w0, w1) = self.wide.split_at_mut(l * n);
            let wide = self.ifma;
            w0.par_chunks_mut(half).zip(w1.par_chunks_mut(half)).enumerate().try_for_each(|(idx, (acc0, acc1))| {
                let (i, lo) = (idx / 2, (idx % 2) * half);
                let slices: Vec<(&[u64], &[u64], &[u64])> = group
                    .iter()
                    .map(|(ct, pt)| (&ct.c0.limb(i)[lo..lo + half], &ct.c1.limb(i)[lo..lo + half], &pt.poly.limb(i)[lo..lo + half]))
                    .collect();
                if wide {
                    ifma_ran(ifma::mul_acc(params.modulus(i).value(), acc0, Some(acc1), &slices))
                } else {
                    params.plan(i).mul_accumulate_wide_terms(acc0, acc1, &slices);
                    Ok(())
                }
            })?;
            self.terms += group.len();
        }
        Ok(())
    }

    /// Reduces every entry in place (it then counts as one term).
    fn fold(&mut self, params: &Params) {
        let (n, l, wide) = (params.n(), self.level, self.ifma);
        self.wide.par_chunks_mut(n).enumerate().for_each(|(idx, acc)| {
            let m = params.modulus(idx % l);
            // `ifma` was decided from these very primes, so the kernel runs.
            if !(wide && ifma::fold_acc(m.value(), acc)) {
                acc.iter_mut().for_each(|x| *x = m.reduce_u128(*x) as u128);
            }
        });
        self.terms = 1;
    }

    /// The sum as a ciphertext in NTT form (`None` when nothing was added).
    pub fn finish(self, params: &Params) -> Option<Ciphertext> {
        if self.terms == 0 {
            return None;
        }
        let (n, l) = (params.n(), self.level);
        let mut c0 = RnsPoly::zero_level(n, l, true);
        let mut c1 = RnsPoly::zero_level(n, l, true);
        let wide = self.ifma;
        c0.data.par_chunks_mut(n).chain(c1.data.par_chunks_mut(n)).zip(self.wide.par_chunks(n)).enumerate().for_each(
            |(idx, (out, acc))| {
                if !(wide && ifma::reduce_acc(params.modulus(idx % l).value(), acc, out)) {
                    params.plan(idx % l).reduce_wide(acc, out);
                }
            },
        );
        Some(Ciphertext { c0, c1, seed: None, plain_index: self.plain_index })
    }
}

/// An IFMA kernel's answer as a result: it refuses only what [`ProductSum::new`] ruled out.
fn ifma_ran(ran: bool) -> Result<(), HeError> {
    if ran {
        Ok(())
    } else {
        Err(HeError::Mismatch("the IFMA accumulation refused its operands".into()))
    }
}
