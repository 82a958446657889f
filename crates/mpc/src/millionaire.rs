//! CrypTFlow2 millionaires' protocol (Rathee et al., CCS'20 §3; SCI `Millionaire`; REFERENCE.md
//! §2.4) with BumbleBee's batching of several sender inputs per receiver input (§V-A2,
//! "batched branch selection").
//!
//! P0 (OT sender) holds `B` values `x_{i,b}` per element, P1 (OT receiver) one value `y_i`, all
//! `bits`-bit unsigned; the output is XOR shares of `1{x_{i,b} > y_i}`.
//! 1. Split into `q = ⌈bits/4⌉` digits of [`crate::RADIX`] = 4 bits (LSB first); the top digit
//!    has `r = bits − 4(q − 1)` bits.
//! 2. Per element and digit, one 1-of-`2^r` OT (`r = 4` but for the top digit) on `2B`-bit
//!    messages: P0 samples masks and offers, for every digit value `v` of P1,
//!    `(gt_b ⊕ 1{x_{j,b} > v}) ‖ (eq_b ⊕ 1{x_{j,b} = v})` for all `b`; P1 chooses its digit. One
//!    OT serves all `B` thresholds: BumbleBee's `(M choose 1)-OT_{2B}`. Digit 0 offers only the
//!    `gt` bits (`B`-bit messages): its `eq` is never used (as in SCI). Digits of the same OT
//!    shape share one OT call: up to 3 calls (digit 0, full digits, a short top digit).
//! 3. Combine digits in a binary tree, `⌈log2 q⌉` AND rounds:
//!    `gt(hi,lo) = gt_hi ⊕ eq_hi ∧ gt_lo`, `eq(hi,lo) = eq_hi ∧ eq_lo` (the `eq` of the lowest
//!    group is never needed and not computed).
//!
//! Cost per element (`bits = 63`, `B = 1`): 15 1-of-16 OTs (4 COTs + 4 choice bits + 16·2
//! message bits each, but 16·1 for digit 0) and one 1-of-8 OT (3 COTs + 3 bits + 8·2 bits) for
//! the 3-bit top digit, then 23 ANDs (≈ 4 bits + 2 COTs each): ≈ 635 bits + 109 COTs
//! (measured: 647 bits/element; before the two trims 680, SPU reports 690.5); flows: 2 for
//! the OT calls (one call per shape and chunk of [`OT_CHUNK`] instances, all in one round trip,
//! [`nectar_ot::one_of_n::send_prepare`], while their instances add up to at most
//! [`ROUND_TRIP_INSTANCES`]: below 65 536 elements at `bits = 63`; 2 more flows per further
//! 2^20 instances, which bounds memory) + 1 per tree level (each AND is led by the party that
//! sent last, [`crate::ctx`]).

use crate::words::mask;
use crate::{Mpc, MpcError, Result, RADIX};
use nectar_net::Channel;

/// Largest number of 1-of-2^r OT instances per OT call (LOCAL: bounds the sender's message
/// buffer to `16·16·OT_CHUNK` bytes).
pub const OT_CHUNK: usize = 1 << 17;

/// Largest number of OT instances whose calls share one round trip (LOCAL: bounds the COTs
/// both parties hold at once to `β·16·ROUND_TRIP_INSTANCES` bytes, 64 MiB for 1-of-16; issue 48).
pub const ROUND_TRIP_INSTANCES: usize = 1 << 20;

/// Number of digits of a `bits`-bit input.
pub fn digits(bits: u32) -> usize {
    bits.div_ceil(RADIX) as usize
}

fn digit(x: u64, j: usize) -> usize {
    ((x >> (RADIX as usize * j)) & ((1 << RADIX) - 1)) as usize
}

