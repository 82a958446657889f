//! The rows `nectar params` shows for an HE parameter set ([`nectar_math::registry::HeRow`]):
//! its modulus against the HE standard's 128-bit bound at its ring degree, its plaintext
//! modulus or scale, and its error width.

use crate::ckks::CkksParams;
use crate::params::{DEFAULT_ERROR_ETA, SECURITY_TABLE_128};
use crate::Params;
use nectar_math::registry::HeRow;

/// The HE standard's bound on `log2(q·P)` at ring degree `n` (0: no entry).
pub fn max_log_qp_128(n: usize) -> u32 {
    SECURITY_TABLE_128.iter().find(|(m, _)| *m == n).map_or(0, |x| x.1)
}

/// σ = √(η/2) of a centred-binomial error of parameter `eta`.
pub fn error_sigma(eta: u32) -> f64 {
    (eta as f64 / 2.0).sqrt()
}

impl Params {
    /// This set's row, serving `role`: `log_t` is its largest plaintext (CRT) modulus.
    pub fn security_row(&self, role: &'static str) -> HeRow {
        let n = self.n();
        let log_t = (0..self.plain_count()).map(|j| 128 - (self.plain_modulus(j) - 1).leading_zeros()).max().unwrap_or(0);
        HeRow {
            role,
            n,
            log_qp: self.q_bits(self.max_level()) + self.special_modulus().map_or(0, |m| m.bits()),
            max_log_qp_128: max_log_qp_128(n),
            log_t,
            error_sigma: error_sigma(DEFAULT_ERROR_ETA),
        }
    }
}

impl CkksParams {
    /// This set's row, serving `role`: `log_t` is its scale `log2 Δ`.
    pub fn security_row(&self, role: &'static str) -> HeRow {
        HeRow {
            role,
            n: self.n(),
            log_qp: self.q_bits(self.max_level()) + self.special_prime().map_or(0, |q| 64 - q.leading_zeros()),
            max_log_qp_128: max_log_qp_128(self.n()),
            log_t: self.scale_bits(),
            error_sigma: error_sigma(DEFAULT_ERROR_ETA),
        }
    }
}
