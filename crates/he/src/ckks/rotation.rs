//! Slot rotations and complex conjugation (CKKS paper (BLB ref. 6) §4.2; BLB §2.4 "Rotation"): the
//! automorphism `X -> X^g` followed by a hybrid key switch back to `s`
//! (centred digits, `ckks::keyswitch`). With the slot order of [`super::fft`], `g = 5^k mod 2N` rotates the
//! `N/2` slots left by `k` (`Rot_k(z)_j = z_{j+k}`) and `g = 2N − 1` conjugates them. One key
//! switch each; added error as in [`super::eval`] (a key switch plus its rounding term).

use super::ciphertext::CkksCiphertext;
use super::eval::CkksEvaluator;
use super::keyswitch::key_switch;
use crate::HeError;
use super::galois::{conjugation_element, rotation_element};

impl CkksEvaluator {
    fn apply_galois(&self, a: &CkksCiphertext, g: u64, conjugation: bool) -> Result<CkksCiphertext, HeError> {
        if a.c2.is_some() {
            return Err(HeError::Mismatch("rotation of an unrelinearised ciphertext".into()));
        }
        let key = self.galois_keys().keys.keys.get(&g).ok_or(HeError::MissingGaloisKey(g))?;
        let (c0, c1) = key_switch(self.params().engine(), &a.ct.c0, &a.ct.c1, g, key)?;
        self.count_rotation(conjugation);
        Ok(CkksCiphertext::from_parts(c0, c1, None, a.scale))
    }

    /// Rotates the slots left by `k` (negative: right); `k ≡ 0 mod N/2` is a copy and is not
    /// counted. Needs the Galois key of [`rotation_element`]`(N, k)`. Coefficient form.
    pub fn rotate(&self, a: &CkksCiphertext, k: i64) -> Result<CkksCiphertext, HeError> {
        let g = rotation_element(self.params().n(), k);
        if g == 1 {
            return Ok(a.clone());
        }
        self.apply_galois(a, g, false)
    }

    /// Conjugates every slot. Needs the conjugation key. Coefficient form.
    pub fn conjugate(&self, a: &CkksCiphertext) -> Result<CkksCiphertext, HeError> {
        self.apply_galois(a, conjugation_element(self.params().n()), true)
    }
}
