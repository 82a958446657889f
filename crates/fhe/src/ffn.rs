//! LEAF's feed-forward block inside a two-party inference (issue 16 item 6): the client's
//! and the server's additive shares of `X` go in, shares of `act(X·W1 + b1)` come out, and
//! between the two conversions the server evaluates LEAF Alg. 4 steps 1–9 alone (coefficient
//! PCMM, switch to `P`, packing, the functional-bootstrapping polynomial, S2C, modulus and
//! ring switching). `·W2` is not part of LEAF's block (LEAF §1 and Table 2 measure
//! `X·W1 → GELU → refresh`); the caller runs it with its own linear protocol on the shares.
//!
//! **Shares → RLWE (client → server, one flight).** The shares live in `Z_{2^l}`; since
//! `q' = 2^27` divides `2^l`, each party reduces its share of `X` (already truncated to
//! [`LeafFormat::x_frac`] fractional bits by the caller) modulo `q'` and the sum is still `X`
//! modulo `q'`. The client encrypts its share as the *raw phase* (`b = x_c + e − a·s̲`, one
//! ciphertext per input feature, tokens in the first coefficients, [`RlweSecretKey::
//! encrypt_raw_with_a`]) with every `a` expanded from one fresh public seed, and sends the seed
//! and only the `rows` used `b` coefficients (the packing reads no others). The server adds its
//! own share to `b`: the phase is `X + e` modulo `q'`.
//!
//! **Scales.** PCMM with `W1` at `w_frac` bits and the bias at `x_frac + w_frac` bits gives the
//! phase `2^{x_frac + w_frac}·z` with `z = X·W1 + b1`; `x_frac + w_frac = log Δ' + log s`, so
//! the switch to `P` reads the message `m = round(s·z) mod p`: the `1/16` grid over `[−16, 16)`
//! for LEAF's `p = 512` ([`LeafFormat::leaf`]: 22 bits), over `[−32, 32)` for the suite's
//! `p = 1024` ([`LeafFormat::wide`]: 21 bits; values outside wrap, as in LEAF). The table
//! returns `G(m) = round(r(m/s)·2^{out_frac}·P/q')` — the whole of `Z_P` instead of LEAF's
//! `α·g(m)` with `g` on the `1/16` grid — so after the ring switch the phase is
//! `q'/P·G = 2^{out_frac}·r + noise` (noise σ ≈ 2^11, [`crate::ring_switch`]): `out_frac` = 21 (LEAF's set) or 20
//! (the suite's) bits instead of 4. `|r| < p/(2s)` keeps the output below `2^25`, the bound of
//! the caller's ring extension.
//!
//! **RLWE → shares (server → client, one flight).** Before anything leaves the server, each
//! output ciphertext is re-randomised with a fresh encryption of zero under the client's
//! public key ([`RlwePublicKey::rerandomize`]): its `a` part was computed from the client's
//! ciphertexts and the weights, and would otherwise show the client a function of `W1`. Then a
//! fresh uniform `r ∈ Z_{q'}` is added to every used `b` coefficient; the client's share is
//! the phase it decrypts (`v + r`, uniform whatever `v` and its noise are, so no noise
//! flooding is needed: nothing of the phase is ever seen unmasked) and the server's is `−r`.
//! The unused coefficients (padding tokens, which carry `act` of the server's bias) are not
//! sent.
//!
//! **More tokens than one ring** (issue 50; LEAF's block takes at most `n` = 1024 tokens, the
//! RLWE degree): the rows are cut into chunks of `n`, each chunk its own RLWE ciphertext per
//! input feature (all `a` from the one seed), each chunk's PCMM on its own ciphertexts, and the
//! chunks' outputs packed together into the same BFV ciphertexts (`used = n`: one output
//! ciphertext per chunk and output feature). Still one flight each way.
//!
//! **Twin.** [`LeafFormat::twin`] computes the same integers without noise (exact PCMM, the
//! rounded switch to `P`, the table); the protocol differs from it by the noise: the phase at
//! `P` carries σ ≈ 7.6 (the switch's rounding of `a·s̲` and the PCMM's), so an input within a
//! few σ/`α` of a grid edge may land in the neighbouring bin (±1/16 before `r`), and the
//! output carries the ring switch's ≈ 2^11 / 2^{out_frac}.

