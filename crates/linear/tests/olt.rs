//! Two-party OLT runs over an in-memory channel: exact products for small and edge shapes,
//! every compression, both role assignments.

use nectar_he::Params;
use nectar_linear::krdy::matmul_u64;
use nectar_linear::window::Compression;
use nectar_linear::{olt, HeSession, OltPlan, Shape, Side, Variant, Windows};
use nectar_math::Prg;
use nectar_net::mem::run_pair;
use nectar_net::Role;
use rand_core::RngCore;

fn run(shape: Shape, plan: OltPlan, batch: usize, seed: u8) -> (Vec<u64>, Vec<u64>) {
    let mut prg = Prg::new([seed; 16]);
    let qs: Vec<Vec<u64>> = (0..batch)
        .map(|_| (0..shape.k * shape.m).map(|_| prg.next_u64()).collect())
        .collect();
    let vs: Vec<Vec<u64>> = (0..batch)
        .map(|_| (0..shape.m * shape.n).map(|_| prg.next_u64()).collect())
        .collect();
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([seed ^ 0x55; 16]);
            let s =
                HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            let m: Vec<&[u64]> = qs.iter().map(|x| &x[..]).collect();
            olt(ch, &s, &plan, Side::Lhs, &m, &mut p).unwrap()
        },
        |ch| {
            let mut p = Prg::new([seed ^ 0xaa; 16]);
            let s =
                HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            let m: Vec<&[u64]> = vs.iter().map(|x| &x[..]).collect();
            olt(ch, &s, &plan, Side::Rhs, &m, &mut p).unwrap()
        },
    );
    let got: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    let want: Vec<u64> = qs
        .iter()
        .zip(&vs)
        .flat_map(|(q, v)| matmul_u64(q, v, shape))
        .collect();
    (got, want)
}

fn check(shape: Shape, plan: OltPlan, batch: usize, seed: u8) {
    let (got, want) = run(shape, plan, batch, seed);
    assert_eq!(got.len(), want.len());
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert_eq!(
        bad, 0,
        "{shape:?} {:?} {:?}: {bad} wrong entries",
        plan.windows, plan.compression
    );
}

#[test]
fn olt_interleave_exact_edge_shapes() {
    let n = 8192;
    // k'n' = 3·5 = 15 products, m_w = 8: two InterLeave groups, the last one partial.
    let s = Shape::new(5, 19, 9).unwrap();
    let w = Windows::new(2, 8, 2, n, true).unwrap();
    let p = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    assert_eq!(p.compression, Compression::Interleave);
    check(s, p, 1, 1);
    // m' = 13 inner blocks: the evaluator sums them in groups of four and a last single one.
    let s = Shape::new(5, 100, 9).unwrap();
    let p = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    check(s, p, 1, 1);
    // role flip (k' > n'), n = 1.
    let s = Shape::new(7, 10, 1).unwrap();
    let w = Windows::new(2, 4, 1, n, true).unwrap();
    let p = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    assert!(p.rhs_encrypts);
    check(s, p, 1, 2);
}

#[test]
fn olt_krdy_and_packlwes_exact() {
    let n = 8192;
    // k = 1, m > N.
    let s = Shape::new(1, 8200, 3).unwrap();
    let w = Windows::new(1, 4096, 2, n, false).unwrap();
    check(s, OltPlan::new(s, w, n, Variant::Krdy).unwrap(), 1, 3);
    let s = Shape::new(3, 6, 5).unwrap();
    let w = Windows::new(2, 4, 2, n, true).unwrap();
    check(s, OltPlan::new(s, w, n, Variant::KrdyPlus).unwrap(), 1, 4);
}

#[test]
fn olt_batched_equals_separate_products() {
    let n = 8192;
    let s = Shape::new(3, 5, 4).unwrap();
    let w = Windows::new(2, 4, 2, n, true).unwrap();
    check(s, OltPlan::new(s, w, n, Variant::Interleave).unwrap(), 3, 5);
}

