//! BLB's linear operators on MPC shares, one operator at a time (`--op matmul=ckks`,
//! `--op matmul-shared=ckks`): the shares enter CKKS (Alg. 2), the server evaluates the matmul
//! under CKKS alone (§5, App. C: [`matmul_cp_spatial`] for `X·W`, the multi-head
//! [`matmul_cc`] for `Q_h·K_h^T` and `P_h·V_h`), and the result leaves as shares (Alg. 1).
//!
//! This is BLB's conversion at every linear operator; its FineGrainFusion (§4: chains of
//! linear operators kept under CKKS between conversions) is the `blb` preset and is not run
//! here. Roles as in [`crate::ckks_convert`]: the client owns the CKKS secret key.
//!
//! Session state: the client's public, relinearisation and conjugation keys (sent once, [`CkksLinear::setup`]);
//! Galois keys are sent on demand, for exactly the rotation steps the next operator uses
//! (both parties derive them by running the operator on the [`SlotSim`] — the steps depend
//! only on public shapes, AGREEMENT), piggybacked on the client's next message, so they cost
//! bytes but no round.
//!
//! Parameters ([`ckks_linear_params`], SECURITY: validated for 128 bits by
//! [`CkksParams::new`]): `N = 2^14`, data primes `60 + 5·40` bits, special prime 60 bits,
//! `Δ = 2^40`; `log QP = 320 <= 438`. A converted ciphertext needs 2 primes (BLB App. C.3 with
//! [`FieldToRing::Local`]: 41 bits of slack over `Δ·2^13`), so `X·W` (one rescale) starts at
//! level 3 and the ct-ct product (four rescales) at level 6.
//!
//! Output: shares with the engine's `f` fractional bits, i.e. the product already truncated
//! (the conversion's decode rescales), so no truncation protocol follows. Error: the CKKS
//! noise plus the conversions' stochastic rounding (a few units of `2^-f`; the tests measure
//! below `1e-4` against the fixed-point product); values must stay below `2^value_bits`
//! ([`ConvFormat`]), beyond which the local field → ring step is wrong (not detected).

use crate::ckks_convert::{
    ckks_to_shares_client, ckks_to_shares_server, conversion_level, shares_to_ckks_client_at, shares_to_ckks_server_at,
    ConvFormat, FieldToRing, SlotPacking, Slots,
};
use crate::ckks_matmul::{matmul_cc, matmul_cp_spatial, CkksOps, SlotOps, SlotSim};
use crate::ckks_packing::{Mat, MhLayout, Packing};
use crate::LinearError;
use nectar_he::ckks::{CkksCiphertext, CkksEvaluator, CkksGaloisKeys, CkksParams, CkksParamsLiteral, CkksPublicKey, CkksSecretKey, RelinKey};
use nectar_math::{FixedPoint, Prg};
use nectar_mpc::Mpc;
use nectar_net::{Channel, Role};
use std::collections::{BTreeSet, HashMap};

/// Ring degree of [`ckks_linear_params`].
pub const CKKS_LINEAR_N: usize = 1 << 14;

/// Smallest spatial length `L` of the `X·W` packing, as a fraction of the slots: `L >= s/64`
/// keeps the blocks per ciphertext at most 64, so the BSGS of [`matmul_cp_spatial`] uses
/// `B − 1 + 64/B − 1` rotation steps (14–18 at MiniLM's shapes, 27 distinct over its four;
/// measured) instead of up to ~180 keys of ~4 MB for a one-row input; a short input pays zero
/// slots instead.
pub const MIN_BLOCKS_DIVISOR: usize = 64;

/// The CKKS parameters of the per-operator matmuls (module doc). SECURITY: 128-bit
/// validated at construction.
pub fn ckks_linear_params() -> Result<CkksParams, LinearError> {
    let lit = CkksParamsLiteral::from_bit_sizes(CKKS_LINEAR_N, &[60, 40, 40, 40, 40, 40], Some(60), 40)?;
    Ok(CkksParams::new(lit)?)
}

