//! Whole-model wire pinning (DESIGN.md "Wire formats are pinned"; issue 12 item 6): each tiny
//! architecture runs end to end between two parties with fixed PRG seeds under the
//! `bumblebee` suite (and variants of it) and BERT / LLaMA under the `nectar`, `east` and `rotl` presets and per-operator CKKS; the bytes each party sends are hashed (FNV-1a 64
//! over every frame, with its length), and so are the client's output and the fixed-point
//! twin's output. A refactor of the transformer block or of the suite plumbing that changes
//! what goes on the wire, or any output bit, changes a pinned value.

use nectar_math::{FixedPoint, Prg};
use nectar_model::secure::{Output, Query, SecureEngine, SecureModel, Task};
use nectar_model::twin::PlainEngine;
use nectar_model::{Model, Suite, Weights};
use nectar_bench::fixtures::tiny;
use nectar_net::mem::run_pair;
use nectar_net::{Channel, MemChannel, NetError, Role, Stats};
use std::path::Path;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= b as u64;
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

struct Hashing<'a> {
    inner: &'a mut MemChannel,
    h: u64,
}

impl Channel for Hashing<'_> {
    fn send(&mut self, msg: &[u8]) -> Result<(), NetError> {
        fnv(&mut self.h, &(msg.len() as u64).to_le_bytes());
        fnv(&mut self.h, msg);
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

fn output_hash(o: &Output) -> u64 {
    let mut h = FNV_OFFSET;
    match o {
        Output::Embedding(v) | Output::Logits(v) => {
            for x in v {
                fnv(&mut h, &x.to_bits().to_le_bytes());
            }
        }
        Output::Tokens(t) => {
            for x in t {
                fnv(&mut h, &x.to_le_bytes());
            }
        }
        Output::Nothing => fnv(&mut h, b"nothing"),
        Output::Batch(outs) => {
            for o in outs {
                fnv(&mut h, &output_hash(o).to_le_bytes());
            }
        }
    }
    h
}

/// The client's private input of a case.
#[derive(Clone)]
enum In {
    Ids(Vec<u32>),
    Pixels(Vec<f32>),
}

struct Case {
    name: &'static str,
    write: fn(&Path, u64) -> Result<(), nectar_model::ModelError>,
    seed: u64,
    task: Task,
    input: In,
    /// The suite as `PRESET[+OP=PROTO]...`; every case runs with `ot=iknp` added (fast setup).
    suite: &'static str,
}

/// Pinned values: (server bytes hash, client bytes hash, client output hash, twin output hash).
type Pins = (u64, u64, u64, u64);

fn run(case: &Case) -> Pins {
    let dir = tempfile::tempdir().unwrap();
    (case.write)(dir.path(), case.seed).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let w = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let suite = Suite::parse(&format!("{}+ot=iknp", case.suite)).unwrap();
    let len = match &case.input {
        In::Ids(ids) => ids.len(),
        In::Pixels(_) => 0,
    };
    let party = |role: Role, ch: &mut MemChannel| -> (u64, Output) {
        let mut hc = Hashing {
            inner: ch,
            h: FNV_OFFSET,
        };
        let out = {
            let mut e =
                SecureEngine::setup(&mut hc, role, &suite, Prg::new([role as u8 + 40; 16])).unwrap();
            let weights: Option<&dyn nectar_model::secure::WeightSource> =
                (role == Role::Server).then_some(&w);
            let m = SecureModel::new(model.config(), weights).unwrap();
            match (&case.input, role) {
                (In::Pixels(px), Role::Client) => m.run_image(&mut e, Some(px)).unwrap(),
                (input, _) => {
                    let ids = match (input, role) {
                        (In::Ids(ids), Role::Client) => Some(ids.clone()),
                        _ => None,
                    };
                    m.run(
                        &mut e,
                        &Query {
                            task: case.task.clone(),
                            ids,
                            len,
                        },
                    )
                    .unwrap()
                }
            }
        };
        (hc.h, out)
    };
    let ((hs, so), (hc, co)) = run_pair(|ch| party(Role::Server, ch), |ch| party(Role::Client, ch));
    assert_eq!(so, Output::Nothing, "{}: the server learns nothing", case.name);
    let twin = {
        let m = SecureModel::new(model.config(), Some(&w)).unwrap();
        let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &suite).unwrap();
        match &case.input {
            In::Pixels(px) => m.run_image(&mut e, Some(px)).unwrap(),
            In::Ids(ids) => m
                .run(
                    &mut e,
                    &Query {
                        task: case.task.clone(),
                        ids: Some(ids.clone()),
                        len,
                    },
                )
                .unwrap(),
        }
    };
    (hs, hc, output_hash(&co), output_hash(&twin))
}