#[test]
fn malformed_peer_messages_are_errors() {
    let n = 8192;
    let s = Shape::new(2, 3, 2).unwrap();
    let plan = OltPlan::new(
        s,
        Windows::new(2, 4, 2, n, true).unwrap(),
        n,
        Variant::Interleave,
    )
    .unwrap();
    let q = vec![1u64; 6];
    let v = vec![2u64; 6];
    // The evaluator (V holder) answers garbage; then the encryptor gets a truncated query.
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let sess =
                HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            let r1 = olt(ch, &sess, &plan, Side::Lhs, &[&q], &mut p);
            use nectar_net::Channel;
            ch.send(&[1, 0, 0, 0, 9, 9]).unwrap();
            r1.is_err()
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            let sess =
                HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            use nectar_net::Channel;
            let _ = ch.recv().unwrap();
            ch.send(b"NH garbage").unwrap();
            olt(ch, &sess, &plan, Side::Rhs, &[&v], &mut p).is_err()
        },
    );
    assert!(a && b);
    // Wrong input sizes are errors too.
    let (a, _) = run_pair(
        |ch| {
            let mut p = Prg::new([1; 16]);
            let sess =
                HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), false, &mut p).unwrap();
            olt(ch, &sess, &plan, Side::Lhs, &[&q[..5]], &mut p).is_err()
        },
        |ch| {
            let mut p = Prg::new([2; 16]);
            HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), false, &mut p).unwrap();
        },
    );
    assert!(a);
}

/// Centred weights of magnitude below `2^bits` (a server's fixed-point weights), mod `2^64`.
fn small_weights(prg: &mut Prg, len: usize, bits: u32) -> Vec<u64> {
    (0..len)
        .map(|_| {
            let v = (prg.next_u64() >> (64 - bits)) as i64 - (1i64 << (bits - 1));
            v as u64
        })
        .collect()
}

/// The products of a small-weight OLT run at the response level (two primes) and stay exact;
/// uniform shares keep the top level.
#[test]
fn small_weights_multiply_at_the_response_level_and_stay_exact() {
    use nectar_linear::h2a::response_level;
    use nectar_linear::olt::product_level;
    let params = Params::bumblebee_olt();
    let resp = response_level(&params, 64);
    assert_eq!((resp, params.max_level()), (2, 3));
    let n = 8192;
    // MiniLM's embedding shape, one fifth of the vocabulary: 6104 rows per block column.
    let s = Shape::new(32, 6104, 6).unwrap();
    let w = Windows::new(32, 256, 1, n, true).unwrap();
    let plan = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    let mut prg = Prg::new([21; 16]);
    // |w| < 2^16 (0.25 at 18 fractional bits): S ≈ 6104·2^32/3 ≈ 2^43.3, σ ≈ 2^26.1.
    let wts = small_weights(&mut prg, s.m * s.n, 17);
    assert_eq!(product_level(&params, &plan, Side::Rhs, &[&wts], resp), 2);
    let uniform: Vec<u64> = (0..s.m * s.n).map(|_| prg.next_u64()).collect();
    assert_eq!(product_level(&params, &plan, Side::Rhs, &[&uniform], resp), 3);
    // Weights 2^3 times larger (S ≈ 2^49.3) exceed the level-2 headroom.
    let big = small_weights(&mut prg, s.m * s.n, 20);
    assert_eq!(product_level(&params, &plan, Side::Rhs, &[&big], resp), 3);

    let x: Vec<u64> = (0..s.k * s.m).map(|_| prg.next_u64()).collect();
    let (a, b) = run_pair(
        |ch| {
            let mut p = Prg::new([22; 16]);
            let sess = HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            olt(ch, &sess, &plan, Side::Rhs, &[&wts], &mut p).unwrap()
        },
        |ch| {
            let mut p = Prg::new([23; 16]);
            let sess = HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            olt(ch, &sess, &plan, Side::Lhs, &[&x], &mut p).unwrap()
        },
    );
    let got: Vec<u64> = a.iter().zip(&b).map(|(p, q)| p.wrapping_add(*q)).collect();
    let want = matmul_u64(&x, &wts, s);
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    assert_eq!(bad, 0, "{bad} of {} entries wrong", want.len());
}