use crate::activation::{leaf_keygen, LeafActivation, LeafClientKeys, LeafEvalKeys, StageTimes};
use crate::fbs_poly::FbsParams;
use crate::rlwe::{decode_p, expand_a, pack_bits, pcmm, unpack_bits, RlweCt, RlweParams, RlwePublicKey, LEAF_P};
use crate::wire::{frame, unframe};
use crate::FheError;
use nectar_he::Params;
use nectar_math::Prg;
use nectar_net::Channel;
use rand_core::RngCore;
use std::sync::Arc;

/// The fixed-point format of the block's conversions (AGREEMENT): the RLWE set, the table's
/// parameters and the fractional bits in and out.
#[derive(Clone, Debug)]
pub struct LeafFormat {
    pub rp: RlweParams,
    pub fbs: FbsParams,
    /// Fractional bits of the input shares (the caller truncates to them).
    pub x_frac: u32,
    /// Fractional bits of the output shares.
    pub out_frac: u32,
}

impl LeafFormat {
    /// LEAF's set (`n = 1024`, `q' = 2^27`, `p = 512`, `P = 65537`, `s = 16`: `[−16, 16)`),
    /// inputs at 10 fractional bits (weights at 12), outputs at 21.
    pub fn leaf() -> Result<Self, FheError> {
        Self::new(RlweParams::leaf()?, FbsParams::LEAF, 10, 21)
    }

    /// The suite's set ([`FbsParams::WIDE`]: `p = 1024`, the `1/16` grid over `[−32, 32)`),
    /// inputs at 10 fractional bits (weights at 11), outputs at 20.
    pub fn wide() -> Result<Self, FheError> {
        Self::new(RlweParams::new(1024, 27, 10)?, FbsParams::WIDE, 10, 20)
    }

    /// Checks the table against the RLWE set, `s` a power of two, `x_frac ≤ pre_frac` and the
    /// output bound `16·2^out_frac ≤ 2^(log q' − 2)`.
    pub fn new(rp: RlweParams, fbs: FbsParams, x_frac: u32, out_frac: u32) -> Result<Self, FheError> {
        fbs.validate()?;
        if fbs.small_p != rp.p() as u64 || fbs.big_p != LEAF_P || fbs.alpha != rp.alpha() || !fbs.scale.is_power_of_two() {
            return Err(FheError::InvalidParams(format!("table {fbs:?} does not match the RLWE set (p = {})", rp.p())));
        }
        let f = Self { rp, fbs, x_frac, out_frac };
        let half_range = (f.fbs.small_p / 2) as f64 / f.fbs.scale as f64;
        if x_frac > f.pre_frac() || half_range * (out_frac as f64).exp2() > ((f.rp.log_q() - 2) as f64).exp2() {
            return Err(FheError::InvalidParams(format!("x_frac {x_frac} / out_frac {out_frac} outside the ring of q' = 2^{}", f.rp.log_q())));
        }
        Ok(f)
    }

    /// Fractional bits of the pre-activation phase: `log2(Δ'·s)`.
    pub fn pre_frac(&self) -> u32 {
        self.rp.log_q() - self.rp.p().ilog2() + self.fbs.scale.ilog2()
    }

    /// Fractional bits of the weights: `pre_frac − x_frac`.
    pub fn w_frac(&self) -> u32 {
        self.pre_frac() - self.x_frac
    }

    /// The table of the real function `r` (module docs): `f` over `Z_P` for the server and the
    /// output of every message `m ∈ Z_p` for the twin.
    pub fn table(&self, r: impl Fn(f64) -> f64) -> Result<LeafTable, FheError> {
        let (p, big_p, s) = (self.fbs.small_p as i64, self.fbs.big_p as i64, self.fbs.scale as f64);
        let q = (self.rp.log_q() as f64).exp2();
        let scale = (self.out_frac as f64).exp2() * big_p as f64 / q;
        let g: Vec<i64> = (0..p)
            .map(|m| {
                let ms = if 2 * m >= p { m - p } else { m };
                (r(ms as f64 / s) * scale).round() as i64
            })
            .collect();
        // |G| < P/2 (a signed value of Z_P), and the output with 2^16 of margin for the ring
        // switch's noise (σ ≈ 2^11) below 2^(log q' − 2), the caller's ring extension bound
        let out_max = (((self.rp.log_q() - 2) as f64).exp2() - 65536.0) / (self.out_frac as f64).exp2();
        if g.iter().any(|v| 2 * v.abs() >= big_p) || (0..p).any(|m| r((if 2 * m >= p { m - p } else { m }) as f64 / s).abs() > out_max) {
            return Err(FheError::InvalidParams("activation outside the table's range".into()));
        }
        let a = self.fbs.alpha;
        let f = (0..self.fbs.big_p).map(|x| g[(((x + a / 2) / a) % self.fbs.small_p) as usize].rem_euclid(big_p) as u64).collect();
        let mask = self.rp.mask();
        let out = g.iter().map(|&v| ((v as f64 * q / big_p as f64).round() as i64) as u32 & mask).collect();
        Ok(LeafTable { f, out })
    }