fn check(case: Case, want: Pins) {
    let got = run(&case);
    println!(
        "{}: ({:#018x}, {:#018x}, {:#018x}, {:#018x})",
        case.name, got.0, got.1, got.2, got.3
    );
    assert_eq!(got, want, "{}: transcript or output changed", case.name);
}

#[test]
fn bert_embed_transcript() {
    check(
        Case {
            name: "bert embed",
            write: tiny::write_tiny_bert,
            seed: 11,
            task: Task::Embed,
            input: In::Ids(vec![1, 7, 3, 9, 2, 14]),
            suite: "bumblebee",
        },
        PIN_BERT_EMBED,
    );
}

/// A batch of three inputs (issue 52): attention per input, padded into one product.
#[test]
fn bert_embed_batch_transcript() {
    check(
        Case {
            name: "bert embed batch",
            write: tiny::write_tiny_bert,
            seed: 11,
            task: Task::Batch { each: Box::new(Task::Embed), lens: vec![6, 3, 4] },
            input: In::Ids(vec![1, 7, 3, 9, 2, 14, 4, 11, 6, 2, 5, 8, 13]),
            suite: "nectar",
        },
        PIN_BERT_EMBED_BATCH,
    );
}

#[test]
fn bert_classify_shared_ids_mixed_transcript() {
    check(
        Case {
            name: "bert classify shared-ids mixed",
            write: tiny::write_tiny_bert,
            seed: 12,
            task: Task::Classify,
            input: In::Ids(vec![2, 40, 41, 5, 17]),
            suite: "bumblebee+embed=shared-ids+act-ring=mixed",
        },
        PIN_BERT_CLASSIFY,
    );
}

#[test]
fn gpt2_generate_transcript() {
    check(
        Case {
            name: "gpt2 generate",
            write: tiny::write_tiny_gpt2,
            seed: 5,
            task: Task::Generate { n_new: 3 },
            input: In::Ids(vec![3, 17, 42, 8]),
            suite: "bumblebee",
        },
        PIN_GPT2,
    );
}

#[test]
fn gpt2_generate_ot_products_mixed_transcript() {
    check(
        Case {
            name: "gpt2 generate mul=ot mixed",
            write: tiny::write_tiny_gpt2,
            seed: 6,
            task: Task::Generate { n_new: 2 },
            input: In::Ids(vec![9, 1, 30]),
            suite: "bumblebee+mul=ot+act-ring=mixed",
        },
        PIN_GPT2_OT_MIXED,
    );
}

#[test]
fn llama_generate_transcript() {
    check(
        Case {
            name: "llama generate",
            write: tiny::write_tiny_llama,
            seed: 7,
            task: Task::Generate { n_new: 2 },
            input: In::Ids(vec![5, 11, 2]),
            suite: "bumblebee",
        },
        PIN_LLAMA,
    );
}

#[test]
fn vit_classify_transcript() {
    check(
        Case {
            name: "vit classify",
            write: tiny::write_tiny_vit,
            seed: 21,
            task: Task::Classify,
            input: In::Pixels(tiny::tiny_image(tiny::VIT_CHANNELS, tiny::VIT_IMAGE, 5)),
            suite: "bumblebee",
        },
        PIN_VIT,
    );
}