/// The noise model behind `product_level`: a fresh top-level encryption of a uniform share,
/// switched down to level 2 and multiplied by small centred weights accumulated over blocks,
/// carries noise of standard deviation `sqrt((1 + 2N/3)/12 · Σ w²)`; its largest coefficient
/// (about 4.5σ over N coefficients) lies between σ and 8σ.
#[test]
fn level_two_product_noise_matches_the_model() {
    use nectar_he::{PlainNtt, Plaintext, SecretKey};
    let params = Params::bumblebee_olt();
    let n = params.n();
    let mut prg = Prg::new([24; 16]);
    let sk = SecretKey::generate(&params, &mut prg);
    let blocks = 8;
    let nonzero = 256;
    let mut acc: Option<nectar_he::Ciphertext> = None;
    let mut sum_sq = 0.0f64;
    for _ in 0..blocks {
        let x: Vec<u64> = (0..n).map(|_| prg.next_u64()).collect();
        let mut ct = sk.encrypt(&params, &Plaintext::from_coeffs(&params, &x, 0).unwrap(), &mut prg).unwrap();
        ct.mod_switch_to(&params, 2).unwrap();
        let w = small_weights(&mut prg, nonzero, 20);
        sum_sq += w.iter().map(|&v| (v as i64 as f64).powi(2)).sum::<f64>();
        let pt = PlainNtt::new(&params, &Plaintext::from_coeffs(&params, &w, 0).unwrap(), 2).unwrap();
        match acc.as_mut() {
            None => acc = Some(ct.mul_plain(&params, &pt).unwrap()),
            Some(a) => a.mul_plain_accumulate(&params, &ct, &pt).unwrap(),
        }
    }
    let acc = acc.unwrap();
    let sigma = ((1.0 + 2.0 * n as f64 / 3.0) / 12.0 * sum_sq).sqrt();
    let bits = sk.noise(&params, &acc).unwrap().noise_bits as f64; // log2 |e|∞ ∈ [bits − 1, bits)
    assert!(bits - 1.0 <= (8.0 * sigma).log2(), "noise 2^{bits} vs 8σ = 2^{:.1}", (8.0 * sigma).log2());
    assert!(bits >= sigma.log2(), "noise 2^{bits} below σ = 2^{:.1}", sigma.log2());
}

/// Both parties' shares of a weight OLT whose evaluator got `prepare(params, plan, w)`.
fn weight_olt_shares(
    plan: OltPlan,
    x: &[u64],
    w: &[u64],
    prepare: impl FnOnce(&Params, &OltPlan, &[u64]) -> Option<nectar_linear::PreparedBlocks> + Send,
) -> (Vec<u64>, Vec<u64>) {
    run_pair(
        |ch| {
            let mut p = Prg::new([31; 16]);
            let sess = HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            let pre = prepare(&sess.params, &plan, w);
            nectar_linear::olt_prepared(ch, &sess, &plan, Side::Rhs, &[w], &mut p, pre).unwrap()
        },
        |ch| {
            let mut p = Prg::new([32; 16]);
            let sess = HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            olt(ch, &sess, &plan, Side::Lhs, &[x], &mut p).unwrap()
        },
    )
}