/// The conversion format for shares of `(l, f)`: working precision `f + 12` (the decode's
/// stochastic rounding over `N log N` butterflies costs about 8 bits, module doc of
/// [`ConvFormat`]), 28-bit twiddles, values below `2^12`, complex packing on the wire
/// ([`SlotPacking::Complex`]: half the ciphertexts; the conjugation key it needs is sent with
/// the session's keys).
pub fn conv_format(l: u32, f: u32) -> ConvFormat {
    ConvFormat { l, f, work_f: f + 12, tau: 28, value_bits: 12, packing: SlotPacking::Complex }
}

/// One party's CKKS keys: the client's secret key, or the server's evaluator (with the
/// client's relinearisation, conjugation and rotation keys) and the client's public key.
pub enum Side {
    Client { sk: CkksSecretKey },
    Server { ev: Box<CkksEvaluator>, pk: CkksPublicKey },
}

impl Side {
    /// The base key exchange for `params`: the client generates its secret key and sends the
    /// public, relinearisation and conjugation keys (one message). Returns the party's keys
    /// and the message's bytes.
    pub fn exchange(ch: &mut dyn Channel, role: Role, params: &CkksParams, prg: &mut Prg) -> Result<(Side, u64), LinearError> {
        Ok(match role {
            Role::Client => {
                let sk = CkksSecretKey::generate(params, prg);
                let pk = sk.public_key(params, prg);
                let rk = sk.relin_key(params, prg)?;
                let ck = sk.galois_keys(params, &[], true, prg)?;
                let msg = frame(&[&pk.serialize(params), &rk.serialize(params), &ck.serialize(params)]);
                ch.send(&msg)?;
                (Side::Client { sk }, msg.len() as u64)
            }
            Role::Server => {
                let msg = ch.recv()?;
                let parts = unframe(&msg, 3)?;
                let pk = CkksPublicKey::deserialize(params, parts[0])?;
                let rk = RelinKey::deserialize(params, parts[1])?;
                let ck = CkksGaloisKeys::deserialize(params, parts[2])?;
                if !ck.has_conjugation(params) {
                    return Err(LinearError::Malformed("the client sent no conjugation key".into()));
                }
                let ev = CkksEvaluator::new(params).with_relin_key(rk).with_galois_keys(ck);
                (Side::Server { ev: Box::new(ev), pk }, msg.len() as u64)
            }
        })
    }

    /// [`Self::send_rotation_keys`] with each key cut to the level it serves (`(step,
    /// level)`: ciphertexts of that many primes and below; both parties derive the levels
    /// from the public plan, and the server refuses a key cut elsewhere). Returns the bytes
    /// sent.
    pub fn send_rotation_keys_at(&mut self, ch: &mut dyn Channel, params: &CkksParams, steps: &[(i64, usize)], per_frame: usize, prg: &mut Prg) -> Result<u64, LinearError> {
        let mut bytes = 0u64;
        for chunk in steps.chunks(per_frame.max(1)) {
            let levels: std::collections::BTreeMap<i64, usize> = chunk.iter().copied().collect();
            match self {
                Side::Client { sk } => {
                    let ks: Vec<i64> = chunk.iter().map(|&(k, _)| k).collect();
                    let gk = sk.galois_keys(params, &ks, false, prg)?.serialize_at_levels(params, &levels)?;
                    bytes += gk.len() as u64;
                    ch.send(&gk)?;
                }
                Side::Server { ev, .. } => {
                    let msg = ch.recv()?;
                    bytes += msg.len() as u64;
                    let (gk, digits) = CkksGaloisKeys::deserialize_at_levels(params, &msg)?;
                    for (&k, &level) in &levels {
                        let g = nectar_he::ckks::rotation_element(params.n(), k);
                        if g != 1 && digits.get(&g) != Some(&level) {
                            return Err(LinearError::Malformed(format!("the client sent no Galois key for rotation {k} at level {level}")));
                        }
                    }
                    ev.add_galois_keys(gk);
                }
            }
        }
        Ok(bytes)
    }