    /// The plaintext twin of [`LeafFfnClient::ffn1`] / [`LeafFfnServer::ffn1`]: `x` the
    /// shares' sum (`rows × in_dim`, mod `q'`), `w` (`in_dim × out_dim`, at `w_frac`), `bias`
    /// (mod `q'`, at `pre_frac`); the outputs (`rows × out_dim`, mod `q'`, at `out_frac`).
    pub fn twin(&self, table: &LeafTable, x: &[u32], w: &[i32], bias: &[u32], rows: usize, in_dim: usize, out_dim: usize) -> Result<Vec<u32>, FheError> {
        check_shapes(x.len(), Some((w.len(), bias.len())), rows, in_dim, out_dim)?;
        let (mask, lq) = (self.rp.mask(), self.rp.log_q());
        let half = 1u64 << (lq - 1);
        let mut y = vec![0u32; rows * out_dim];
        for r in 0..rows {
            for k in 0..out_dim {
                let mut acc = bias[k];
                for i in 0..in_dim {
                    acc = acc.wrapping_add(x[r * in_dim + i].wrapping_mul(w[i * out_dim + k] as u32));
                }
                let phase = (acc & mask) as u64;
                let to_p = ((phase * LEAF_P + half) >> lq) % LEAF_P;
                y[r * out_dim + k] = table.out[decode_p(&self.rp, to_p) as usize];
            }
        }
        Ok(y)
    }
}

/// An activation table (see [`LeafFormat::table`]).
#[derive(Clone, Debug)]
pub struct LeafTable {
    /// `f: Z_P → Z_P` evaluated by the functional-bootstrapping polynomial.
    pub f: Vec<u64>,
    /// The output (mod `q'`, at `out_frac`) of every message `m ∈ Z_p`.
    pub out: Vec<u32>,
}

/// Checks `x` (`rows × in_dim`) and, on the server, `(w, bias)` lengths
/// (`in_dim × out_dim`, `out_dim`).
fn check_shapes(x: usize, server: Option<(usize, usize)>, rows: usize, in_dim: usize, out_dim: usize) -> Result<(), FheError> {
    let (w, bias) = server.unwrap_or((in_dim * out_dim, out_dim));
    if x != rows * in_dim || w != in_dim * out_dim || bias != out_dim || rows == 0 || in_dim == 0 || out_dim == 0 {
        return Err(FheError::InvalidParams(format!(
            "LEAF FFN shapes: x {x} (want {rows}×{in_dim}), w {w} (want {in_dim}×{out_dim}), bias {bias}"
        )));
    }
    Ok(())
}

/// The whole parameter set: the BFV ring of the non-polynomial part and the format.
#[derive(Clone, Debug)]
pub struct LeafFfnParams {
    pub bfv: Params,
    pub fmt: LeafFormat,
}

impl LeafFfnParams {
    /// LEAF's sets: [`Params::leaf_bfv`] (`N = 32768`, log Q = 669) and [`LeafFormat::leaf`].
    pub fn leaf() -> Result<Self, FheError> {
        Self::new(Params::leaf_bfv().map_err(|e| FheError::He(e.to_string()))?, LeafFormat::leaf()?)
    }

    /// The suite's sets (`--suite leaf`): [`Params::leaf_bfv`] and [`LeafFormat::wide`].
    pub fn wide() -> Result<Self, FheError> {
        Self::new(Params::leaf_bfv().map_err(|e| FheError::He(e.to_string()))?, LeafFormat::wide()?)
    }