/// Weight blocks prepared before the call (all, part, on the background thread, or for
/// another plan, which the evaluator ignores) leave both parties' shares bit for bit those
/// of the plain OLT: once per column (no cache) and with the cache of reused blocks.
#[test]
fn prepared_weight_blocks_change_nothing() {
    use nectar_linear::olt::{block_bytes, prepare_blocks};
    use nectar_linear::prefetch::PrefetchWorker;
    use std::sync::atomic::AtomicBool;
    let n = 8192;
    let mut prg = Prg::new([30; 16]);
    // (rows, windows): one row block (each plaintext block used once), two (reused, cached).
    for (rows, kw) in [(32usize, 32usize), (64, 32)] {
        let s = Shape::new(rows, 96, 40).unwrap();
        let plan = OltPlan::new(s, Windows::new(kw, 32, 8, n, true).unwrap(), n, Variant::Interleave).unwrap();
        assert!(!plan.rhs_encrypts);
        let other = OltPlan::new(s, Windows::new(kw, 16, 16, n, true).unwrap(), n, Variant::Interleave).unwrap();
        let x: Vec<u64> = (0..s.k * s.m).map(|_| prg.next_u64()).collect();
        let w = small_weights(&mut prg, s.m * s.n, 17);
        let plain = weight_olt_shares(plan, &x, &w, |_, _, _| None);
        let got: Vec<u64> = plain.0.iter().zip(&plain.1).map(|(a, b)| a.wrapping_add(*b)).collect();
        assert_eq!(got, matmul_u64(&x, &w, s), "rows {rows}");
        let no_stop = AtomicBool::new(false);
        // 3 × 5 = 15 blocks at level 2: all of them, then 7 (a budget of 7.5 blocks).
        for blocks in [15.0, 7.5] {
            let with = weight_olt_shares(plan, &x, &w, |params, plan, w| {
                let budget = (blocks * block_bytes(params, 2) as f64) as usize;
                let pre = prepare_blocks(params, plan, Side::Rhs, &[w], budget, &no_stop).unwrap();
                assert_eq!(pre.count(), blocks as usize);
                Some(pre)
            });
            assert_eq!(with, plain, "rows {rows}, {blocks} blocks prepared");
        }
        let stopped = weight_olt_shares(plan, &x, &w, |params, plan, w| {
            let pre = prepare_blocks(params, plan, Side::Rhs, &[w], usize::MAX, &AtomicBool::new(true)).unwrap();
            assert_eq!(pre.count(), 0, "a stopped preparation makes no block");
            Some(pre)
        });
        assert_eq!(stopped, plain);
        let background = weight_olt_shares(plan, &x, &w, |params, plan, w| {
            let worker = PrefetchWorker::new().unwrap();
            let shared = std::sync::Arc::new(w.to_vec());
            let job = worker.start(params, *plan, Side::Rhs, std::sync::Arc::clone(&shared), usize::MAX).unwrap();
            assert!(job.matches(plan, Side::Rhs, &shared) && !job.matches(&other, Side::Rhs, &shared));
            assert!(!job.matches(plan, Side::Rhs, &shared[1..]));
            // the very buffer it was given, not an equal copy elsewhere
            assert!(!job.matches(plan, Side::Rhs, w));
            Some(job.finish().unwrap())
        });
        assert_eq!(background, plain);
        let mismatched = weight_olt_shares(plan, &x, &w, |params, _, w| {
            Some(prepare_blocks(params, &other, Side::Rhs, &[w], usize::MAX, &no_stop).unwrap())
        });
        assert_eq!(mismatched, plain);
    }
}

/// A channel whose session is already cancelled (the app's watcher saw its peer go).
struct Cancelled<'a>(&'a mut nectar_net::MemChannel);

impl nectar_net::Channel for Cancelled<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<(), nectar_net::NetError> {
        self.0.send(msg)
    }
    fn recv(&mut self) -> Result<Vec<u8>, nectar_net::NetError> {
        self.0.recv()
    }
    fn flush(&mut self) -> Result<(), nectar_net::NetError> {
        self.0.flush()
    }
    fn stats(&self) -> nectar_net::Stats {
        self.0.stats()
    }
    fn cancel_token(&self) -> Option<nectar_net::CancelToken> {
        Some(nectar_net::CancelToken::new(|| true))
    }
}