    /// The client sends the rotation keys of `steps` (which the server lacks), at most
    /// `per_frame` per message; the server checks and adds them. Returns the bytes sent.
    pub fn send_rotation_keys(&mut self, ch: &mut dyn Channel, params: &CkksParams, steps: &[i64], per_frame: usize, prg: &mut Prg) -> Result<u64, LinearError> {
        let mut bytes = 0u64;
        for chunk in steps.chunks(per_frame.max(1)) {
            match self {
                Side::Client { sk } => {
                    let gk = sk.galois_keys(params, chunk, false, prg)?.serialize(params);
                    bytes += gk.len() as u64;
                    ch.send(&gk)?;
                }
                Side::Server { ev, .. } => {
                    let msg = ch.recv()?;
                    bytes += msg.len() as u64;
                    let gk = CkksGaloisKeys::deserialize(params, &msg)?;
                    if let Some(k) = chunk.iter().find(|&&k| !gk.has_rotation(params, k)) {
                        return Err(LinearError::Malformed(format!("the client sent no Galois key for rotation {k}")));
                    }
                    ev.add_galois_keys(gk);
                }
            }
        }
        Ok(bytes)
    }
}

/// One party's state for the per-operator CKKS matmuls of a session (module doc).
pub struct CkksLinear {
    params: CkksParams,
    fmt: ConvFormat,
    side: Side,
    /// Rotation steps whose Galois keys the server holds.
    keyed: BTreeSet<i64>,
    /// Rotation steps of each operator shape (from the simulator), cached.
    steps: HashMap<(u8, [usize; 4]), Vec<i64>>,
}

fn frame(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

fn unframe(mut b: &[u8], count: usize) -> Result<Vec<&[u8]>, LinearError> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, rest) = b.split_first_chunk::<8>().ok_or_else(|| LinearError::Malformed("truncated key message".into()))?;
        let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|_| LinearError::Malformed("key length".into()))?;
        if rest.len() < len {
            return Err(LinearError::Malformed("truncated key message".into()));
        }
        out.push(&rest[..len]);
        b = &rest[len..];
    }
    if !b.is_empty() {
        return Err(LinearError::Malformed("trailing bytes after the keys".into()));
    }
    Ok(out)
}

/// The session state key of the per-operator CKKS keys (`matmul = ckks`, `matmul-shared =
/// ckks` share one key set).
pub const STATE_KEY: &str = "ckks";

/// The per-operator CKKS parameter set's fingerprint, as digest parameters (AGREEMENT).
pub fn params_fingerprint() -> serde_json::Value {
    match ckks_linear_params() {
        Ok(p) => serde_json::Value::from(format!("{:#x}", p.fingerprint())),
        Err(e) => serde_json::Value::from(format!("invalid ({e})")),
    }
}

/// The per-operator CKKS protocols' rows in `nectar params` (its set, its conversions).
pub fn security() -> Result<nectar_math::registry::Security, String> {
    let p = ckks_linear_params().map_err(|e| format!("CKKS parameters: {e}"))?;
    Ok(nectar_math::registry::Security { he: vec![p.security_row("ckks")], statistical: vec![crate::ckks_convert::security_row()] })
}

/// [`CkksLinear::setup`] as a linear protocol's session state (`crate::protocol::LinearProtocol`).
pub fn setup_state(ch: &mut dyn Channel, role: Role, (l, f): (u32, u32), prg: &mut Prg) -> Result<Option<crate::protocol::State>, LinearError> {
    Ok(Some(Box::new(CkksLinear::setup(ch, role, l, f, prg)?)))
}

impl CkksLinear {
    /// The CKKS keys a session made at setup ([`STATE_KEY`]).
    pub fn of(state: Option<&mut (dyn std::any::Any + Send)>) -> Result<&mut CkksLinear, LinearError> {
        state
            .and_then(|s| s.downcast_mut::<CkksLinear>())
            .ok_or_else(|| LinearError::Unsupported("this session has no per-operator CKKS keys".into()))
    }

