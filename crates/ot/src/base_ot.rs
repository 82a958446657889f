//! Base OT: the "simplest OT" of Chou and Orlandi (LATINCRYPT'15) on the Ristretto group,
//! batched: one sender key `A = a·G` serves all instances.
//!
//! Protocol (`m` random 1-of-2 OTs on 128-bit keys):
//! 1. sender → receiver: `A = a·G` (32 bytes);
//! 2. receiver → sender: `B_i = b_i·G + c_i·A` for each choice bit `c_i` (32 bytes each);
//! 3. sender outputs `k_{i,0} = H(A, B_i, i, a·B_i)`, `k_{i,1} = H(A, B_i, i, a·(B_i − A))`;
//!    receiver outputs `k_{i,c_i} = H(A, B_i, i, b_i·A)`.
//!
//! `H` is SHA-256 truncated to 128 bits. Cost: 2 flows, `32·(m+1)` bytes; `m` = 128 for the
//! extensions. Secure against semi-honest adversaries in the random-oracle model (the setting
//! of nectar; the known UC-simulation caveats of this protocol concern malicious receivers).
//! Points that fail to decompress are a typed error ([`OtError::BadPoint`]).

use crate::OtError;
use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use nectar_math::Prg;
use nectar_net::Channel;
use sha2::{Digest, Sha256};

fn kdf(a: &CompressedRistretto, b: &[u8], i: usize, p: &RistrettoPoint) -> u128 {
    let mut h = Sha256::new();
    h.update(b"nectar-ot base-ot v1");
    h.update(a.as_bytes());
    h.update(b);
    h.update((i as u64).to_le_bytes());
    h.update(p.compress().as_bytes());
    let d = h.finalize();
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    u128::from_le_bytes(k)
}

fn decompress(b: &[u8]) -> Result<RistrettoPoint, OtError> {
    CompressedRistretto::from_slice(b).map_err(|_| OtError::BadPoint)?.decompress().ok_or(OtError::BadPoint)
}

/// Sender of `m` base OTs: returns the key pairs `(k_{i,0}, k_{i,1})`.
pub fn send<C: Channel + ?Sized>(ch: &mut C, m: usize, prg: &mut Prg) -> Result<Vec<(u128, u128)>, OtError> {
    let a = Scalar::random(prg);
    let big_a = &a * RISTRETTO_BASEPOINT_TABLE;
    let ca = big_a.compress();
    ch.send(ca.as_bytes())?;
    let bs = ch.recv()?;
    if bs.len() != 32 * m {
        return Err(OtError::BadMessage { what: "base OT points", expected: 32 * m, got: bs.len() });
    }
    let mut out = Vec::with_capacity(m);
    for (i, bb) in bs.chunks_exact(32).enumerate() {
        let b = decompress(bb)?;
        let ab = a * b;
        let aa = a * big_a;
        out.push((kdf(&ca, bb, i, &ab), kdf(&ca, bb, i, &(ab - aa))));
    }
    Ok(out)
}

/// Receiver of base OTs with the given choice bits: returns `k_{i,c_i}`.
pub fn recv<C: Channel + ?Sized>(ch: &mut C, choices: &[bool], prg: &mut Prg) -> Result<Vec<u128>, OtError> {
    let abytes = ch.recv()?;
    if abytes.len() != 32 {
        return Err(OtError::BadMessage { what: "base OT sender key", expected: 32, got: abytes.len() });
    }
    let big_a = decompress(&abytes)?;
    let ca = big_a.compress();
    let mut msg = Vec::with_capacity(32 * choices.len());
    let mut keys = Vec::with_capacity(choices.len());
    for (i, &c) in choices.iter().enumerate() {
        let b = Scalar::random(prg);
        let mut big_b = &b * RISTRETTO_BASEPOINT_TABLE;
        if c {
            big_b += big_a;
        }
        let cb = big_b.compress();
        msg.extend_from_slice(cb.as_bytes());
        keys.push(kdf(&ca, cb.as_bytes(), i, &(b * big_a)));
    }
    ch.send(&msg)?;
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_net::mem::run_pair;

    #[test]
    fn keys_match_choices() {
        let choices: Vec<bool> = (0..128).map(|i| (i * 7) % 3 == 1).collect();
        let ch2 = choices.clone();
        let (s, r) = run_pair(
            |c| send(c, 128, &mut Prg::new([1; 16])).unwrap(),
            move |c| recv(c, &ch2, &mut Prg::new([2; 16])).unwrap(),
        );
        for i in 0..128 {
            let (k0, k1) = s[i];
            assert_ne!(k0, k1);
            assert_eq!(r[i], if choices[i] { k1 } else { k0 });
        }
    }

    #[test]
    fn bad_point_is_typed_error() {
        let (e, _) = run_pair(
            |c| send(c, 2, &mut Prg::new([1; 16])),
            |c| {
                let _ = c.recv();
                c.send(&[0xffu8; 64]).unwrap();
            },
        );
        assert!(matches!(e, Err(OtError::BadPoint)));
    }
}