/// The evaluator stops at its first group of block products once its session is cancelled,
/// instead of computing the whole product first (issue 51: a vanished client's session frees
/// its memory at once).
#[test]
fn evaluator_stops_when_cancelled() {
    let n = 8192;
    // k' > n': the client encrypts and the server (Lhs) evaluates.
    let s = Shape::new(7, 10, 1).unwrap();
    let w = Windows::new(2, 4, 1, n, true).unwrap();
    let plan = OltPlan::new(s, w, n, Variant::Interleave).unwrap();
    assert!(plan.rhs_encrypts);
    let q: Vec<u64> = vec![3; s.k * s.m];
    let v: Vec<u64> = vec![5; s.m * s.n];
    let (server, client) = run_pair(
        |ch| {
            let mut p = Prg::new([7; 16]);
            let sess = HeSession::setup(ch, Role::Server, Params::bumblebee_olt(), true, &mut p).unwrap();
            let mut c = Cancelled(ch);
            let r = olt(&mut c, &sess, &plan, Side::Lhs, &[&q[..]], &mut p).map(|_| ());
            // The in-memory pair outlives this closure: a malformed response ends the client's
            // wait (over TCP, the app's session would close the socket).
            let _ = nectar_net::Channel::send(c.0, b"cancelled");
            r
        },
        |ch| {
            let mut p = Prg::new([8; 16]);
            let sess = HeSession::setup(ch, Role::Client, Params::bumblebee_olt(), true, &mut p).unwrap();
            olt(ch, &sess, &plan, Side::Rhs, &[&v[..]], &mut p).map(|_| ())
        },
    );
    let e = server.unwrap_err().to_string();
    assert!(e.contains("cancelled"), "{e}");
    assert!(client.is_err(), "the client got no response");
}