    /// Session setup: the client generates its CKKS secret key and sends the public,
    /// relinearisation and conjugation keys (one message); shares of `(l, f)` are converted.
    pub fn setup(ch: &mut dyn Channel, role: Role, l: u32, f: u32, prg: &mut Prg) -> Result<Self, LinearError> {
        let params = ckks_linear_params()?;
        let fmt = conv_format(l, f);
        fmt.check(params.n())?;
        let (side, _) = Side::exchange(ch, role, &params, prg)?;
        Ok(CkksLinear { params, fmt, side, keyed: BTreeSet::new(), steps: HashMap::new() })
    }

    /// Converts shares of `(l, f)` from now on (the engine's current fixed-point format).
    pub fn set_format(&mut self, l: u32, f: u32) -> Result<(), LinearError> {
        let fmt = conv_format(l, f);
        if fmt != self.fmt {
            fmt.check(self.params.n())?;
            self.fmt = fmt;
        }
        Ok(())
    }

    /// The CKKS parameters.
    pub fn params(&self) -> &CkksParams {
        &self.params
    }

    /// Galois keys held by the server so far (rotation steps).
    pub fn keyed_steps(&self) -> usize {
        self.keyed.len()
    }

    /// The level a product's output is converted at, and the scale of fresh encodings.
    fn out_level(&self) -> Result<usize, LinearError> {
        conversion_level(&self.params, self.params.default_scale(), &self.fmt, FieldToRing::Local)
    }

    /// The client sends Galois keys for the steps of `steps` the server lacks (one message,
    /// before the operator's conversion, in the same direction: no extra round).
    fn ensure_keys(&mut self, ch: &mut dyn Channel, steps: &[i64], prg: &mut Prg) -> Result<(), LinearError> {
        let new: Vec<i64> = steps.iter().copied().filter(|k| !self.keyed.contains(k)).collect();
        if new.is_empty() {
            return Ok(());
        }
        self.side.send_rotation_keys(ch, &self.params, &new, usize::MAX, prg)?;
        self.keyed.extend(new);
        Ok(())
    }

    /// The rotation steps `run` uses on the simulator with `inputs` zero ciphertexts at
    /// `level`, cached under `key`.
    fn steps_of(
        &mut self,
        key: (u8, [usize; 4]),
        inputs: usize,
        level: usize,
        run: impl FnOnce(&SlotSim, &[<SlotSim as SlotOps>::Ct]) -> Result<(), LinearError>,
    ) -> Result<Vec<i64>, LinearError> {
        if let Some(s) = self.steps.get(&key) {
            return Ok(s.clone());
        }
        let sim = SlotSim::new(self.params.slots());
        let cts: Vec<_> = (0..inputs).map(|_| sim.encrypt(vec![0.0; self.params.slots()], level)).collect();
        run(&sim, &cts)?;
        let s = sim.rotation_steps();
        self.steps.insert(key, s.clone());
        Ok(s)
    }

    /// Converts `x` (placed at `at` in `n_cts` ciphertexts) into CKKS at `level` (server: the
    /// ciphertexts; client: none).
    fn to_ckks(
        &self,
        ch: &mut dyn Channel,
        mpc: &mut Mpc,
        x: &[u64],
        at: &[usize],
        n_cts: usize,
        level: usize,
    ) -> Result<Vec<CkksCiphertext>, LinearError> {
        let slots = Slots::scattered(at, n_cts * self.params.slots());
        let scale = self.params.default_scale();
        match &self.side {
            Side::Server { ev, .. } => shares_to_ckks_server_at(ch, mpc, ev, x, slots, level, scale, &self.fmt),
            Side::Client { sk } => {
                shares_to_ckks_client_at(ch, mpc, &self.params, sk, x, slots, level, scale, &self.fmt)?;
                Ok(Vec::new())
            }
        }
    }