    /// The rows of these sets in `nectar params`: the BFV set, the RLWE ring of the block's
    /// conversions, and the conversions' hiding argument.
    pub fn security(&self) -> nectar_math::registry::Security {
        let rp = &self.fmt.rp;
        nectar_math::registry::Security {
            he: vec![
                self.bfv.security_row("leaf-bfv"),
                nectar_math::registry::HeRow {
                    role: "leaf-rlwe",
                    n: rp.n(),
                    log_qp: rp.log_q(),
                    max_log_qp_128: nectar_he::security::max_log_qp_128(rp.n()),
                    log_t: rp.p().ilog2(),
                    error_sigma: nectar_he::security::error_sigma(crate::rlwe::RLWE_ERROR_ETA),
                },
            ],
            statistical: vec![nectar_math::registry::StatRow {
                step: "LEAF block conversions (nectar_fhe::ffn)",
                session_bits: None,
                detail: "shares -> RLWE: the server sees only RLWE encryptions (seeded a); RLWE -> shares: the \
                         server re-randomises with the client's RLWE public key and adds r uniform over all of \
                         Z_q', so the client's decryption is uniform (distance 0, no flooding needed)"
                    .into(),
            }],
        }
    }

    /// Checks that the BFV plaintext modulus is `P` and that `n` divides `N`.
    pub fn new(bfv: Params, fmt: LeafFormat) -> Result<Self, FheError> {
        if bfv.plain_modulus(0) as u64 != LEAF_P || !bfv.n().is_multiple_of(fmt.rp.n()) {
            return Err(FheError::InvalidParams(format!("BFV set (N = {}, t = {}) does not fit LEAF's P = {LEAF_P}", bfv.n(), bfv.plain_modulus(0))));
        }
        Ok(Self { bfv, fmt })
    }

    /// The row chunks of `rows` tokens (`[start, end)`, at most `n` each) and the slots per
    /// RLWE ciphertext: the next power of two of `rows` for one chunk, `n` for several.
    fn chunks(&self, rows: usize) -> Result<(Vec<(usize, usize)>, usize), FheError> {
        let n = self.fmt.rp.n();
        if rows == 0 {
            return Err(FheError::InvalidParams("LEAF FFN: no tokens".into()));
        }
        let chunks = (0..rows.div_ceil(n)).map(|c| (c * n, ((c + 1) * n).min(rows))).collect::<Vec<_>>();
        let used = if chunks.len() == 1 { rows.next_power_of_two() } else { n };
        Ok((chunks, used))
    }
}

/// Where output `k`, token `r` of chunk `c` sits: ciphertext `c·⌈out_dim/(n/used)⌉ + k /
/// (n/used)`, coefficient `(k mod n/used)·used + r` ([`LeafActivation::evaluate`]).
fn position(n: usize, used: usize, out_dim: usize, c: usize, k: usize, r: usize) -> (usize, usize) {
    let q = n / used;
    (c * out_dim.div_ceil(q) + k / q, (k % q) * used + r)
}

/// The client's side: its secrets.
pub struct LeafFfnClient {
    params: LeafFfnParams,
    keys: LeafClientKeys,
}

impl LeafFfnClient {
    /// Generates the keys and sends the server its evaluation keys and the RLWE public key
    /// (one flight; ≈ 0.3 GB at LEAF's sets, once per session).
    pub fn setup(ch: &mut dyn Channel, params: LeafFfnParams, prg: &mut Prg) -> Result<Self, FheError> {
        let (keys, eval) = leaf_keygen(&params.bfv, &params.fmt.rp, prg)?;
        let pk = keys.rlwe.public_key(&params.fmt.rp, prg);
        ch.send(&frame(&[&eval.to_bytes(&params.bfv), &pk.to_bytes(&params.fmt.rp)]))?;
        ch.flush()?;
        Ok(Self { params, keys })
    }