/// A weight OLT whose query travels at the response level (`QueryLevel::Response`, the narrow
/// ring's): exact, with query ciphertexts of two primes instead of three (the response
/// unchanged), with and without prepared blocks; weights too large for it are refused before
/// the evaluator reads the query, and a query at another level than the plan's is refused.
#[test]
fn weight_query_at_the_response_level() {
    use nectar_linear::olt::{prepare_blocks, query_level, weight_query_fits};
    use nectar_linear::{CtBytes, QueryLevel};
    use nectar_net::Channel;
    let params = Params::nectar_olt_narrow();
    let n = params.n();
    // A decoding step's qkv row of SmolLM2 (1 × 576 × 960) at its chosen windows.
    let s = Shape::new(1, 576, 960).unwrap();
    let top = OltPlan::new(s, Windows::new(1, 128, 64, n, true).unwrap(), n, Variant::Interleave).unwrap();
    let low = top.with_weight_query();
    assert_eq!((top.query, low.query), (QueryLevel::Top, QueryLevel::Response));
    assert_eq!((query_level(&params, &top), query_level(&params, &low)), (3, 2));
    // The weight holder encrypting (k' > n') keeps the top level: the client's plaintexts
    // would be uniform shares.
    let flip = OltPlan::new(Shape::new(7, 10, 1).unwrap(), Windows::new(2, 4, 1, n, true).unwrap(), n, Variant::Interleave).unwrap();
    assert!(flip.rhs_encrypts);
    assert_eq!(flip.with_weight_query().query, QueryLevel::Top);
    let mut prg = Prg::new([41; 16]);
    // |w| < 2^15 (0.125 at f = 18), as MiniLM's and SmolLM2's weights.
    let w = small_weights(&mut prg, s.m * s.n, 16);
    assert!(weight_query_fits(&params, &low, Side::Rhs, &[&w]));
    let x: Vec<u64> = (0..s.k * s.m).map(|_| prg.next_u64() & ((1 << 51) - 1)).collect();
    let mask = (1u64 << 51) - 1;
    let want: Vec<u64> = matmul_u64(&x, &w, s).into_iter().map(|v| v & mask).collect();
    let shares = |plan: OltPlan, prepare: bool| {
        run_pair(
            |ch| {
                let mut p = Prg::new([42; 16]);
                let sess = HeSession::setup(ch, Role::Server, Params::nectar_olt_narrow(), true, &mut p).unwrap();
                let stop = std::sync::atomic::AtomicBool::new(false);
                let pre = prepare.then(|| prepare_blocks(&sess.params, &plan, Side::Rhs, &[&w], usize::MAX, &stop).unwrap());
                let before = ch.stats();
                let r = nectar_linear::olt_prepared(ch, &sess, &plan, Side::Rhs, &[&w], &mut p, pre).unwrap();
                (r, ch.stats().bytes_recv - before.bytes_recv, ch.stats().bytes_sent - before.bytes_sent)
            },
            |ch| {
                let mut p = Prg::new([43; 16]);
                let sess = HeSession::setup(ch, Role::Client, Params::nectar_olt_narrow(), true, &mut p).unwrap();
                olt(ch, &sess, &plan, Side::Lhs, &[&x], &mut p).unwrap()
            },
        )
    };
    let sizes = CtBytes::olt(&params);
    let mut recv = Vec::new();
    for (plan, prepare) in [(top, false), (low, false), (low, true)] {
        let ((a, got_q, got_r), b) = shares(plan, prepare);
        let sum: Vec<u64> = a.iter().zip(&b).map(|(p, q)| p.wrapping_add(*q) & mask).collect();
        assert_eq!(sum, want, "{:?} prepared {prepare}", plan.query);
        let (q, r) = plan.bytes(sizes);
        let (q, r) = (q as u64, r as u64);
        // The frames' own headers ride on top of the predicted payloads.
        assert!(got_q >= q && got_q < q + 256 && got_r >= r / 2, "{:?}: {got_q} vs {q}", plan.query);
        recv.push((got_q, got_r));
    }
    assert!(recv[1].0 * 3 < recv[0].0 * 2 + 1024, "low query {} vs top {}", recv[1].0, recv[0].0);
    assert_eq!(recv[1].1, recv[0].1);

    // Uniform weights do not fit: the evaluator refuses before reading the query.
    let uniform: Vec<u64> = (0..s.m * s.n).map(|_| prg.next_u64()).collect();
    assert!(!weight_query_fits(&params, &low, Side::Rhs, &[&uniform]));
    let stop = std::sync::atomic::AtomicBool::new(false);
    assert!(prepare_blocks(&params, &low, Side::Rhs, &[&uniform], usize::MAX, &stop).is_err());
    // The server's error when it evaluates `agreed` with `mat` against a client sending under
    // `sent_as` (the server then ends the client's wait).
    let server_error = |agreed: OltPlan, mat: &[u64], sent_as: OltPlan, seed: u8| {
        let (server, _) = run_pair(
            |ch| {
                let mut p = Prg::new([seed; 16]);
                let sess = HeSession::setup(ch, Role::Server, Params::nectar_olt_narrow(), true, &mut p).unwrap();
                let r = olt(ch, &sess, &agreed, Side::Rhs, &[mat], &mut p).map(|_| ());
                let _ = ch.send(b"refused");
                r
            },
            |ch| {
                let mut p = Prg::new([seed + 1; 16]);
                let sess = HeSession::setup(ch, Role::Client, Params::nectar_olt_narrow(), true, &mut p).unwrap();
                olt(ch, &sess, &sent_as, Side::Lhs, &[&x], &mut p).map(|_| ())
            },
        );
        server.unwrap_err().to_string()
    };
    let e = server_error(low, &uniform, low, 44);
    assert!(e.contains("olt-ring = full"), "{e}");

    // A top-level query where the plan says the response level (and the reverse) is refused.
    for (sent_as, agreed) in [(top, low), (low, top)] {
        let e = server_error(agreed, &w, sent_as, 46);
        assert!(e.contains("level"), "{e}");
    }
}
