#![allow(dead_code)]
//! Shared helpers of the two-party tests.

use nectar_math::Prg;
use nectar_mpc::Mpc;
use nectar_net::mem::run_pair;
use nectar_net::{Channel, NetError, Role, Stats};
use nectar_ot::Producer;
use sha2::{Digest, Sha256};

/// Run `fa` as the server and `fb` as the client, each with a fresh fixed-seed context
/// (IKNP producer: fast, deterministic).
pub fn run<A: Send, B: Send>(
    fa: impl FnOnce(&mut Mpc, &mut dyn Channel) -> A + Send,
    fb: impl FnOnce(&mut Mpc, &mut dyn Channel) -> B + Send,
) -> (A, B) {
    run_pair(
        move |c| {
            let mut m =
                Mpc::setup(Role::Server, c, Prg::new([1; 16]), Producer::Iknp).expect("setup");
            fa(&mut m, c)
        },
        move |c| {
            let mut m =
                Mpc::setup(Role::Client, c, Prg::new([2; 16]), Producer::Iknp).expect("setup");
            fb(&mut m, c)
        },
    )
}

pub fn mask(l: u32) -> u64 {
    if l == 64 {
        u64::MAX
    } else {
        (1u64 << l) - 1
    }
}

pub fn signed(v: u64, l: u32) -> i64 {
    nectar_mpc::ctx::to_signed(v, l)
}

pub fn ring(v: i64, l: u32) -> u64 {
    (v as u64) & mask(l)
}

/// Additive shares of `x` mod `2^l`.
pub fn share(x: &[u64], l: u32, seed: u8) -> (Vec<u64>, Vec<u64>) {
    let mut p = Prg::new([seed; 16]);
    let x1: Vec<u64> = x.iter().map(|_| p.next_u128() as u64 & mask(l)).collect();
    let x0 = x
        .iter()
        .zip(&x1)
        .map(|(a, b)| a.wrapping_sub(*b) & mask(l))
        .collect();
    (x0, x1)
}

pub fn share_bits(b: &[bool], seed: u8) -> (Vec<bool>, Vec<bool>) {
    let mut p = Prg::new([seed; 16]);
    let b1: Vec<bool> = b.iter().map(|_| p.next_bit()).collect();
    (b.iter().zip(&b1).map(|(x, y)| x ^ y).collect(), b1)
}

pub fn open(a: &[u64], b: &[u64], l: u32) -> Vec<u64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.wrapping_add(*y) & mask(l))
        .collect()
}

pub fn open_bits(a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// Random values plus the edge values of `Z_{2^l}`: 0, ±1, ±2^(l−1) boundary, and `extra`.
pub fn values(n: usize, l: u32, seed: u8) -> Vec<u64> {
    let mut p = Prg::new([seed; 16]);
    let h = 1u64 << (l - 1);
    let mut v = vec![0, 1, mask(l), h, h - 1, h + 1, 2, mask(l) - 1];
    v.extend((0..n).map(|_| p.next_u128() as u64 & mask(l)));
    v
}

/// Random signed values in `[−2^b, 2^b)` as ring elements, with the edges of that range.
pub fn bounded(n: usize, l: u32, b: u32, seed: u8) -> Vec<u64> {
    let mut p = Prg::new([seed; 16]);
    let lim = 1i64 << b;
    let mut v: Vec<i64> = vec![0, 1, -1, lim - 1, -lim, lim - 2, -lim + 1, 7, -7];
    v.extend((0..n).map(|_| (p.next_u128() as u64 % (2 * lim as u64)) as i64 - lim));
    v.into_iter().map(|x| ring(x, l)).collect()
}

/// A channel that hashes every byte it sends (pinned-transcript tests).
pub struct Recording<'a> {
    pub inner: &'a mut dyn Channel,
    pub hash: Sha256,
}

impl Channel for Recording<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        self.hash.update((msg.len() as u64).to_le_bytes());
        self.hash.update(msg);
        self.inner.send(msg)
    }
    fn recv(&mut self) -> Result<Vec<u8>, NetError> {
        self.inner.recv()
    }
    fn flush(&mut self) -> Result<(), NetError> {
        self.inner.flush()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

pub fn hex(h: Sha256) -> String {
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..16]
        .to_string()
}