/// Re-pinned 2026-11-24 (transcripts only; every output and twin hash unchanged): the bOLEe
/// parameters and flood were sized for 40 bits per session and query reuse was confined to one
/// operator (issue 18 item 4). The mul=ot case does not use bOLEe and kept its pins.
/// Re-pinned 2026-11-26 (the server's transcript only; the client's transcript, every output and
/// twin hash unchanged): the server multiplies its weights' OLT blocks at the response level
/// (`nectar_linear::olt::product_level`), so its masked responses carry other noise.
/// Re-pinned 2026-11-27 (transcripts only; every output and twin hash unchanged): bOLEe queries
/// and responses and OLT queries travel as frames of `nectar_linear::FRAME_CTS` ciphertexts, an
/// OLT response as one frame per output ciphertext (issue 17, streaming). Then (the server's
/// transcript only): `acot_both` sends both directions' ACOT corrections in one flight.
/// Re-pinned 2026-11-28 (issue 48, fewer flights): ACOT-based steps are led by the party that
/// sent last (`nectar_mpc` module `ctx`), OT products run both cross terms in one direction,
/// the digit OTs of a comparison share one round trip; the Newton rsqrt (LayerNorm, RMSNorm)
/// takes two product layers per step at 6 more fractional bits, so the outputs and twins of the
/// suites with it changed (generated tokens did not). Re-pinned the same day (issue 49,
/// transcripts of generations only): a decoding step's per-head attention products run as one
/// block-diagonal OLT.
/// Re-pinned 2026-11-28 (issue 52; transcripts and the secure outputs of encoders only; every
/// twin hash and every generated token unchanged): a prompt's attention products run the heads
/// in block-diagonal groups chosen by the OLT cost model (`SecureEngine::head_group`).
/// Re-pinned 2026-11-29 (issue 47; the `nectar` cases' transcripts and the secure outputs of
/// encoders only; every twin hash and every generated token unchanged): the default suite's
/// embedding lookup runs on Nimbus's COP (`embed = nimbus-cop`); then (the LLaMA case's
/// transcripts only, its tokens unchanged) its SiLU is Nimbus's fitted quartic (`silu = nimbus`).
/// Re-pinned 2026-11-29 (issue 49; the LLaMA `nectar` and `nimbus` cases' transcripts only,
/// every output and twin hash unchanged): `norm = outer`'s RMSNorm forms `r' ⊗ γ` with `γ`
/// unscaled at 12 more fractional bits and truncates `x ⊙ (r' ⊗ γ)` once by `f + 12 + k`
/// (`nectar_nn::norm::outer::rms_apply`): the same messages, other truncation shifts.
/// Re-pinned 2026-11-29 (issue 48; the `nectar` and `nimbus` cases: transcripts, and the
/// encoders' secure outputs and twins; every generated token unchanged): the default takes
/// `reciprocal = newton2` and `rsqrt = newton2` (finer normalisation, two Newton steps).
/// Re-pinned 2026-11-29 (issue 48, bytes; every case, both blocks): OT products' COTs have
/// graded widths (bit j over Z_2^(l−j)) and bOLEe vs OT products is chosen by their bits
/// (`nectar_nn::secure::bole_pays`); every transcript and the secure outputs of encoders changed
/// (truncation's {0, −1} falls on other elements), every twin hash and generated token did not.
/// Re-pinned 2026-11-30 (issue 49; every causal case and the padded batch: transcripts, and
/// the batch's secure output; every twin hash and generated token unchanged): a masked softmax
/// runs its exponential and final product on the visible entries only (`nectar_nn::softmax`,
/// `Visible`), its masked probabilities 0 exactly instead of a truncation's {0, −1}; then the
/// same day (the same cases but `nectar+softmax=grid`) its binary max trees compare each row's
/// visible scores only (`nectar_nn::max::max_ragged_rows`).
/// Re-pinned 2026-11-30 (issue 49, session 43; transcripts only: every secure output, twin
/// hash and generated token unchanged): under `olt-ring = narrow` (`nectar`, its grid variant
/// and the batch) the client's weight queries travel at the OLT's response level
/// (`nectar_linear::QueryLevel`) with their windows priced so; every generating case's greedy
/// argmax compares in `Z_2^(f+20)` (`nectar_nn::max::argmax_rows_narrow`).
/// Re-pinned 2026-11-30 (issue 49, InterLeave): a partial InterLeave or PackLWEs group doubles a
/// butterfly with an absent half instead of running its automorphism (`nectar_linear::interleave`),
/// so the response ciphertexts of OLTs with fewer products than a group differ (garbage instead of
/// zeros in unread slots): the client hash of `nectar`, `nimbus` and the grid variant, and both
/// hashes of the batch, whose role-flipped OLTs the client evaluates. Every output and twin hash
/// and generated token is unchanged.
const PIN_BERT_EMBED: Pins = (0x31bc09e988a1eb88, 0xfcc63a2193631aa5, 0x9f50c7b6e263f267, 0xdc488cdaf95bb4f9);
/// Re-pinned 2026-11-30 (issue 49): `norm = outer` forms `r ⊗ γ` by OT OLEs where their bits
/// are fewer than the OLT's (every tiny model's rows), so the transcripts under `nectar` and
/// `nimbus` and their encoders' secure outputs changed (the OLE's raw product is exact where
/// the OLT's may be off by one); every twin hash and generated token did not.
const PIN_BERT_EMBED_BATCH: Pins = (0x73b2dfe1cd43449a, 0x7441258e14cc2905, 0xb6528694e69e3009, 0x0ba0af4097413316);
const PIN_BERT_CLASSIFY: Pins = (0xcf3ab05783dcbb41, 0xada4d21eb4145131, 0xf9506f823917a758, 0xd879d948488979b7);
const PIN_GPT2: Pins = (0x50cace1295992aef, 0x4292dd3954a61bb9, 0x0682f5d74db5bd9d, 0x0682f5d74db5bd9d);
const PIN_GPT2_OT_MIXED: Pins = (0x927931be548880ec, 0x68a17a3607ac6819, 0x391b611203cbca15, 0x391b611203cbca15);
/// Re-pinned 2026-11-30 (issue 49): grouped-query attention multiplies each key/value head's
/// K^T and V once for its group of query heads (the group's query rows stacked) instead of a
/// copy per query head: the LLaMA transcripts changed, their twins and tokens did not.
const PIN_LLAMA: Pins = (0xdc4545d83030c873, 0x87be60bd2af206bd, 0x67ff4ec09152fb1a, 0x67ff4ec09152fb1a);
const PIN_VIT: Pins = (0x2bce4c3a4e58f48a, 0xbb0f036e619c4423, 0x7c4e2608ecd9af2a, 0x33bde6f53d9cc7ab);

