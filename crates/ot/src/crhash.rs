//! Fixed-key AES primitives: the correlation-robust hash and the GGM length-doubling PRG.
//!
//! - [`Crh::tccr`]: the tweakable circular correlation-robust hash of Guo, Katz, Wang, Yu
//!   ("Efficient and secure multiparty computation from fixed-key block ciphers", S&P'20, §7.4):
//!   `H(i, x) = π(π(x) ⊕ i) ⊕ π(x)` with `π` = AES-128 under a fixed public key. It turns a COT
//!   pair `(q, q ⊕ Δ)` into two independent-looking pads, the tweak `i` making every use unique.
//! - [`Crh::prg2`]: the GGM length-doubling PRG `G(x) = (π₀(x) ⊕ x, π₁(x) ⊕ x)` with two fixed
//!   keys (Davies–Meyer style, as emp-ot's `PRP`-based tree expansion).
//!
//! All calls take whole slices and encrypt [`PIPE`] blocks at a time so the AES-NI pipeline
//! stays full (the `aes` crate uses AES-NI when the CPU has it, 8 blocks in flight).
//!
//! Keys (AGREEMENT): fixed public constants, identical in both parties; changing them changes
//! every transcript.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::Aes128;

/// Blocks per AES batch (LOCAL).
pub const PIPE: usize = 8;

const KEY_CRH: [u8; 16] = *b"nectar-ot crh k0";
const KEY_G0: [u8; 16] = *b"nectar-ot ggm g0";
const KEY_G1: [u8; 16] = *b"nectar-ot ggm g1";

/// A fixed-key AES permutation applied to `u128` blocks (little-endian byte order).
#[derive(Clone)]
pub struct FixedAes(Aes128);

impl FixedAes {
    /// AES-128 under `key`.
    pub fn new(key: [u8; 16]) -> Self {
        FixedAes(Aes128::new(GenericArray::from_slice(&key)))
    }

    /// Encrypt every block in place, [`PIPE`] at a time.
    pub fn encrypt(&self, xs: &mut [u128]) {
        let mut buf = [GenericArray::from([0u8; 16]); PIPE];
        for chunk in xs.chunks_mut(PIPE) {
            let k = chunk.len();
            for (b, x) in buf.iter_mut().zip(chunk.iter()) {
                *b = GenericArray::from(x.to_le_bytes());
            }
            self.0.encrypt_blocks(&mut buf[..k]);
            for (x, b) in chunk.iter_mut().zip(buf.iter()) {
                *x = u128::from_le_bytes((*b).into());
            }
        }
    }

    /// Encrypt one block.
    pub fn encrypt1(&self, x: u128) -> u128 {
        let mut b = GenericArray::from(x.to_le_bytes());
        self.0.encrypt_block(&mut b);
        u128::from_le_bytes(b.into())
    }
}

/// The hash and PRG of this crate (cheap to clone; build once per session).
#[derive(Clone)]
pub struct Crh {
    pi: FixedAes,
    g0: FixedAes,
    g1: FixedAes,
}

impl Default for Crh {
    fn default() -> Self {
        Self::new()
    }
}

impl Crh {
    pub fn new() -> Self {
        Crh { pi: FixedAes::new(KEY_CRH), g0: FixedAes::new(KEY_G0), g1: FixedAes::new(KEY_G1) }
    }

    /// `xs[i] ← H(tweaks(i), xs[i])` for every `i` (TCCR hash, see module doc).
    pub fn tccr_with(&self, xs: &mut [u128], tweak: impl Fn(usize) -> u128) {
        let mut a = [0u128; PIPE];
        let mut b = [0u128; PIPE];
        for (c, chunk) in xs.chunks_mut(PIPE).enumerate() {
            let k = chunk.len();
            a[..k].copy_from_slice(chunk);
            self.pi.encrypt(&mut a[..k]);
            for j in 0..k {
                b[j] = a[j] ^ tweak(c * PIPE + j);
            }
            self.pi.encrypt(&mut b[..k]);
            for j in 0..k {
                chunk[j] = a[j] ^ b[j];
            }
        }
    }

    /// `xs[i] ← H(base + i, xs[i])`.
    pub fn tccr_seq(&self, xs: &mut [u128], base: u128) {
        self.tccr_with(xs, |i| base.wrapping_add(i as u128));
    }

    /// One TCCR evaluation.
    pub fn tccr(&self, tweak: u128, x: u128) -> u128 {
        let a = self.pi.encrypt1(x);
        self.pi.encrypt1(a ^ tweak) ^ a
    }

    /// GGM expansion of one level: `out[2i], out[2i+1] = G(parents[i])`.
    pub fn prg2(&self, parents: &[u128], out: &mut [u128]) {
        debug_assert_eq!(out.len(), 2 * parents.len());
        let mut l = [0u128; PIPE];
        let mut r = [0u128; PIPE];
        for (c, chunk) in parents.chunks(PIPE).enumerate() {
            let k = chunk.len();
            l[..k].copy_from_slice(chunk);
            r[..k].copy_from_slice(chunk);
            self.g0.encrypt(&mut l[..k]);
            self.g1.encrypt(&mut r[..k]);
            for j in 0..k {
                out[2 * (c * PIPE + j)] = l[j] ^ chunk[j];
                out[2 * (c * PIPE + j) + 1] = r[j] ^ chunk[j];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_matches_single_and_tweaks_separate() {
        let h = Crh::new();
        let mut xs: Vec<u128> = (0..21u128).map(|i| i * 0x1234_5678_9abc).collect();
        let ys = xs.clone();
        h.tccr_seq(&mut xs, 100);
        for (i, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {
            assert_eq!(*x, h.tccr(100 + i as u128, *y));
        }
        assert_ne!(h.tccr(1, 5), h.tccr(2, 5));
        let mut out = vec![0u128; 42];
        h.prg2(&ys, &mut out);
        assert_ne!(out[0], out[1]);
        assert_eq!(out[2], h.g0.encrypt1(ys[1]) ^ ys[1]);
    }
}
