//! Wire helpers: lists of ciphertexts and key material in one frame, on the HE layer's
//! versioned, length-checked serialization. Every decoder returns an error on malformed input.

use crate::LinearError;
use nectar_he::{Ciphertext, GaloisKeys, Params, PublicKey};
use rayon::prelude::*;

/// Ciphertexts per frame of a streamed list of ciphertexts (AGREEMENT: shapes the transcript).
///
/// A bOLEe query or response and an OLT query travel as consecutive frames of at most this many
/// ciphertexts (an OLT response as one frame per output ciphertext, sent as each is ready), so
/// that each side works on one frame while the next is on the wire: the sender encrypts frame
/// `f + 1` while the receiver answers or decrypts frame `f`. Two is one ciphertext per core of
/// the 2-core machines we measure on; a frame is 0.1–0.4 MB at `N = 8192`, 1–3 ms at 1 Gbit/s.
/// The framing adds no flight: every frame of a message goes the same way as the one before it.
pub const FRAME_CTS: usize = 2;

/// The index ranges of the frames of a `total`-ciphertext message.
pub(crate) fn frames(total: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..total).step_by(FRAME_CTS).map(move |a| a..(a + FRAME_CTS).min(total))
}

pub(crate) fn cts_to_bytes(params: &Params, cts: &[Ciphertext]) -> Result<Vec<u8>, LinearError> {
    let parts: Vec<Vec<u8>> = cts.par_iter().map(|ct| ct_to_bytes(params, ct)).collect::<Result<_, _>>()?;
    Ok(frame(&parts))
}

/// `count`, then each part with its length (the ciphertexts are serialized in parallel, then
/// framed in order).
fn frame(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + parts.iter().map(|b| b.len() + 4).sum::<usize>());
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for b in parts {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

/// The `count`-prefixed, length-framed parts of a message (checked to be exactly `expected`),
/// in order, for parallel deserialization.
fn unframe(bytes: &[u8], expected: usize) -> Result<Vec<&[u8]>, LinearError> {
    let mut rd = Reader(bytes);
    let n = rd.u32()? as usize;
    if n != expected {
        return Err(LinearError::Malformed(format!(
            "expected {expected} ciphertexts, got {n}"
        )));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = rd.u32()? as usize;
        out.push(rd.take(len)?);
    }
    rd.end()?;
    Ok(out)
}

/// The serialized ciphertexts of a frame of `expected`, each as its own bytes (to keep or
/// store them, and deserialize some later with [`ct_from_part`]).
pub(crate) fn parts_of_frame(bytes: &[u8], expected: usize) -> Result<Vec<Vec<u8>>, LinearError> {
    Ok(unframe(bytes, expected)?.into_iter().map(|b| b.to_vec()).collect())
}

/// One ciphertext from its serialized bytes (a part of [`parts_of_frame`]).
pub(crate) fn ct_from_part(params: &Params, b: &[u8]) -> Result<Ciphertext, LinearError> {
    ct_from_bytes(params, b)
}

pub(crate) fn cts_from_bytes(
    params: &Params,
    bytes: &[u8],
    expected: usize,
) -> Result<Vec<Ciphertext>, LinearError> {
    unframe(bytes, expected)?.into_par_iter().map(|b| ct_from_bytes(params, b)).collect()
}

/// Like [`cts_to_bytes`], sending only the `b`-coefficients at `positions[i]` of ciphertext `i`
/// when that is not all of them.
pub(crate) fn cts_to_bytes_partial(
    params: &Params,
    cts: &[Ciphertext],
    positions: &[Vec<usize>],
) -> Result<Vec<u8>, LinearError> {
    let parts: Vec<Vec<u8>> = cts
        .par_iter()
        .zip(positions)
        .map(|(ct, pos)| -> Result<Vec<u8>, LinearError> {
            Ok(if pos.len() < params.n() {
                ct.serialize_partial(params, pos)?
            } else {
                ct.serialize(params)
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(frame(&parts))
}

pub(crate) fn cts_from_bytes_partial(
    params: &Params,
    bytes: &[u8],
    positions: &[Vec<usize>],
) -> Result<Vec<Ciphertext>, LinearError> {
    unframe(bytes, positions.len())?
        .into_par_iter()
        .zip(positions)
        .map(|(b, pos)| -> Result<Ciphertext, LinearError> {
            Ok(if pos.len() < params.n() {
                Ciphertext::deserialize_partial(params, b, pos)?
            } else {
                Ciphertext::deserialize(params, b)?
            })
        })
        .collect()
}

pub(crate) fn keys_to_bytes(
    params: &Params,
    pk: &PublicKey,
    gk: Option<&GaloisKeys>,
) -> Result<Vec<u8>, LinearError> {
    let pkb = pk.serialize(params);
    let mut out = Vec::with_capacity(pkb.len() + 9);
    out.extend_from_slice(&(pkb.len() as u32).to_le_bytes());
    out.extend_from_slice(&pkb);
    match gk {
        None => out.push(0),
        Some(g) => {
            let gb = g.serialize(params);
            out.push(1);
            out.extend_from_slice(&(gb.len() as u32).to_le_bytes());
            out.extend_from_slice(&gb);
        }
    }
    Ok(out)
}

pub(crate) fn keys_from_bytes(
    params: &Params,
    b: &[u8],
) -> Result<(PublicKey, Option<GaloisKeys>), LinearError> {
    let mut rd = Reader(b);
    let len = rd.u32()? as usize;
    let pk = PublicKey::deserialize(params, rd.take(len)?)?;
    let gk = match rd.take(1)?[0] {
        0 => None,
        1 => {
            let len = rd.u32()? as usize;
            Some(GaloisKeys::deserialize(params, rd.take(len)?)?)
        }
        f => return Err(LinearError::Malformed(format!("Galois-key flag {f}"))),
    };
    rd.end()?;
    Ok((pk, gk))
}

fn ct_to_bytes(params: &Params, ct: &Ciphertext) -> Result<Vec<u8>, LinearError> {
    Ok(ct.serialize(params))
}

fn ct_from_bytes(params: &Params, b: &[u8]) -> Result<Ciphertext, LinearError> {
    Ok(Ciphertext::deserialize(params, b)?)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], LinearError> {
        if self.0.len() < n {
            return Err(LinearError::Malformed(format!(
                "truncated: need {n} bytes, have {}",
                self.0.len()
            )));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, LinearError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn end(&self) -> Result<(), LinearError> {
        if !self.0.is_empty() {
            return Err(LinearError::Malformed(format!(
                "{} trailing bytes",
                self.0.len()
            )));
        }
        Ok(())
    }
}