    /// Converts the server's `out` ciphertexts (every slot, in order) back to shares; the
    /// server sends their (public) scale first, in the same flight.
    fn to_shares(
        &self,
        ch: &mut dyn Channel,
        mpc: &mut Mpc,
        out: &[CkksCiphertext],
        n_cts: usize,
    ) -> Result<Vec<u64>, LinearError> {
        let count = n_cts * self.params.slots();
        match &self.side {
            Side::Server { ev, pk } => {
                let scale = out.first().map(|c| c.scale()).ok_or_else(|| LinearError::BadShape("no output".into()))?;
                ch.send(&scale.to_le_bytes())?;
                ckks_to_shares_server(ch, mpc, ev, pk, out, count, &self.fmt, FieldToRing::Local)
            }
            Side::Client { sk } => {
                let b = ch.recv()?;
                let scale = <[u8; 8]>::try_from(b.as_slice())
                    .map(f64::from_le_bytes)
                    .map_err(|_| LinearError::Malformed(format!("{} bytes for a scale", b.len())))?;
                // The scale a chain of rescales by primes near 2^40 can reach (the server's
                // bookkeeping, public); anything else is refused before it sizes a conversion.
                if !(scale.is_finite() && (scale.log2() - self.params.default_scale().log2()).abs() < 4.0) {
                    return Err(LinearError::Malformed(format!("output scale {scale}")));
                }
                ckks_to_shares_client(ch, mpc, &self.params, sk, count, scale, &self.fmt, FieldToRing::Local)
            }
        }
    }