/// The other presets' nonlinear protocols (norm, softmax, rsqrt, exp, reciprocal, GeLU, SiLU):
/// the default suite's `outer` LayerNorm / RMSNorm and coarse softmax, East's Eq. (9) norms with
/// the Determine rsqrt and OPPE, ROTL's LUTs; and BLB's per-operator CKKS matmuls (both kinds
/// share one CKKS key set); the default with the grid row max (`softmax = grid`).
#[test]
fn bert_embed_preset_transcripts() {
    let ids = [4, 9, 13, 2, 21];
    for (suite, seed, len, want) in [
        ("nectar", 31, 5, PIN_BERT_NECTAR),
        ("east", 32, 5, PIN_BERT_EAST),
        ("rotl", 33, 5, PIN_BERT_ROTL),
        ("bumblebee+matmul=ckks+matmul-shared=ckks", 36, 4, PIN_BERT_CKKS),
        ("nimbus", 37, 5, PIN_BERT_NIMBUS),
        ("nectar+softmax=grid", 39, 5, PIN_BERT_GRID),
    ] {
        check(
            Case {
                name: suite,
                write: tiny::write_tiny_bert,
                seed,
                task: Task::Embed,
                input: In::Ids(ids[..len].to_vec()),
                suite,
            },
            want,
        );
    }
}