impl Mpc {
    /// Digit-wise OT phase shared by the millionaire and equality protocols: for every element
    /// `i`, digit `j` and sender input `b`, P0 offers `w = msg(x_{i,b} digit, v)` (`width` bits
    /// per `b`), P1 chooses with its digit. Returns the share bits `out[w][j][i·B + b]`: bit `w`
    /// of the `width`-bit word for digit `j`, element `i`, input `b`.
    ///
    /// Two trims keep the OT messages to the bits that are used (REFERENCE.md §2.4 step 3):
    /// digit 0 carries only the low `low_width` bits of `msg` (the millionaire never uses the
    /// `eq` of the lowest digit; `out[w][0]` stays `false` for `w >= low_width`), and a top digit
    /// of `r < 4` bits uses a `(2^r choose 1)`-OT. Digits with the same `(N, k)` share one OT
    /// call (per chunk of [`OT_CHUNK`] instances); all calls of one digit_ot share one round trip (see the module docs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn digit_ot(
        &mut self,
        ch: &mut dyn Channel,
        input: &[u64],
        batch: usize,
        bits: u32,
        width: usize,
        low_width: usize,
        msg: impl Fn(usize, usize) -> u128,
    ) -> Result<Vec<Vec<Vec<bool>>>> {
        let m = mask(bits)?;
        if batch == 0 || width * batch > 128 || low_width == 0 || low_width > width {
            return Err(MpcError::BadArgument(format!(
                "batch {batch} × {width} bits (digit 0: {low_width}) does not fit a 128-bit OT message"
            )));
        }
        let n = if self.is_server() {
            if !input.len().is_multiple_of(batch) {
                return Err(MpcError::Length {
                    what: "batched sender input",
                    expected: input.len().next_multiple_of(batch),
                    got: input.len(),
                });
            }
            input.len() / batch
        } else {
            input.len()
        };
        let q = digits(bits);
        // Per digit: (number of OT messages N, message bits per input b).
        let shape = |j: usize| -> (usize, usize) {
            let r = (bits - RADIX * j as u32).min(RADIX);
            (1usize << r, if j == 0 { low_width } else { width })
        };
        // Classes of digits sharing (N, per-input bits), in order of first digit.
        let mut classes: Vec<((usize, usize), Vec<usize>)> = Vec::new();
        for j in 0..q {
            let s = shape(j);
            match classes.iter_mut().find(|c| c.0 == s) {
                Some(c) => c.1.push(j),
                None => classes.push((s, vec![j])),
            }
        }
        let mut out = vec![vec![vec![false; n * batch]; q]; width];
        // The OT calls: per class, chunks of at most OT_CHUNK instances; consecutive calls
        // whose instances add up to at most ROUND_TRIP_INSTANCES share one round trip (issue
        // 48); the sender builds one call's messages at a time.
        let mut units: Vec<(usize, usize, usize)> = Vec::new(); // (class, start, end)
        for (c, (_, ds)) in classes.iter().enumerate() {
            let per = (OT_CHUNK / ds.len()).max(1);
            let mut start = 0;
            while start < n {
                let end = (start + per).min(n);
                units.push((c, start, end));
                start = end;
            }
        }
        let mut batches: Vec<Vec<(usize, usize, usize)>> = Vec::new();
        let mut load = 0;
        for u in units {
            let size = (u.2 - u.1) * classes[u.0].1.len();
            match batches.last_mut() {
                Some(b) if load + size <= ROUND_TRIP_INSTANCES => {
                    b.push(u);
                    load += size;
                }
                _ => {
                    batches.push(vec![u]);
                    load = size;
                }
            }
        }
        for units in &batches {
            if self.is_server() {
                let shapes: Vec<(usize, usize, usize)> = units
                    .iter()
                    .map(|&(c, start, end)| ((end - start) * classes[c].1.len(), classes[c].0 .0, classes[c].0 .1 * batch))
                    .collect();
                let mut prep = self.ot().send_ot1n_prepare(ch, &shapes)?;
                for (u, &(c, start, end)) in units.iter().enumerate() {
                    let ((nm, wj), ds) = (&classes[c].0, &classes[c].1);
                    let (nm, wj) = (*nm, *wj);
                    let k = wj * batch;
                    let km = if k == 128 { u128::MAX } else { (1u128 << k) - 1 };
                    let wm = (1u128 << wj) - 1;
                    let mut msgs = Vec::with_capacity((end - start) * ds.len() * nm);
                    let (_, prg) = self.parts();
                    for i in start..end {
                        for &j in ds {
                            let r = prg.next_u128() & km;
                            for b in 0..batch {
                                for (w, o) in out.iter_mut().take(wj).enumerate() {
                                    o[j][i * batch + b] = (r >> (wj * b + w)) & 1 == 1;
                                }
                            }
                            for v in 0..nm {
                                let mut w = r;
                                for b in 0..batch {
                                    w ^= (msg(digit(input[i * batch + b] & m, j), v) & wm) << (wj * b);
                                }
                                msgs.push(w);
                            }
                        }
                    }
                    self.ot().send_ot1n_payload(ch, &mut prep, u, &msgs)?;
                }
            } else {
                let mut all: Vec<(Vec<u8>, usize, usize)> = Vec::with_capacity(units.len());
                for &(c, start, end) in units {
                    let ((nm, wj), ds) = (&classes[c].0, &classes[c].1);
                    let mut choices = Vec::with_capacity((end - start) * ds.len());
                    for &y in &input[start..end] {
                        for &j in ds {
                            choices.push(digit(y & m, j) as u8);
                        }
                    }
                    all.push((choices, *nm, wj * batch));
                }
                let groups: Vec<(&[u8], usize, usize)> = all.iter().map(|(v, nm, k)| (v.as_slice(), *nm, *k)).collect();
                let got = self.ot().recv_ot1n_many(ch, &groups)?;
                for (&(c, start, _), g) in units.iter().zip(&got) {
                    let (wj, ds) = (classes[c].0 .1, &classes[c].1);
                    for (t, g) in g.iter().enumerate() {
                        let (i, j) = (start + t / ds.len(), ds[t % ds.len()]);
                        for b in 0..batch {
                            for (w, o) in out.iter_mut().take(wj).enumerate() {
                                o[j][i * batch + b] = (g >> (wj * b + w)) & 1 == 1;
                            }
                        }
                    }
                }
            }
        }
        // P1 chose, P0 sent last: P0 leads the steps that follow (the comparison tree's first
        // AND level then rides on the OT payload's flight).
        self.set_lead(nectar_net::Role::Server);
        Ok(out)
    }

    /// XOR shares of `1{x_{i,b} > y_i}` for `bits`-bit unsigned inputs (`1 <= bits <= 64`),
    /// by the session's [`crate::Comparison`] protocol (this module's by default).
    /// P0 passes `x` element-major (`x[i·batch + b]`), P1 passes `y` (one per element); both get
    /// `n·batch` shares in P0's layout. `batch <= 64`.
    pub fn millionaire(
        &mut self,
        ch: &mut dyn Channel,
        input: &[u64],
        batch: usize,
        bits: u32,
    ) -> Result<Vec<bool>> {
        if let crate::Comparison::RotlLut { block } = self.comparison() {
            return self.millionaire_lut(ch, input, batch, bits, block);
        }
        let mut d = self.digit_ot(ch, input, batch, bits, 2, 1, |x, v| {
            ((x > v) as u128) | (((x == v) as u128) << 1)
        })?;
        let (eq, gt) = (d.pop().unwrap_or_default(), d.pop().unwrap_or_default());
        self.comparison_tree(ch, gt, eq)
    }

    /// The tree combination of step 3 (digits LSB first).
    pub(crate) fn comparison_tree(
        &mut self,
        ch: &mut dyn Channel,
        gt: Vec<Vec<bool>>,
        eq: Vec<Vec<bool>>,
    ) -> Result<Vec<bool>> {
        let mut groups: Vec<(Vec<bool>, Option<Vec<bool>>)> = gt
            .into_iter()
            .zip(eq)
            .enumerate()
            .map(|(j, (g, e))| (g, if j == 0 { None } else { Some(e) }))
            .collect();
        let Some(m) = groups.first().map(|g| g.0.len()) else {
            return Err(MpcError::BadArgument("comparison of zero digits".into()));
        };
        while groups.len() > 1 {
            let pairs = groups.len() / 2;
            let mut a = Vec::with_capacity(2 * pairs * m);
            let mut b = Vec::with_capacity(2 * pairs * m);
            for t in 0..pairs {
                let (lo, hi) = (&groups[2 * t], &groups[2 * t + 1]);
                a.extend_from_slice(hi.1.as_deref().unwrap_or(&[]));
                b.extend_from_slice(&lo.0);
            }
            for t in 1..pairs {
                let (lo, hi) = (&groups[2 * t], &groups[2 * t + 1]);
                a.extend_from_slice(hi.1.as_deref().unwrap_or(&[]));
                b.extend_from_slice(lo.1.as_deref().unwrap_or(&[]));
            }
            if a.len() != b.len() || a.len() != (2 * pairs - 1) * m {
                return Err(MpcError::BadArgument("inconsistent comparison tree".into()));
            }
            let z = self.and(ch, &a, &b)?;
            let mut next = Vec::with_capacity(pairs + 1);
            for t in 0..pairs {
                let hi = &groups[2 * t + 1];
                let g: Vec<bool> =
                    hi.0.iter()
                        .zip(&z[t * m..(t + 1) * m])
                        .map(|(x, y)| x ^ y)
                        .collect();
                let e = if t == 0 {
                    None
                } else {
                    Some(z[(pairs + t - 1) * m..(pairs + t) * m].to_vec())
                };
                next.push((g, e));
            }
            if groups.len() % 2 == 1 {
                if let Some(last) = groups.pop() {
                    next.push(last);
                }
            }
            groups = next;
        }
        Ok(groups.pop().map(|g| g.0).unwrap_or_default())
    }
}