    /// The client's half of `act(X·W1 + b1)` (module docs): `x` its share (`rows × in_dim`,
    /// values mod `q'`); returns its share of the output (`rows × out_dim`, mod `q'`).
    pub fn ffn1(&mut self, ch: &mut dyn Channel, prg: &mut Prg, x: &[u64], rows: usize, in_dim: usize, out_dim: usize) -> Result<Vec<u64>, FheError> {
        let rp = &self.params.fmt.rp;
        check_shapes(x.len(), None, rows, in_dim, out_dim)?;
        let (n, (chunks, used), mask) = (rp.n(), self.params.chunks(rows)?, rp.mask());
        let seed = prg.gen_block();
        let a = expand_a(rp, seed, in_dim * chunks.len(), n);
        let mut bs = Vec::with_capacity(in_dim * rows);
        for (c, &(lo, hi)) in chunks.iter().enumerate() {
            for (i, ai) in a[c * in_dim..(c + 1) * in_dim].iter().enumerate() {
                let v: Vec<u32> = (lo..hi).map(|r| x[r * in_dim + i] as u32 & mask).collect();
                bs.extend(self.keys.rlwe.encrypt_raw_with_a(rp, &v, ai, prg)?);
            }
        }
        ch.send(&frame(&[&seed, &pack_bits(&bs, rp.log_q())]))?;
        ch.flush()?;
        // the reply: per output ciphertext its n a-coefficients, then every used b
        let cts = chunks.len() * out_dim.div_ceil(n / used);
        let msg = ch.recv()?;
        let vals = unpack_bits(&msg, rp.log_q(), cts * n + rows * out_dim)
            .map_err(|want| FheError::Malformed(format!("LEAF FFN reply of {} bytes (want {want})", msg.len())))?;
        let (a_all, mut b_used) = vals.split_at(cts * n);
        let mut full: Vec<RlweCt> = a_all.chunks(n).map(|a| RlweCt { a: a.to_vec(), b: vec![0; n] }).collect();
        for (c, &(lo, hi)) in chunks.iter().enumerate() {
            for k in 0..out_dim {
                for r in 0..hi - lo {
                    let (j, at) = position(n, used, out_dim, c, k, r);
                    full[j].b[at] = b_used[r];
                }
                b_used = &b_used[hi - lo..];
            }
        }
        let phases: Vec<Vec<u32>> = full.iter().map(|ct| self.keys.rlwe.phase(rp, ct)).collect();
        let mut y = vec![0u64; rows * out_dim];
        for (c, &(lo, hi)) in chunks.iter().enumerate() {
            for k in 0..out_dim {
                for r in lo..hi {
                    let (j, at) = position(n, used, out_dim, c, k, r - lo);
                    y[r * out_dim + k] = phases[j][at] as u64;
                }
            }
        }
        Ok(y)
    }
}

/// The server's side: the evaluation keys, the client's public key, and the evaluator of the
/// last table and token count.
pub struct LeafFfnServer {
    params: LeafFfnParams,
    keys: Arc<LeafEvalKeys>,
    pk: RlwePublicKey,
    act: Option<(usize, Vec<u64>, LeafActivation)>,
    stages: StageTimes,
}

impl LeafFfnServer {
    /// Receives the client's keys ([`LeafFfnClient::setup`]).
    pub fn setup(ch: &mut dyn Channel, params: LeafFfnParams) -> Result<Self, FheError> {
        let msg = ch.recv()?;
        let parts = unframe(&msg, 2)?;
        let keys = Arc::new(LeafEvalKeys::from_bytes(&params.bfv, &params.fmt.rp, parts[0])?);
        let pk = RlwePublicKey::from_bytes(&params.fmt.rp, parts[1])?;
        Ok(Self { params, keys, pk, act: None, stages: StageTimes::default() })
    }

    /// Stage times and counts of every call so far (LEAF Table 2 rows).
    pub fn stages(&self) -> &StageTimes {
        &self.stages
    }