/// RMSNorm and SiLU under the default suite, East's and Nimbus's; decoding rows under the grid
/// row max.
#[test]
fn llama_generate_preset_transcripts() {
    for (suite, seed, want) in [
        ("nectar", 34, PIN_LLAMA_NECTAR),
        ("east", 35, PIN_LLAMA_EAST),
        ("nimbus", 38, PIN_LLAMA_NIMBUS),
        ("nectar+softmax=grid", 40, PIN_LLAMA_GRID),
    ] {
        check(
            Case {
                name: suite,
                write: tiny::write_tiny_llama,
                seed,
                task: Task::Generate { n_new: 2 },
                input: In::Ids(vec![6, 3, 12]),
                suite,
            },
            want,
        );
    }
}
/// `matmul = olt-ahead` (issue 49; the default's): three new tokens, so the prompt prepares the
/// first decoding step's rows, the first step uses them and prepares the second's, and the
/// second uses them only. Its transcripts differ from the plain OLT's under the same seeds (the
/// prepared path ran: an exchange of `x − r` and a stored response instead of a query and its
/// response), while the generated tokens equal the twin's and the plain OLT's.
#[test]
fn generate_ahead_transcripts() {
    for (name, write, seed, ids, want) in [
        ("llama olt-ahead", tiny::write_tiny_llama as fn(&Path, u64) -> Result<(), nectar_model::ModelError>, 41, vec![6, 3, 12], PIN_LLAMA_AHEAD),
        ("gpt2 olt-ahead", tiny::write_tiny_gpt2, 42, vec![3, 17, 42, 8], PIN_GPT2_AHEAD),
    ] {
        let case = |suite| Case { name, write, seed, task: Task::Generate { n_new: 3 }, input: In::Ids(ids.clone()), suite };
        let plain = run(&case("nectar+matmul=olt"));
        let got = run(&case("nectar"));
        println!("{name}: ({:#018x}, {:#018x}, {:#018x}, {:#018x})", got.0, got.1, got.2, got.3);
        assert!(got.0 != plain.0 && got.1 != plain.1, "{name}: no row was prepared ahead");
        assert_eq!((got.2, got.3), (plain.2, plain.3), "{name}: tokens differ from the plain OLT's");
        assert_eq!(got.2, got.3, "{name}: the client's tokens differ from the twin's");
        assert_eq!(got, want, "{name}: transcript or output changed");
    }
}

/// Pinned 2026-11-30 (issue 49).
const PIN_LLAMA_AHEAD: Pins = (0x4e56ff8bf654ea62, 0xac06bcb2b547ecdc, 0x539cdf324dacfaed, 0x539cdf324dacfaed);
const PIN_GPT2_AHEAD: Pins = (0x0e7f9115a5a81780, 0x97998fed93a8dbc7, 0x0682f5d74db5bd9d, 0x0682f5d74db5bd9d);

