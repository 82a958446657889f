//! AES-128 in counter mode as a seeded pseudo-random generator.
//!
//! Every random value in nectar (masks, HE noise, OT seeds) comes from a [`Prg`]. A session draws
//! one fresh 128-bit seed from the operating system ([`Prg::from_entropy`]) and derives all others
//! from it with [`Prg::fork`], so a whole run is reproducible from one seed in tests while every
//! stream is independent (distinct AES keys). The `aes` crate uses AES-NI when the CPU has it;
//! blocks are encrypted [`BATCH`] at a time so the pipeline stays full.
//!
//! Security (SECURITY): AES-128 as a PRF; a stream never repeats a (key, counter) pair because the
//! 128-bit counter starts at 0 for every fresh key and a stream is far shorter than 2^128 blocks.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::Aes128;
use rand_core::{CryptoRng, RngCore, SeedableRng};

/// A 128-bit block (seed, key, or OT message).
pub type Block = [u8; 16];

/// Blocks encrypted per refill (LOCAL): 64 blocks = 1 KiB of output.
pub const BATCH: usize = 64;

/// AES-128-CTR generator.
#[derive(Clone)]
pub struct Prg {
    cipher: Aes128,
    counter: u128,
    buf: [u8; 16 * BATCH],
    pos: usize,
}

impl std::fmt::Debug for Prg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("Prg").field("counter", &self.counter).finish_non_exhaustive()
    }
}

impl Prg {
    /// A generator from a 128-bit seed (the AES key).
    pub fn new(seed: Block) -> Self {
        Prg {
            cipher: Aes128::new(GenericArray::from_slice(&seed)),
            counter: 0,
            buf: [0u8; 16 * BATCH],
            pos: 16 * BATCH,
        }
    }

    /// A generator seeded from the operating system's entropy source.
    pub fn from_entropy() -> Self {
        let mut seed = [0u8; 16];
        rand_core::OsRng.fill_bytes(&mut seed);
        Self::new(seed)
    }

    /// A fresh 128-bit seed drawn from this stream.
    pub fn gen_block(&mut self) -> Block {
        let mut b = [0u8; 16];
        self.fill_bytes(&mut b);
        b
    }

    /// An independent child generator (a fresh key drawn from this stream).
    pub fn fork(&mut self) -> Prg {
        Prg::new(self.gen_block())
    }

    /// The next 128-bit word.
    pub fn next_u128(&mut self) -> u128 {
        u128::from_le_bytes(self.gen_block())
    }

    /// A uniformly random bit.
    pub fn next_bit(&mut self) -> bool {
        self.next_u32() & 1 == 1
    }

    fn refill(&mut self) {
        let mut blocks = [GenericArray::from([0u8; 16]); BATCH];
        for b in blocks.iter_mut() {
            *b = GenericArray::from(self.counter.to_le_bytes());
            self.counter = self.counter.wrapping_add(1);
        }
        self.cipher.encrypt_blocks(&mut blocks);
        for (i, b) in blocks.iter().enumerate() {
            self.buf[16 * i..16 * i + 16].copy_from_slice(b);
        }
        self.pos = 0;
    }
}

impl RngCore for Prg {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }

    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let mut off = 0;
        while off < dest.len() {
            if self.pos == self.buf.len() {
                self.refill();
            }
            let n = (dest.len() - off).min(self.buf.len() - self.pos);
            dest[off..off + n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            off += n;
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl CryptoRng for Prg {}

impl SeedableRng for Prg {
    type Seed = Block;
    fn from_seed(seed: Block) -> Self {
        Prg::new(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fips197_known_answer() {
        // FIPS-197 Appendix C.1 with key 000102..0f; counter block 0 is the all-zero block,
        // so check the raw AES instead: encrypt plaintext 00112233..ff.
        let key: Block = core::array::from_fn(|i| i as u8);
        let c = Aes128::new(GenericArray::from_slice(&key));
        let mut b = GenericArray::from([
            0x00u8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ]);
        c.encrypt_block(&mut b);
        assert_eq!(
            b.as_slice(),
            &[
                0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
                0xc5, 0x5a
            ]
        );
    }

    #[test]
    fn deterministic_and_chunking_invariant() {
        let mut a = Prg::new([7; 16]);
        let mut b = Prg::new([7; 16]);
        let mut x = vec![0u8; 5000];
        a.fill_bytes(&mut x);
        let mut y = vec![0u8; 5000];
        for ch in y.chunks_mut(37) {
            b.fill_bytes(ch);
        }
        assert_eq!(x, y);
        let mut c = Prg::new([8; 16]);
        let mut z = vec![0u8; 5000];
        c.fill_bytes(&mut z);
        assert_ne!(x, z);
    }

    #[test]
    fn forks_are_distinct() {
        let mut p = Prg::new([1; 16]);
        let mut f1 = p.fork();
        let mut f2 = p.fork();
        assert_ne!(f1.next_u128(), f2.next_u128());
    }

    #[test]
    fn entropy_seeds_differ() {
        assert_ne!(Prg::from_entropy().next_u128(), Prg::from_entropy().next_u128());
    }

    #[test]
    fn roughly_balanced_bits() {
        let mut p = Prg::new([3; 16]);
        let ones: u32 = (0..10_000).map(|_| p.next_u64().count_ones()).sum();
        let frac = ones as f64 / 640_000.0;
        assert!((frac - 0.5).abs() < 0.005, "{frac}");
    }
}
