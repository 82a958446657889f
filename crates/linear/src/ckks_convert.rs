//! Secure CKKS ↔ MPC conversion (BLB §6.3, Alg. 1–2, App. A, C.3–C.4; REFERENCE.md §5.3–5.4).
//!
//! Roles: the client (P1 here, BLB's "P0") owns the CKKS secret key; the server (P0 here, BLB's
//! "P1") holds the ciphertexts. Shares in and out are this crate's usual `Z_{2^l}` fixed-point
//! shares (`l <= 64`, `f` fractional bits); inside, everything runs on `Z_{2^128}` shares.
//!
//! **CKKS → MPC** (Alg. 1): the server re-randomises the ciphertext with a fresh public-key
//! encryption of zero, adds a mask `r̂` drawn uniformly from `R_q` (not an encoded vector: that
//! is MP2ML's flaw, §6.2), and sends it; its share of the coefficients is `−r̂`. The client
//! decrypts to `Encode(x)·Δ + e + r̂`. Field → ring gives `Z_{2^128}` shares of the centred
//! coefficients ([`FieldToRing`]); each party then decodes locally ([`decode_local`]).
//! *Deviation*: Alg. 1 only adds `r̂`, which leaves `c1` — a function of the client's own
//! encryptions and the server's weights — in the client's hands; we re-randomise `c1` (standard
//! for ciphertexts returned to a key owner; BumbleBee's H2A does the same).
//!
//! **MPC → CKKS** (Alg. 2): each party extends its share to `Z_{2^128}` (one wide COT per
//! value), encodes locally ([`encode_local`]), the shares are re-randomised with a zero-sharing,
//! converted ring → field per RNS prime with 40 bits of slack (App. C.3), the client encrypts its
//! share and the server adds its own as a plaintext.
//!
//! **Complex packing** ([`SlotPacking::Complex`], ours, the default): BLB packs `N/2` real values
//! per ciphertext and leaves the imaginary half of every slot empty. We send two ciphertexts'
//! values in one: CKKS → MPC, the server packs `A + i·B` (`i·B` is the monomial `X^(N/2)`
//! times `B`: exact, no level, no key) and both parties decode real and imaginary parts
//! locally; MPC → CKKS, the parties encode `a + i·b` at half the scale and the server splits
//! the client's ciphertext `Z` with one conjugation, `A = Z + Z̄`, `B = i·(Z̄ − Z)` (both at
//! the full scale). Half the ciphertexts travel each way; the masks are unchanged (`r̂` is
//! still uniform in `R_q`, the zero-sharing still covers every coefficient), so the hiding
//! argument is the same. Costs: the coefficients are bounded by `|a + ib| ≤ √2·max`, one
//! more bit in [`coeff_bits`]; the server needs the client's conjugation key (one Galois key,
//! sent once per parameter set) and spends one key switch per pair on MPC → CKKS.

use nectar_math::registry::StatRow;
use crate::share_codec::ShareCodec;
use crate::LinearError;
use nectar_he::ckks::{CkksCiphertext, CkksEvaluator, CkksParams, CkksPlaintext, CkksPublicKey, CkksSecretKey};
use nectar_math::sample::uniform_below;
use nectar_math::modulus::Modulus;
use nectar_math::rns::RnsBasis;
use nectar_mpc::field_ring::{field_to_ring_local, mask128, ring_to_field_local, trunc_local, FieldModulus, STAT_SLACK_BITS};
use nectar_mpc::Mpc;
use nectar_net::{Channel, Role};

/// Fixed-point formats of the local encode / decode (AGREEMENT: both parties use the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvFormat {
    /// MPC ring width `l` of the shares in and out (`<= 64`).
    pub l: u32,
    /// Fractional bits `f` of the MPC shares.
    pub f: u32,
    /// Fractional bits `F` of the working scale inside the FFT (`F >= f`).
    pub work_f: u32,
    /// Twiddle precision `τ` of [`ShareCodec`].
    pub tau: u32,
    /// Bound on the magnitude of the converted values: `|x| < 2^value_bits` (AGREEMENT; it
    /// sizes the statistical slack).
    pub value_bits: u32,
    /// How values fill the slots of the ciphertexts that travel (module doc).
    pub packing: SlotPacking,
}

/// How the values of a conversion fill the ciphertexts on the wire (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotPacking {
    /// `N/2` real values per ciphertext (BLB as printed).
    Real,
    /// `N` values per ciphertext on the wire, the second `N/2` in the imaginary parts; the
    /// server's ciphertexts are the same as with [`SlotPacking::Real`] (module doc).
    Complex,
}

impl ConvFormat {
    /// BumbleBee's `(64, 18)` shares; `F = 30`: the decode's stochastic-rounding errors add like
    /// a random walk over `N log N` butterflies (about `2^8` units for `N = 2^15`), leaving
    /// `F − 8 − f = 4` guard bits; `τ = 28` twiddles (relative error `log N · 2^−28`);
    /// values `|x| < 2^12`.
    pub const DEFAULT: ConvFormat = ConvFormat { l: 64, f: 18, work_f: 30, tau: 28, value_bits: 12, packing: SlotPacking::Complex };

    /// Checks the widths: every intermediate of the local FFT stays below
    /// `2^(127 − 40)` ([`ShareCodec::MAX_VALUE_BITS`]) for ring degree `n`.
    pub fn check(&self, n: usize) -> Result<(), LinearError> {
        let log_n = n.trailing_zeros();
        let peak = self.value_bits + self.work_f + self.tau + log_n + 1;
        if self.l > 64 || self.f > self.work_f || self.f + 2 >= self.l || peak > ShareCodec::MAX_VALUE_BITS {
            return Err(LinearError::BadParams(format!(
                "conversion format {self:?}: FFT intermediates reach 2^{peak} (limit 2^{} for {STAT_SLACK_BITS}-bit slack)",
                ShareCodec::MAX_VALUE_BITS
            )));
        }
        Ok(())
    }
}