    /// The server's half (module docs): `x` its share (`rows × in_dim`, mod `q'`), `w`
    /// (`in_dim × out_dim` at `w_frac`), `bias` (mod `q'` at `pre_frac`), `table` from
    /// [`LeafFormat::table`]; returns its share of the output (`rows × out_dim`, mod `q'`).
    #[allow(clippy::too_many_arguments)]
    pub fn ffn1(
        &mut self,
        ch: &mut dyn Channel,
        prg: &mut Prg,
        x: &[u64],
        w: &[i32],
        bias: &[u32],
        table: &LeafTable,
        rows: usize,
        in_dim: usize,
        out_dim: usize,
    ) -> Result<Vec<u64>, FheError> {
        let rp = self.params.fmt.rp.clone();
        check_shapes(x.len(), Some((w.len(), bias.len())), rows, in_dim, out_dim)?;
        let (n, (chunks, used), mask) = (rp.n(), self.params.chunks(rows)?, rp.mask());
        if table.f.len() as u64 != LEAF_P {
            return Err(FheError::InvalidParams(format!("a table of {} entries (want P = {LEAF_P})", table.f.len())));
        }
        let msg = ch.recv()?;
        let parts = unframe(&msg, 2)?;
        let seed: [u8; 16] = parts[0].try_into().map_err(|_| FheError::Malformed("LEAF FFN: a seed of 16 bytes".into()))?;
        let bs = unpack_bits(parts[1], rp.log_q(), in_dim * rows)
            .map_err(|want| FheError::Malformed(format!("LEAF FFN input of {} bytes (want {want})", parts[1].len())))?;
        // PCMM with W1ᵀ (out_dim × in_dim), then the bias on every used coefficient
        let mut wt = vec![0i32; out_dim * in_dim];
        for i in 0..in_dim {
            for k in 0..out_dim {
                wt[k * in_dim + i] = w[i * out_dim + k];
            }
        }
        let mut a_all = expand_a(&rp, seed, in_dim * chunks.len(), n).into_iter();
        let mut bs_rest: &[u32] = &bs;
        let t0 = std::time::Instant::now();
        let mut pre = Vec::with_capacity(chunks.len() * out_dim);
        for &(lo, hi) in &chunks {
            // this chunk's input ciphertexts, the server's share added to the phase
            let cts: Vec<RlweCt> = (0..in_dim)
                .map(|i| {
                    let a = a_all.next().ok_or_else(|| FheError::InvalidParams("LEAF FFN: too few expanded a".into()))?;
                    let mut b = vec![0u32; n];
                    for r in lo..hi {
                        b[r - lo] = bs_rest[i * (hi - lo) + r - lo].wrapping_add(x[r * in_dim + i] as u32) & mask;
                    }
                    Ok(RlweCt { a, b })
                })
                .collect::<Result<_, FheError>>()?;
            bs_rest = &bs_rest[in_dim * (hi - lo)..];
            let mut part = pcmm(&rp, &wt, &cts)?;
            for (ct, &bk) in part.iter_mut().zip(bias) {
                for v in &mut ct.b[..used] {
                    *v = v.wrapping_add(bk) & mask;
                }
            }
            pre.extend(part);
        }
        let pcmm_seconds = t0.elapsed().as_secs_f64();
        let fresh = !matches!(&self.act, Some((u, f, _)) if *u == used && f == &table.f);
        if fresh {
            let act = LeafActivation::new(&self.params.bfv, &rp, self.keys.clone(), &self.params.fmt.fbs, &table.f, used)?;
            self.act = Some((used, table.f.clone(), act));
        }
        let act = &self.act.as_ref().expect("set above").2;
        let (mut out, st) = act.evaluate(&pre)?;
        self.add_stages(&st, pcmm_seconds);
        // re-randomise, mask, send; the server keeps −r
        let mut y = vec![0u64; rows * out_dim];
        let mut masked = vec![0u32; rows * out_dim];
        for ct in &mut out {
            self.pk.rerandomize(&rp, ct, prg);
        }
        let mut at = 0;
        for (c, &(lo, hi)) in chunks.iter().enumerate() {
            for k in 0..out_dim {
                for r in lo..hi {
                    let (j, coeff) = position(n, used, out_dim, c, k, r - lo);
                    let m = prg.next_u32() & mask;
                    masked[at] = out[j].b[coeff].wrapping_add(m) & mask;
                    y[r * out_dim + k] = (m.wrapping_neg() & mask) as u64;
                    at += 1;
                }
            }
        }
        let mut vals: Vec<u32> = out.iter().flat_map(|ct| ct.a.iter().copied()).collect();
        vals.extend_from_slice(&masked);
        ch.send(&pack_bits(&vals, rp.log_q()))?;
        ch.flush()?;
        Ok(y)
    }

    fn add_stages(&mut self, st: &StageTimes, pcmm_seconds: f64) {
        let s = &mut self.stages;
        s.pcmm += pcmm_seconds;
        s.mod_switch += st.mod_switch;
        s.lt += st.lt;
        s.poly += st.poly;
        s.s2c += st.s2c;
        s.switches += st.switches;
        s.bfv_cts += st.bfv_cts;
        s.poly_products += st.poly_products;
    }
}