    /// `X·W` for shared `X` (`rows × in_dim`) and the server's `W` (`in_dim × out_dim`, raw
    /// ring elements with `w_f` fractional bits; `None` on the client): shares of the product
    /// with the format's `f` bits (truncated). BOLT's spatial-first ct × pt matmul (BLB §5.2)
    /// between the two conversions.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_weight(
        &mut self,
        ch: &mut dyn Channel,
        mpc: &mut Mpc,
        prg: &mut Prg,
        x: &[u64],
        (rows, in_dim, out_dim): (usize, usize, usize),
        w: Option<&[u64]>,
        w_f: u32,
    ) -> Result<Vec<u64>, LinearError> {
        let s = self.params.slots();
        if x.len() != rows * in_dim || rows == 0 || in_dim == 0 || out_dim == 0 {
            return Err(LinearError::BadShape(format!("X of {} values as {rows} x {in_dim}", x.len())));
        }
        // The server's weight is checked before anything is sent.
        if let Side::Server { .. } = self.side {
            match w {
                None => return Err(LinearError::BadParams("the server must provide the weight".into())),
                Some(w) if w.len() != in_dim * out_dim => {
                    return Err(LinearError::BadShape(format!("W of {} values as {in_dim} x {out_dim}", w.len())))
                }
                Some(_) => {}
            }
        }
        let wf = FixedPoint::new(self.fmt.l, w_f).map_err(|e| LinearError::BadParams(e.to_string()))?;
        let l = rows.next_power_of_two().max(s / MIN_BLOCKS_DIVISOR);
        if l > s {
            return Err(LinearError::BadShape(format!("{rows} rows exceed {s} slots")));
        }
        let p_in = Packing::SpatialFirst { rows: l, cols: in_dim, slots: s };
        let p_out = Packing::SpatialFirst { rows: l, cols: out_dim, slots: s };
        let level = self.out_level()? + 1;
        let zero_w = Mat::zeros(in_dim, out_dim);
        let steps = self.steps_of((0, [l, in_dim, out_dim, 0]), p_in.num_cts(), level, |sim, cts| {
            matmul_cp_spatial(sim, cts, l, &zero_w).map(drop)
        })?;
        self.ensure_keys(ch, &steps, prg)?;
        let flat = |p: &Packing, r: usize, c: usize| {
            let (ct, slot) = p.place(0, r, c);
            ct * s + slot
        };
        let at: Vec<usize> = (0..rows * in_dim).map(|i| flat(&p_in, i / in_dim, i % in_dim)).collect();
        let cts = self.to_ckks(ch, mpc, x, &at, p_in.num_cts(), level)?;
        let out = match &self.side {
            Side::Server { ev, .. } => {
                let w = w.unwrap_or(&[]); // present and of the right length: checked above
                let m = Mat::from_fn(in_dim, out_dim, |i, o| wf.decode(w[i * out_dim + o]));
                matmul_cp_spatial(&CkksOps::new(ev), &cts, l, &m)?
            }
            Side::Client { .. } => Vec::new(),
        };
        let y = self.to_shares(ch, mpc, &out, p_out.num_cts())?;
        Ok((0..rows * out_dim).map(|i| y[flat(&p_out, i / out_dim, i % out_dim)]).collect())
    }

    /// `heads` products `A_h·B_h` of shared `A_h` (`k × m`) and `B_h` (`m × n`), concatenated
    /// as in [`crate::matmul::batch_matmul_shared_shared`]: shares of the products with `f`
    /// bits (truncated). BLB's rotation-efficient multi-head ct-ct matmul (§5.1, Fig. 7, 14),
    /// both operands converted in one message.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_matmul(
        &mut self,
        ch: &mut dyn Channel,
        mpc: &mut Mpc,
        prg: &mut Prg,
        a: &[u64],
        b: &[u64],
        (heads, k, m, n): (usize, usize, usize, usize),
    ) -> Result<Vec<u64>, LinearError> {
        let s = self.params.slots();
        if a.len() != heads * k * m || b.len() != heads * m * n || heads * k * m * n == 0 {
            return Err(LinearError::BadShape(format!("{heads} heads of {k}x{m} · {m}x{n} from {} and {} values", a.len(), b.len())));
        }
        let l = k.max(n).next_power_of_two();
        let lay = MhLayout::new(l, heads, m, s, None)?;
        let (pa, pb, pc) = (Packing::MhSpatialFirst(lay), Packing::MhReduceFirst(lay), Packing::MhDiagonal(lay));
        let j = lay.operand_cts();
        let level = self.out_level()? + 4;
        if level > self.params.max_level() {
            return Err(LinearError::BadParams(format!("a ct-ct matmul needs level {level} of {}", self.params.max_level())));
        }
        let steps = self.steps_of((1, [l, heads, m, 0]), 2 * j, level, |sim, cts| matmul_cc(sim, &lay, &cts[..j], &cts[j..]).map(drop))?;
        self.ensure_keys(ch, &steps, prg)?;
        let flat = |p: &Packing, h: usize, r: usize, c: usize| {
            let (ct, slot) = p.place(h, r, c);
            ct * s + slot
        };
        let mut at = Vec::with_capacity(a.len() + b.len());
        at.extend((0..heads * k * m).map(|i| flat(&pa, i / (k * m), (i / m) % k, i % m)));
        at.extend((0..heads * m * n).map(|i| j * s + flat(&pb, i / (m * n), (i / n) % m, i % n)));
        let ab: Vec<u64> = a.iter().chain(b).copied().collect();
        let cts = self.to_ckks(ch, mpc, &ab, &at, 2 * j, level)?;
        let out = match &self.side {
            Side::Server { ev, .. } => matmul_cc(&CkksOps::new(ev), &lay, &cts[..j], &cts[j..])?,
            Side::Client { .. } => Vec::new(),
        };
        let y = self.to_shares(ch, mpc, &out, pc.num_cts())?;
        Ok((0..heads * k * n).map(|i| y[flat(&pc, i / (k * n), (i / n) % k, i % n)]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_net::mem::{run_pair, MemChannel};
    use nectar_ot::Producer;

    const L: u32 = 64;
    const F: u32 = 18;

    fn enc(x: f64) -> u64 {
        (x * (F as f64).exp2()).round() as i64 as u64
    }
    fn dec(v: u64) -> f64 {
        v as i64 as f64 / (F as f64).exp2()
    }
    fn split(v: &[f64], prg: &mut Prg) -> (Vec<u64>, Vec<u64>) {
        let r: Vec<u64> = v.iter().map(|_| prg.next_u128() as u64).collect();
        let other = v.iter().zip(&r).map(|(&x, &r)| enc(x).wrapping_sub(r)).collect();
        (r, other)
    }

    /// Runs `f` on both parties (server, client) over an in-memory channel with an MPC context.
    fn two_party<T: Send>(f: impl Fn(&mut dyn Channel, &mut Mpc, &mut CkksLinear, &mut Prg, Role) -> T + Sync) -> (T, T) {
        let run = |ch: &mut MemChannel, role: Role, seed: u8| {
            let mut prg = Prg::new([seed; 16]);
            let mut mpc = Mpc::setup(role, ch, prg.fork(), Producer::Iknp).unwrap();
            let mut lin = CkksLinear::setup(ch, role, L, F, &mut prg).unwrap();
            f(ch, &mut mpc, &mut lin, &mut prg, role)
        };
        run_pair(|ch| run(ch, Role::Server, 1), |ch| run(ch, Role::Client, 2))
    }

    #[test]
    fn parameters_are_128_bit_and_fit_the_conversions() {
        let p = ckks_linear_params().unwrap();
        assert_eq!(p.n(), CKKS_LINEAR_N);
        let lvl = conversion_level(&p, p.default_scale(), &conv_format(L, F), FieldToRing::Local).unwrap();
        assert_eq!(lvl, 2);
        assert!(lvl + 4 <= p.max_level());
    }

    #[test]
    fn matmul_weight_matches_the_plain_product() {
        let (rows, din, dout) = (5, 24, 40);
        let mut prg = Prg::new([9; 16]);
        let x: Vec<f64> = (0..rows * din).map(|i| ((i * 37 % 101) as f64 - 50.0) / 12.0).collect();
        let w: Vec<f64> = (0..din * dout).map(|i| ((i * 53 % 97) as f64 - 48.0) / 200.0).collect();
        let (x0, x1) = split(&x, &mut prg);
        let wq: Vec<u64> = w.iter().map(|&v| enc(v)).collect();
        let (y0, y1) = two_party(|ch, mpc, lin, prg, role| {
            let (xs, wv) = if role == Role::Server { (&x0, Some(&wq[..])) } else { (&x1, None) };
            let y = lin.matmul_weight(ch, mpc, prg, xs, (rows, din, dout), wv, F).unwrap();
            // A second product of the same shape needs no new keys.
            let keys = lin.keyed_steps();
            let y2 = lin.matmul_weight(ch, mpc, prg, xs, (rows, din, dout), wv, F).unwrap();
            assert_eq!(keys, lin.keyed_steps());
            (y, y2)
        });
        for (a, b) in [(&y0.0, &y1.0), (&y0.1, &y1.1)] {
            for r in 0..rows {
                for o in 0..dout {
                    let want: f64 = (0..din).map(|i| dec(enc(x[r * din + i])) * dec(wq[i * dout + o])).sum();
                    let got = dec(a[r * dout + o].wrapping_add(b[r * dout + o]));
                    assert!((got - want).abs() < 1e-4, "[{r}][{o}] got {got} want {want}");
                }
            }
        }
    }

    #[test]
    fn batch_matmul_matches_the_plain_products() {
        let (heads, k, m, n) = (3, 6, 5, 7);
        let mut prg = Prg::new([4; 16]);
        let a: Vec<f64> = (0..heads * k * m).map(|i| ((i * 29 % 61) as f64 - 30.0) / 10.0).collect();
        let b: Vec<f64> = (0..heads * m * n).map(|i| ((i * 31 % 67) as f64 - 33.0) / 10.0).collect();
        let (a0, a1) = split(&a, &mut prg);
        let (b0, b1) = split(&b, &mut prg);
        let (y0, y1) = two_party(|ch, mpc, lin, prg, role| {
            let (xa, xb) = if role == Role::Server { (&a0, &b0) } else { (&a1, &b1) };
            lin.batch_matmul(ch, mpc, prg, xa, xb, (heads, k, m, n)).unwrap()
        });
        for h in 0..heads {
            for r in 0..k {
                for c in 0..n {
                    let want: f64 = (0..m).map(|t| dec(enc(a[h * k * m + r * m + t])) * dec(enc(b[h * m * n + t * n + c]))).sum();
                    let i = h * k * n + r * n + c;
                    let got = dec(y0[i].wrapping_add(y1[i]));
                    assert!((got - want).abs() < 1e-4, "h{h} [{r}][{c}] got {got} want {want}");
                }
            }
        }
    }
}