/// `x·to/from` on `Z_{2^128}` shares: with `to/from = ρ·2^k`, `ρ ∈ [1, 2)`, a truncation by
/// `−k` first when scaling down, a 32-bit fixed-point multiplier for `ρ` (relative error
/// `≤ 2^−32`; skipped when `ρ = 1`), a left shift by `k` last when scaling up. Stochastic
/// rounding throughout; intermediates stay within a factor 4 of the larger of the two scales.
pub fn change_scale(x: &mut [u128], from: f64, to: f64, role: Role) -> Result<(), LinearError> {
    if !(from > 0.0 && to > 0.0 && from.is_finite() && to.is_finite()) {
        return Err(LinearError::BadParams(format!("scale change {from} -> {to}")));
    }
    let ratio = to / from;
    let k = ratio.log2().floor();
    if k.abs() > 120.0 {
        return Err(LinearError::BadParams(format!("scale ratio {ratio} out of range")));
    }
    let k = k as i32;
    let rho = ratio / 2f64.powi(k);
    if k < 0 {
        trunc_local(x, 128, (-k) as u32, role)?;
    }
    if rho != 1.0 {
        let mult = (rho * 2f64.powi(32)).round() as u128;
        x.iter_mut().for_each(|v| *v = v.wrapping_mul(mult));
        trunc_local(x, 128, 32, role)?;
    }
    if k > 0 {
        x.iter_mut().for_each(|v| *v <<= k as u32);
    }
    Ok(())
}

/// Local half of Alg. 1 step 4: `Z_{2^128}` shares of the `N` centred coefficients (scale
/// `ct_scale`) → `Z_{2^l}` shares of the first `count` real slots in `(l, f)`.
pub fn decode_local(
    codec: &ShareCodec,
    fmt: &ConvFormat,
    coeffs: Vec<u128>,
    ct_scale: f64,
    count: usize,
    role: Role,
) -> Result<Vec<u64>, LinearError> {
    decode_local_parts(codec, fmt, coeffs, ct_scale, count, 0, role)
}

/// [`decode_local`] of complex slots: the first `re_count` real parts, then the first
/// `im_count` imaginary parts.
pub fn decode_local_parts(
    codec: &ShareCodec,
    fmt: &ConvFormat,
    mut coeffs: Vec<u128>,
    ct_scale: f64,
    re_count: usize,
    im_count: usize,
    role: Role,
) -> Result<Vec<u64>, LinearError> {
    fmt.check(codec.n())?;
    if re_count.max(im_count) > codec.n() / 2 {
        return Err(LinearError::BadShape(format!("{re_count} + {im_count} values from {} slots", codec.n() / 2)));
    }
    change_scale(&mut coeffs, ct_scale, (fmt.work_f as f64).exp2(), role)?;
    let (mut slots, im) = codec.decode_complex(&coeffs, role)?;
    slots.truncate(re_count);
    slots.extend_from_slice(&im[..im_count]);
    trunc_local(&mut slots, 128, fmt.work_f - fmt.f, role)?;
    let ml = mask128(fmt.l)?;
    Ok(slots.into_iter().map(|v| (v & ml) as u64).collect())
}

/// Local half of Alg. 2 step 1: `Z_{2^128}` shares of up to `N/2` real slot values in
/// fixed point with `f` bits → `Z_{2^128}` shares of the `N` coefficients of their encoding
/// at scale `scale` (zero-padded slots).
pub fn encode_local(
    codec: &ShareCodec,
    fmt: &ConvFormat,
    values: &[u128],
    scale: f64,
    role: Role,
) -> Result<Vec<u128>, LinearError> {
    encode_local_parts(codec, fmt, values, None, scale, role)
}

/// [`encode_local`] of complex slots: `re` in the real parts, `im` (if any) in the imaginary
/// parts (each up to `N/2` values, zero-padded).
pub fn encode_local_parts(
    codec: &ShareCodec,
    fmt: &ConvFormat,
    re: &[u128],
    im: Option<&[u128]>,
    scale: f64,
    role: Role,
) -> Result<Vec<u128>, LinearError> {
    fmt.check(codec.n())?;
    let half = codec.n() / 2;
    if re.len() > half || im.is_some_and(|v| v.len() > half) {
        return Err(LinearError::BadShape(format!("{} + {} values into {half} slots", re.len(), im.map_or(0, |v| v.len()))));
    }
    let widen = |v: &[u128]| -> Result<Vec<u128>, LinearError> {
        let mut w = v.to_vec();
        w.resize(half, 0);
        change_scale(&mut w, (fmt.f as f64).exp2(), (fmt.work_f as f64).exp2(), role)?;
        Ok(w)
    };
    let slots = widen(re)?;
    let im_slots = im.map(widen).transpose()?;
    let mut coeffs = codec.encode_complex(&slots, im_slots.as_deref(), role)?;
    change_scale(&mut coeffs, (fmt.work_f as f64).exp2(), scale, role)?;
    Ok(coeffs)
}

/// How the centred coefficients leave `Z_q` in CKKS → MPC (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldToRing {
    /// BLB App. C.3: SiRNN wrap (millionaire on `⌈log2 q_0⌉` bits + wide B2A) at one prime.
    Exact,
    /// [`nectar_mpc::field_ring`]'s local conversion: keep the fewest primes whose product has
    /// 41 bits of slack over the coefficients; no interaction besides the ciphertext.
    Local,
}