/// Pinned 2026-11-28 at 18474ca, before the rsqrt, norm and softmax kinds moved into the
/// registry (issue 46); re-pinned the same day for issue 48 (see above), and on 2026-11-29 with
/// the `nimbus` pins for the default's `newton2` reciprocal and rsqrt (see above).
/// Re-pinned 2026-11-30 (issue 49): `norm = outer` forms `r ⊗ γ` by OT OLEs where their bits
/// are fewer than the OLT's (every tiny model's rows), so the transcripts under `nectar` and
/// `nimbus` and their encoders' secure outputs changed (the OLE's raw product is exact where
/// the OLT's may be off by one); every twin hash and generated token did not.
/// Re-pinned 2026-12-01 (issues 48/49), with every default-based pin (`PIN_BERT_EMBED_BATCH`,
/// `PIN_*_AHEAD`, `PIN_*_NIMBUS`, `PIN_*_GRID`): the default's reciprocal and rsqrt are
/// `newton1` (an eighth-octave guess, one Newton step in three product layers), so the encoders'
/// twins and outputs moved in their last bits (a different approximation of the same function,
/// within its stated error); every generated token and every decoder twin hash is unchanged.
/// Re-pinned 2026-12-01 (issues 48/52, session 48), the same default-based pins: the default's
/// attention products run their two OLTs in the same flights (`matmul-shared = olt-duplex`:
/// each party encrypts one cross term's query and evaluates the other's), so every transcript
/// changed and the encoders' secure outputs moved by the OLT's H2A LSB (other randomness);
/// every twin hash and generated token is unchanged. (`mul = bole-duplex` splits products of
/// two chunks or more only, none of them in these tiny models.)
const PIN_BERT_NECTAR: Pins = (0xcea7ad1870681b8a, 0xd44ef30c33c998b0, 0x7137ea24307e1684, 0xeb0d736aa573a0ce);
const PIN_BERT_EAST: Pins = (0xaad95844dfb02b13, 0x73817b086b9386b3, 0xcf98f3f13c4d0dc4, 0x78fcaa65e35febcc);
const PIN_BERT_ROTL: Pins = (0x12fad6fad00513de, 0x6120ca9f53bbfb0e, 0xff04ee483b1a525b, 0xeb16351625208a38);
/// `PIN_LLAMA_*` re-pinned 2026-11-30 with `PIN_LLAMA` (grouped-query attention), `nectar`'s and
/// `nimbus`'s again for the OLE `r ⊗ γ` above; twins unchanged. `PIN_LLAMA_NECTAR` and
/// `PIN_LLAMA_GRID` re-pinned 2026-11-30 again (issue 49, transcripts only; every output and twin
/// hash unchanged): the default's decoding step runs its weight products on rows prepared a step
/// ahead (`matmul = olt-ahead`, [`generate_ahead_transcripts`]).
const PIN_LLAMA_NECTAR: Pins = (0x4fc32b69c1f79fdd, 0x819dedb6e5436e47, 0xb604bb7352ea6eda, 0xb604bb7352ea6eda);
const PIN_LLAMA_EAST: Pins = (0xc7fa5c77214b7ad8, 0x36ea794d5db8752e, 0x9ec906393759c165, 0x9ec906393759c165);

/// Pinned 2026-11-29 (issue 47): the `nimbus` preset (COP matmuls and lookup, the fitted GeLU,
/// SiLU and exp); re-pinned 2026-11-30 with `PIN_BERT_NECTAR` (the OLE `r ⊗ γ`) and `PIN_LLAMA`.
const PIN_BERT_NIMBUS: Pins = (0xf7162e784c0f23e0, 0x8a1dca638ade2983, 0x7e54f37c7888339b, 0x13763f505dea1183);
const PIN_LLAMA_NIMBUS: Pins = (0x77788bf86cc038de, 0xd8bda7f2175cd7d0, 0x8f8aaba7d8bde3a1, 0x8f8aaba7d8bde3a1);

/// Pinned 2026-11-28 before the matmul kinds moved into the registry (issue 46); re-pinned
/// 2026-11-29 (issue 50): the ct × pt matmul rescales each giant step's sum before rotating it,
/// so the server's CKKS noise and the shares differ (the twin's hash, last, is unchanged).
/// Pinned 2026-11-30 (issue 48): `softmax = grid` (the row max by one rounding and all-pairs
/// groups, the row sums' reciprocal in `Z_2^45`) under the default suite.
const PIN_BERT_GRID: Pins = (0x428aa718cd5483d6, 0xa1450d0ebb21a243, 0x3ca8bb5ce60f4946, 0xab186da7367a5fea);
const PIN_LLAMA_GRID: Pins = (0x31e473eed69777b3, 0xa8ca57641c87b9fe, 0xccace8590440b25a, 0xccace8590440b25a);

const PIN_BERT_CKKS: Pins = (0x5826778810401b51, 0x02deb2246fd2bce8, 0xa1e2521094d00eca, 0x0c2ad28cfa485650);