/// Bits `B` with `|Δ·x| < 2^B` for every coefficient of an encoding of `|x| < 2^value_bits`
/// (a coefficient is a weighted average of the slots, `|c_k| <= Δ·max|z|`; one bit for noise;
/// one more with [`SlotPacking::Complex`], where `|z| = |a + ib| <= √2·2^value_bits`).
pub fn coeff_bits(scale: f64, fmt: &ConvFormat) -> u32 {
    scale.log2().ceil() as u32 + fmt.value_bits + 1 + (fmt.packing == SlotPacking::Complex) as u32
}

/// Values per ciphertext on the wire: `N/2`, or `N` with [`SlotPacking::Complex`].
fn wire_values(params: &CkksParams, fmt: &ConvFormat) -> usize {
    match fmt.packing {
        SlotPacking::Real => params.slots(),
        SlotPacking::Complex => 2 * params.slots(),
    }
}

/// Ciphertexts that travel for `cts` server ciphertexts (pairs with [`SlotPacking::Complex`]).
pub fn wire_ciphertexts(fmt: &ConvFormat, cts: usize) -> usize {
    match fmt.packing {
        SlotPacking::Real => cts,
        SlotPacking::Complex => cts.div_ceil(2),
    }
}

/// `A + i·B` at `level` (CKKS → MPC with [`SlotPacking::Complex`]); `A` alone for an odd last
/// ciphertext.
fn pack_pair(ev: &CkksEvaluator, pair: &[CkksCiphertext], level: usize) -> Result<CkksCiphertext, LinearError> {
    let mut z = ev.mod_drop_to(&pair[0], level)?;
    if let Some(b) = pair.get(1) {
        ev.add_assign(&mut z, &ev.mul_i(&ev.mod_drop_to(b, level)?))?;
    }
    Ok(z)
}

/// The two ciphertexts `(Z + Z̄, i·(Z̄ − Z))` of the real and imaginary parts of `z` at twice
/// its scale (MPC → CKKS with [`SlotPacking::Complex`]); one conjugation (the client's key).
fn split_pair(ev: &CkksEvaluator, z: &CkksCiphertext) -> Result<[CkksCiphertext; 2], LinearError> {
    let conj = ev.conjugate(z)?;
    let mut re = ev.add(z, &conj)?;
    let mut im = ev.mul_i(&ev.sub(&conj, z)?);
    re.set_scale(2.0 * z.scale())?;
    im.set_scale(2.0 * z.scale())?;
    Ok([re, im])
}

/// The level (number of primes) at which a ciphertext of scale `scale` is converted: the
/// fewest primes with 41 bits of slack over the coefficients ([`FieldToRing::Local`]), or the
/// base prime alone ([`FieldToRing::Exact`]).
pub fn conversion_level(params: &CkksParams, scale: f64, fmt: &ConvFormat, how: FieldToRing) -> Result<usize, LinearError> {
    let need = coeff_bits(scale, fmt) + 1 + if how == FieldToRing::Local { STAT_SLACK_BITS + 1 } else { 0 };
    let mut bits = 0u32;
    let max = if how == FieldToRing::Local { params.max_level() } else { 1 };
    for lvl in 1..=max {
        bits += params.prime(lvl - 1).map_or(0, |q| 64 - q.leading_zeros());
        if bits > need {
            return Ok(lvl);
        }
    }
    Err(LinearError::BadParams(format!(
        "no conversion level: coefficients of 2^{} need a {need}-bit modulus ({how:?})",
        coeff_bits(scale, fmt)
    )))
}

/// The RNS basis of the first `level` primes.
fn level_basis(params: &CkksParams, level: usize) -> Result<RnsBasis, LinearError> {
    let mods = (0..level)
        .map(|i| params.prime(i).and_then(Modulus::new).ok_or_else(|| LinearError::BadParams(format!("no prime {i}"))))
        .collect::<Result<Vec<_>, _>>()?;
    RnsBasis::new(&mods).ok_or_else(|| LinearError::BadParams("conversion basis".into()))
}

/// `q` of the level as a [`FieldModulus`] (bit length, value mod `2^128`).
fn level_modulus(basis: &RnsBasis) -> FieldModulus {
    FieldModulus { bits: basis.product().bits(), low: basis.product().low_u128() }
}

/// Low 128 bits of the CRT composition (in `[0, q)`) of per-prime residues; with `negate`,
/// of `q − x mod q` (the server's share `−r̂`).
fn compose_low(basis: &RnsBasis, residues: &[Vec<u64>], negate: bool) -> Vec<u128> {
    let n = residues.first().map_or(0, |r| r.len());
    let q = basis.product();
    let mut r = vec![0u64; residues.len()];
    (0..n)
        .map(|k| {
            for (i, ri) in r.iter_mut().enumerate() {
                *ri = residues[i][k];
            }
            let x = basis.compose(&r);
            if negate && !x.is_zero() {
                q.checked_sub(&x).map_or(0, |d| d.low_u128())
            } else {
                x.low_u128()
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn field_to_ring(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    params: &CkksParams,
    shares: &[u128],
    q: FieldModulus,
    scale: f64,
    fmt: &ConvFormat,
    how: FieldToRing,
) -> Result<Vec<u128>, LinearError> {
    Ok(match how {
        FieldToRing::Exact => {
            let a: Vec<u64> = shares.iter().map(|&v| v as u64).collect();
            let q0 = params.prime(0).ok_or_else(|| LinearError::BadParams("no prime".into()))?;
            mpc.field_to_ring_exact(ch, &a, q0, 128)?
        }
        FieldToRing::Local => field_to_ring_local(mpc.role(), shares, q, coeff_bits(scale, fmt), 128)?,
    })
}

/// Alg. 1 step 1: drop `ct` to `level`, re-randomise it with a fresh encryption of zero under
/// the client's key, add `r̂` uniform in `R_q`. Returns the masked ciphertext and `r̂` (per
/// prime; the server's share is `−r̂`).
pub fn mask_ciphertext(
    ev: &CkksEvaluator,
    peer_pk: &CkksPublicKey,
    ct: &CkksCiphertext,
    level: usize,
    prg: &mut nectar_math::Prg,
) -> Result<(CkksCiphertext, Vec<Vec<u64>>), LinearError> {
    let params = ev.params();
    let n = params.n();
    let mut out = ev.mod_drop_to(ct, level)?;
    let zero = CkksPlaintext::from_coeff_residues(params, &vec![vec![0u64; n]; level], ct.scale())?;
    out = ev.add(&out, &peer_pk.encrypt(params, &zero, prg)?)?;
    // Per prime uniform residues = uniform mod q by the CRT.
    let mut r = Vec::with_capacity(level);
    for i in 0..level {
        let qi = params.prime(i).ok_or_else(|| LinearError::BadParams(format!("no prime {i}")))?;
        r.push((0..n).map(|_| uniform_below(prg, qi)).collect::<Vec<u64>>());
    }
    out = ev.add_plain(&out, &CkksPlaintext::from_coeff_residues(params, &r, ct.scale())?)?;
    Ok((out, r))
}

/// Concatenates serialized ciphertexts (all of one level, so of one length).
fn send_cts(ch: &mut dyn Channel, params: &CkksParams, cts: &[CkksCiphertext]) -> Result<(), LinearError> {
    let mut buf = Vec::new();
    for ct in cts {
        buf.extend_from_slice(&ct.serialize(params)?);
    }
    ch.send(&buf)?;
    Ok(())
}

/// Splits one message into `count` ciphertexts of `len` bytes each.
fn recv_cts(ch: &mut dyn Channel, params: &CkksParams, count: usize, len: usize) -> Result<Vec<CkksCiphertext>, LinearError> {
    let buf = ch.recv()?;
    if buf.len() != count * len {
        return Err(LinearError::Malformed(format!("{} bytes for {count} ciphertexts of {len}", buf.len())));
    }
    buf.chunks(len).map(|c| CkksCiphertext::deserialize(params, c).map_err(LinearError::from)).collect()
}

/// Number of ciphertexts holding `count` values at `N/2` per ciphertext.
pub fn ciphertexts_for(params: &CkksParams, count: usize) -> usize {
    count.div_ceil(params.slots()).max(1)
}

/// CKKS → MPC, server side (BLB Alg. 1, module doc), for a whole tensor: the `count` values
/// fill the slots of `cts` in order (`N/2` per ciphertext); all are relinearised, of one scale,
/// and encrypted under the client's key `peer_pk`. One message of masked ciphertexts at
/// [`conversion_level`], then one batched field → ring.
#[allow(clippy::too_many_arguments)]
pub fn ckks_to_shares_server(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    ev: &CkksEvaluator,
    peer_pk: &CkksPublicKey,
    cts: &[CkksCiphertext],
    count: usize,
    fmt: &ConvFormat,
    how: FieldToRing,
) -> Result<Vec<u64>, LinearError> {
    let params = ev.params();
    if cts.len() != ciphertexts_for(params, count) {
        return Err(LinearError::BadShape(format!("{count} values in {} ciphertexts", cts.len())));
    }
    let scale = cts[0].scale();
    if cts.iter().any(|c| (c.scale() / scale - 1.0).abs() > 1e-9) {
        return Err(LinearError::BadParams("ciphertexts of different scales in one conversion".into()));
    }
    let level = conversion_level(params, scale, fmt, how)?;
    let basis = level_basis(params, level)?;
    let q = level_modulus(&basis);
    if let Some(ct) = cts.iter().find(|c| c.level() < level) {
        return Err(LinearError::BadParams(format!("ciphertext at level {} below the conversion level {level}", ct.level())));
    }
    let group = match fmt.packing {
        SlotPacking::Real => 1,
        SlotPacking::Complex => 2,
    };
    let mut masked = Vec::with_capacity(wire_ciphertexts(fmt, cts.len()));
    let mut mine = Vec::with_capacity(masked.capacity() * params.n());
    for pair in cts.chunks(group) {
        let (m, r) = mask_ciphertext(ev, peer_pk, &pack_pair(ev, pair, level)?, level, mpc.prg())?;
        masked.push(m);
        mine.extend(compose_low(&basis, &r, true));
    }
    send_cts(ch, params, &masked)?;
    let wide = field_to_ring(ch, mpc, params, &mine, q, scale, fmt, how)?;
    decode_all(params, fmt, wide, scale, count, Role::Server)
}

/// Decodes the per-ciphertext coefficient shares (one wire ciphertext each) and keeps the first
/// `count` values overall (real parts, then imaginary parts with [`SlotPacking::Complex`]).
fn decode_all(params: &CkksParams, fmt: &ConvFormat, wide: Vec<u128>, scale: f64, count: usize, role: Role) -> Result<Vec<u64>, LinearError> {
    let codec = ShareCodec::new(params.n(), fmt.tau)?;
    let (slots, per) = (params.slots(), wire_values(params, fmt));
    let mut out = Vec::with_capacity(count);
    for (i, coeffs) in wide.chunks(params.n()).enumerate() {
        let take = per.min(count - i * per);
        let re = take.min(slots);
        out.extend(decode_local_parts(&codec, fmt, coeffs.to_vec(), scale, re, take - re, role)?);
    }
    Ok(out)
}

/// CKKS → MPC, client side: receives the masked ciphertexts, decrypts its shares, converts.
/// `scale` is the (public) scale of the server's ciphertexts.
#[allow(clippy::too_many_arguments)]
pub fn ckks_to_shares_client(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    params: &CkksParams,
    sk: &CkksSecretKey,
    count: usize,
    scale: f64,
    fmt: &ConvFormat,
    how: FieldToRing,
) -> Result<Vec<u64>, LinearError> {
    let level = conversion_level(params, scale, fmt, how)?;
    let basis = level_basis(params, level)?;
    let q = level_modulus(&basis);
    let k = wire_ciphertexts(fmt, ciphertexts_for(params, count));
    let cts = recv_cts(ch, params, k, params.ciphertext_bytes(level, false)?)?;
    let mut mine = Vec::with_capacity(k * params.n());
    for ct in &cts {
        if ct.level() != level || ct.size() != 2 || (ct.scale() / scale - 1.0).abs() > 1e-9 {
            return Err(LinearError::Malformed(format!("masked ciphertext at level {} scale {}", ct.level(), ct.scale())));
        }
        mine.extend(compose_low(&basis, &sk.decrypt(params, ct)?.coeff_residues(params), false));
    }
    let wide = field_to_ring(ch, mpc, params, &mine, q, scale, fmt, how)?;
    decode_all(params, fmt, wide, scale, count, Role::Client)
}

/// Where the values of an MPC → CKKS conversion go: value `i` to slot `at[i]` of the
/// concatenated slot vectors of `total` slots (`N/2` per ciphertext); every other slot is a
/// public zero (both shares 0), so it costs no extension. [`Slots::dense`]: in order.
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a> {
    /// Destination slot of each value (distinct, `< total`).
    pub at: Option<&'a [usize]>,
    /// Total slots (a multiple of `N/2` rounds up to whole ciphertexts).
    pub total: usize,
}

impl<'a> Slots<'a> {
    /// `count` values in slot order.
    pub fn dense(count: usize) -> Self {
        Slots { at: None, total: count }
    }
    /// Value `i` to slot `at[i]` of `total`.
    pub fn scattered(at: &'a [usize], total: usize) -> Self {
        Slots { at: Some(at), total }
    }
    fn spread(&self, wide: Vec<u128>) -> Result<Vec<u128>, LinearError> {
        let Some(at) = self.at else {
            return Ok(wide);
        };
        if at.len() != wide.len() {
            return Err(LinearError::BadShape(format!("{} values for {} slot positions", wide.len(), at.len())));
        }
        let mut out = vec![0u128; self.total];
        for (&p, v) in at.iter().zip(wide) {
            *out.get_mut(p).ok_or_else(|| LinearError::BadShape(format!("slot {p} of {}", self.total)))? = v;
        }
        Ok(out)
    }
}

/// A plaintext share of one wire ciphertext of MPC → CKKS: `pair` when it holds two server
/// ciphertexts' values (real and imaginary parts, at half the scale).
struct WireShare {
    pt: CkksPlaintext,
    pair: bool,
}

/// Shared steps of MPC → CKKS for a whole tensor: extend (one batch), place, encode per
/// wire ciphertext, re-randomise (one seed), ring → field per prime.
#[allow(clippy::too_many_arguments)]
fn shares_to_plaintexts(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    params: &CkksParams,
    x: &[u64],
    slots: Slots<'_>,
    level: usize,
    scale: f64,
    fmt: &ConvFormat,
) -> Result<Vec<WireShare>, LinearError> {
    let codec = ShareCodec::new(params.n(), fmt.tau)?;
    let role = mpc.role();
    let wide = slots.spread(mpc.extend_wide(ch, x, fmt.l, 128)?)?;
    let half = params.slots();
    let mut coeffs = Vec::with_capacity(ciphertexts_for(params, wide.len()) * params.n());
    // Per wire ciphertext: its scale (half for a pair: the split doubles it) and whether a pair.
    let mut wire: Vec<(f64, bool)> = Vec::new();
    if wide.is_empty() {
        coeffs.extend(encode_local(&codec, fmt, &[], scale, role)?);
        wire.push((scale, false));
    }
    for chunk in wide.chunks(wire_values(params, fmt)) {
        if chunk.len() > half {
            coeffs.extend(encode_local_parts(&codec, fmt, &chunk[..half], Some(&chunk[half..]), scale / 2.0, role)?);
            wire.push((scale / 2.0, true));
        } else {
            coeffs.extend(encode_local(&codec, fmt, chunk, scale, role)?);
            wire.push((scale, false));
        }
    }
    mpc.rerandomize_wide(ch, &mut coeffs, 128)?;
    let bound = coeff_bits(scale, fmt);
    let mut per_prime = Vec::with_capacity(level);
    for i in 0..level {
        let qi = params.prime(i).ok_or_else(|| LinearError::BadParams(format!("no prime {i}")))?;
        per_prime.push(ring_to_field_local(role, &coeffs, 128, bound, qi as u128)?);
    }
    let n = params.n();
    wire.iter()
        .enumerate()
        .map(|(c, &(s, pair))| {
            let res: Vec<Vec<u64>> = per_prime.iter().map(|r| r[c * n..(c + 1) * n].iter().map(|&v| v as u64).collect()).collect();
            Ok(WireShare { pt: CkksPlaintext::from_coeff_residues(params, &res, s)?, pair })
        })
        .collect()
}

/// MPC → CKKS, server side (BLB Alg. 2): `Z_{2^l}` shares of a tensor (`|x| < 2^value_bits`)
/// → [`ciphertexts_for`] ciphertexts (slots filled in order) at `level` with `scale` under the
/// client's key.
pub fn shares_to_ckks_server(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    ev: &CkksEvaluator,
    x: &[u64],
    level: usize,
    scale: f64,
    fmt: &ConvFormat,
) -> Result<Vec<CkksCiphertext>, LinearError> {
    shares_to_ckks_server_at(ch, mpc, ev, x, Slots::dense(x.len()), level, scale, fmt)
}

/// [`shares_to_ckks_server`] with the values placed at `slots` (e.g. a packing's layout).
#[allow(clippy::too_many_arguments)]
pub fn shares_to_ckks_server_at(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    ev: &CkksEvaluator,
    x: &[u64],
    slots: Slots<'_>,
    level: usize,
    scale: f64,
    fmt: &ConvFormat,
) -> Result<Vec<CkksCiphertext>, LinearError> {
    let params = ev.params();
    let mine = shares_to_plaintexts(ch, mpc, params, x, slots, level, scale, fmt)?;
    let cts = recv_cts(ch, params, mine.len(), params.ciphertext_bytes(level, true)?)?;
    let mut out = Vec::with_capacity(mine.len() * 2);
    for (ct, share) in cts.iter().zip(&mine) {
        if ct.level() != level || ct.size() != 2 || (ct.scale() / share.pt.scale() - 1.0).abs() > 1e-9 {
            return Err(LinearError::Malformed(format!("client ciphertext at level {} scale {}", ct.level(), ct.scale())));
        }
        let z = ev.add_plain(ct, &share.pt)?;
        if share.pair {
            out.extend(split_pair(ev, &z)?);
        } else {
            out.push(z);
        }
    }
    Ok(out)
}

/// MPC → CKKS, client side: encrypts its shares of the encodings (symmetric key; top-level
/// ciphertexts travel as `(b, seed)`) and sends them in one message.
#[allow(clippy::too_many_arguments)]
pub fn shares_to_ckks_client(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    params: &CkksParams,
    sk: &CkksSecretKey,
    x: &[u64],
    level: usize,
    scale: f64,
    fmt: &ConvFormat,
) -> Result<(), LinearError> {
    shares_to_ckks_client_at(ch, mpc, params, sk, x, Slots::dense(x.len()), level, scale, fmt)
}

/// [`shares_to_ckks_client`] with the values placed at `slots` (the server's same layout).
#[allow(clippy::too_many_arguments)]
pub fn shares_to_ckks_client_at(
    ch: &mut dyn Channel,
    mpc: &mut Mpc,
    params: &CkksParams,
    sk: &CkksSecretKey,
    x: &[u64],
    slots: Slots<'_>,
    level: usize,
    scale: f64,
    fmt: &ConvFormat,
) -> Result<(), LinearError> {
    let mine = shares_to_plaintexts(ch, mpc, params, x, slots, level, scale, fmt)?;
    let cts = mine.iter().map(|w| sk.encrypt(params, &w.pt, mpc.prg())).collect::<Result<Vec<_>, _>>()?;
    send_cts(ch, params, &cts)
}


/// The conversions' row in `nectar params` (every protocol that converts states it).
pub fn security_row() -> StatRow {
    StatRow {
        step: "CKKS <-> MPC conversions (BLB Alg. 1-2)",
        session_bits: None,
        detail: "CKKS -> MPC: the server re-randomises and adds r uniform over all of R_q, so the \
                 client's decryption is uniform (distance 0); MPC -> CKKS: the server sees only \
                 encryptions. The 41-bit slack of the local field <-> ring steps bounds a \
                 correctness event (2^-40 per coefficient), not a leak. The CKKS noise of the \
                 server's product stays inside the shares (no flooding, as in BLB)"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::Prg;

    fn split(v: &[i128], prg: &mut Prg) -> (Vec<u128>, Vec<u128>) {
        let a: Vec<u128> = v.iter().map(|_| prg.next_u128()).collect();
        let b = v.iter().zip(&a).map(|(&x, &r)| (x as u128).wrapping_sub(r)).collect();
        (a, b)
    }

    #[test]
    fn scale_changes_are_accurate() {
        let mut prg = Prg::new([7; 16]);
        let vals: Vec<i128> = (0..500).map(|i| ((i as i128) - 250) << 40).collect();
        for (from, to) in [(2f64.powi(40), 2f64.powi(30)), (2f64.powi(40), 2f64.powi(45)), (1.1e12, 2f64.powi(30)), (2f64.powi(30), 3.3e13)] {
            let (mut a, mut b) = split(&vals, &mut prg);
            change_scale(&mut a, from, to, Role::Server).unwrap();
            change_scale(&mut b, from, to, Role::Client).unwrap();
            for i in 0..vals.len() {
                let got = a[i].wrapping_add(b[i]) as i128 as f64;
                let want = vals[i] as f64 * to / from;
                assert!((got - want).abs() <= 2.0 * (to / from).max(1.0) + want.abs() * 2f64.powi(-31), "{from}->{to} i={i} got={got} want={want}");
            }
        }
    }

    #[test]
    fn encode_then_decode_locally_returns_the_values() {
        let n = 4096;
        let codec = ShareCodec::new(n, ConvFormat::DEFAULT.tau).unwrap();
        let fmt = ConvFormat::DEFAULT;
        let mut prg = Prg::new([8; 16]);
        let xs: Vec<f64> = (0..n / 2).map(|i| ((i * 37 % 1001) as f64 - 500.0) / 61.0).collect();
        let fx: Vec<i128> = xs.iter().map(|&x| (x * (fmt.f as f64).exp2()).round() as i128).collect();
        let (a, b) = split(&fx, &mut prg);
        let scale = 2f64.powi(40);
        let ca = encode_local(&codec, &fmt, &a, scale, Role::Server).unwrap();
        let cb = encode_local(&codec, &fmt, &b, scale, Role::Client).unwrap();
        let da = decode_local(&codec, &fmt, ca, scale, n / 2, Role::Server).unwrap();
        let db = decode_local(&codec, &fmt, cb, scale, n / 2, Role::Client).unwrap();
        let ulp = (-(fmt.f as f64)).exp2();
        let mut max = 0f64;
        for i in 0..n / 2 {
            let got = da[i].wrapping_add(db[i]) as i64 as f64 * ulp;
            max = max.max((got - xs[i]).abs());
        }
        // A few units of 2^-18 (the fixed-point input's own rounding plus the two FFTs).
        assert!(max < 8.0 * ulp, "max error {max}");
    }

    use nectar_he::ckks::CkksParamsLiteral;
    use nectar_net::mem::run_pair;
    use nectar_ot::Producer;

    /// N = 8192, data primes {60, 40, 40}, special 60 (200 of 218 bits), Δ = 2^40.
    fn test_params() -> CkksParams {
        CkksParams::new(CkksParamsLiteral::from_bit_sizes(8192, &[60, 40, 40], Some(60), 40).unwrap()).unwrap()
    }

    fn fixed(xs: &[f64], fmt: &ConvFormat, prg: &mut Prg) -> (Vec<u64>, Vec<u64>) {
        let v: Vec<i128> = xs.iter().map(|&x| (x * (fmt.f as f64).exp2()).round() as i128).collect();
        let (a, b) = split(&v, prg);
        (a.into_iter().map(|x| x as u64).collect(), b.into_iter().map(|x| x as u64).collect())
    }

    /// Pearson's χ² of the top 6 bits of values uniform in `[0, q)` (64 cells, 63 d.o.f.;
    /// the 99.9 % quantile is 103.4).
    fn chi_square(vals: impl Iterator<Item = u64>, q: u64) -> f64 {
        let mut cells = [0f64; 64];
        let mut n = 0f64;
        for v in vals {
            cells[((v as u128 * 64) / q as u128) as usize] += 1.0;
            n += 1.0;
        }
        let e = n / 64.0;
        cells.iter().map(|&o| (o - e) * (o - e) / e).sum()
    }

    /// Bytes of one conversion run: MPC → CKKS, CKKS → MPC local, CKKS → MPC exact.
    type RoundTrip = (Vec<u64>, Vec<u64>, [u64; 3]);

    /// Converts `xs` into CKKS (level 3), halves it under CKKS, and converts it back with both
    /// field → ring kinds; returns both kinds' reconstructions and the server's bytes.
    fn round_trip(fmt: ConvFormat, xs: &[f64]) -> (RoundTrip, RoundTrip) {
        let params = test_params();
        let count = xs.len();
        let mut prg = Prg::new([9; 16]);
        let (xa, xb) = fixed(xs, &fmt, &mut prg);
        let sk = CkksSecretKey::generate(&params, &mut Prg::new([10; 16]));
        let pk = sk.public_key(&params, &mut Prg::new([11; 16]));
        // The conjugation key the complex packing's split uses (sent once per parameter set).
        let gk = sk.galois_keys(&params, &[], true, &mut Prg::new([12; 16])).unwrap();
        let (p1, p2) = (params.clone(), params.clone());
        let scale = params.default_scale();
        let bytes = |a: &nectar_net::Stats, b: &nectar_net::Stats| (b.bytes_sent - a.bytes_sent) + (b.bytes_recv - a.bytes_recv);
        let (srv, cli) = run_pair(
            move |ch| {
                let mut m = Mpc::setup(Role::Server, ch, Prg::new([1; 16]), Producer::Iknp).unwrap();
                let ev = CkksEvaluator::new(&p1).with_galois_keys(gk);
                let s0 = ch.stats();
                let ct = shares_to_ckks_server(ch, &mut m, &ev, &xa, 3, scale, &fmt).unwrap();
                assert_eq!(ct.len(), ciphertexts_for(&p1, count));
                let s1 = ch.stats();
                // A linear step under CKKS between the conversions: 0.5·x, rescaled to level 2.
                let half: Vec<_> = ct.iter().map(|c| ev.rescale(&ev.mul_const(c, 0.5).unwrap()).unwrap()).collect();
                let local = ckks_to_shares_server(ch, &mut m, &ev, &pk, &half, count, &fmt, FieldToRing::Local).unwrap();
                let s2 = ch.stats();
                let exact = ckks_to_shares_server(ch, &mut m, &ev, &pk, &half, count, &fmt, FieldToRing::Exact).unwrap();
                let s3 = ch.stats();
                (local, exact, [bytes(&s0, &s1), bytes(&s1, &s2), bytes(&s2, &s3)])
            },
            move |ch| {
                let mut m = Mpc::setup(Role::Client, ch, Prg::new([2; 16]), Producer::Iknp).unwrap();
                shares_to_ckks_client(ch, &mut m, &p2, &sk, &xb, 3, scale, &fmt).unwrap();
                // mul_const encodes at the last prime, so the rescale restores Δ exactly.
                let half_scale = p2.default_scale();
                let local = ckks_to_shares_client(ch, &mut m, &p2, &sk, count, half_scale, &fmt, FieldToRing::Local).unwrap();
                let exact = ckks_to_shares_client(ch, &mut m, &p2, &sk, count, half_scale, &fmt, FieldToRing::Exact).unwrap();
                (local, exact)
            },
        );
        ((srv.0, cli.0, srv.2), (srv.1, cli.1, srv.2))
    }

    #[test]
    fn mpc_to_ckks_to_mpc_round_trips_both_field_to_ring_kinds() {
        let params = test_params();
        // Three ciphertexts' worth, the last partly filled: with complex packing one pair and
        // one ciphertext alone travel each way.
        let count = 2 * params.slots() + 1000;
        let xs: Vec<f64> = (0..count).map(|i| ((i * 7919 % 2001) as f64 - 1000.0) / 20.0).collect();
        let mut sizes = Vec::new();
        for packing in [SlotPacking::Real, SlotPacking::Complex] {
            let fmt = ConvFormat { packing, ..ConvFormat::DEFAULT };
            let (local, exact) = round_trip(fmt, &xs);
            let ulp = (-(fmt.f as f64)).exp2();
            for (kind, (a, b, _)) in [("local", &local), ("exact", &exact)] {
                let mut max = 0f64;
                assert_eq!(a.len(), count);
                for i in 0..count {
                    let got = a[i].wrapping_add(b[i]) as i64 as f64 * ulp;
                    max = max.max((got - 0.5 * xs[i]).abs());
                }
                eprintln!("CKKS<->MPC round trip ({packing:?}, {kind}): max abs error {max:.3e} over {count} values");
                // CKKS noise of a public-key encryption (~2^-22 relative at Δ = 2^40) and of the
                // split's key switch, plus a few fixed-point units of 2^-18.
                assert!(max < 1e-4, "{packing:?} {kind}: max error {max}");
            }
            let b = local.2;
            eprintln!("{packing:?}: MPC->CKKS {} B, CKKS->MPC local {} B, exact {} B", b[0], b[1], b[2]);
            // The local kind sends a 2-prime ciphertext and nothing else; the exact one a
            // 1-prime ciphertext plus the millionaires and B2As, which cost more.
            assert!(b[1] < b[2], "local {} vs exact {}", b[1], b[2]);
            sizes.push(b);
        }
        // Complex packing: 2 ciphertexts travel instead of 3 each way.
        let ct_bytes = |lvl, seeded| params.ciphertext_bytes(lvl, seeded).unwrap() as u64;
        assert_eq!(sizes[0][0] - sizes[1][0], ct_bytes(3, true), "MPC -> CKKS saves one seeded level-3 ciphertext");
        assert_eq!(sizes[0][1] - sizes[1][1], ct_bytes(2, false), "CKKS -> MPC saves one level-2 ciphertext");
    }

    #[test]
    fn the_conversion_mask_is_uniform_and_mp2ml_mask_is_not() {
        let params = test_params();
        let mut prg = Prg::new([12; 16]);
        let sk = CkksSecretKey::generate(&params, &mut prg);
        let pk = sk.public_key(&params, &mut prg);
        let ev = CkksEvaluator::new(&params);
        let q0 = params.prime(0).unwrap();
        // A message whose encoding is far from zero (BLB §6.2: large |Δ·x⊙w| leaks under MP2ML).
        let big: Vec<f64> = (0..params.slots()).map(|i| 3.0e6 + (i % 17) as f64).collect();
        let ct = sk.encrypt(&params, &params.encode_real(&big, 1, 2f64.powi(30)).unwrap(), &mut prg).unwrap();
        // Ours (Alg. 1): r̂ uniform in R_q.
        let (masked, _) = mask_ciphertext(&ev, &pk, &ct, 1, &mut prg).unwrap();
        let d = sk.decrypt(&params, &masked).unwrap().coeff_residues(&params);
        let ours = chi_square(d[0].iter().copied(), q0);
        // MP2ML: r uniform over the slots, then encoded — the coefficients concentrate.
        let r: Vec<f64> = (0..params.slots()).map(|_| (uniform_below(&mut prg, 1 << 40) as f64 - 2f64.powi(39)) / 2f64.powi(14)).collect();
        let mp2ml = ev.add_plain(&ct, &params.encode_real(&r, 1, 2f64.powi(30)).unwrap()).unwrap();
        let dm = sk.decrypt(&params, &mp2ml).unwrap().coeff_residues(&params);
        let theirs = chi_square(dm[0].iter().copied(), q0);
        eprintln!("chi-square (63 d.o.f., 99.9% quantile 103.4): BLB mask {ours:.1}, MP2ML mask {theirs:.1}");
        assert!(ours < 103.4, "BLB mask not uniform: chi2 = {ours}");
        assert!(theirs > 1000.0, "MP2ML mask unexpectedly uniform: chi2 = {theirs}");
    }

    #[test]
    fn ring_to_field_shares_are_uniform() {
        let params = test_params();
        let fmt = ConvFormat::DEFAULT;
        let n = params.slots();
        let mut prg = Prg::new([13; 16]);
        let xs: Vec<f64> = (0..n).map(|i| 40.0 + (i % 5) as f64).collect(); // a biased message
        let (xa, xb) = fixed(&xs, &fmt, &mut prg);
        let (p1, p2) = (params.clone(), params.clone());
        let scale = params.default_scale();
        let (ps, _) = run_pair(
            move |ch| {
                let mut m = Mpc::setup(Role::Server, ch, Prg::new([3; 16]), Producer::Iknp).unwrap();
                shares_to_plaintexts(ch, &mut m, &p1, &xa, Slots::dense(xa.len()), 3, scale, &fmt).unwrap().remove(0).pt
            },
            move |ch| {
                let mut m = Mpc::setup(Role::Client, ch, Prg::new([4; 16]), Producer::Iknp).unwrap();
                shares_to_plaintexts(ch, &mut m, &p2, &xb, Slots::dense(xb.len()), 3, scale, &fmt).unwrap().remove(0).pt
            },
        );
        let res = ps.coeff_residues(&params);
        for (i, r) in res.iter().enumerate() {
            let chi = chi_square(r.iter().copied(), params.prime(i).unwrap());
            eprintln!("server's ring->field share mod q_{i}: chi-square {chi:.1}");
            assert!(chi < 103.4, "prime {i}: chi2 = {chi}");
        }
    }

    #[test]
    fn too_wide_formats_are_refused() {
        let mut f = ConvFormat::DEFAULT;
        assert!(f.check(32768).is_ok());
        f.value_bits = 30;
        assert!(f.check(32768).is_err());
    }
}
