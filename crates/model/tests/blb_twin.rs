//! BLB's plaintext twin and fused-block executor (`nectar-blb`) on tiny checkpoints, through
//! the model layer's conversion (`secure::blb_spec`): the steady-state layer graph evaluates to
//! the model's own layer (with BLB's approximations: up to rounding; exact: within their
//! error), and every fused block of tiny BERT's plan, on the slot simulator and on real CKKS,
//! equals the twin at the plan's depth.

use nectar_blb::eval::{eval_layer, eval_values, p4_pieces, Tensor, CAUSAL_MASK, T_EXP};
use nectar_blb::exec::{layouts, pack, run_block, unpack, CtTensor, Layout};
use nectar_blb::graph::{LayerGraph, Operand};
use nectar_blb::{FusionPlan, LayerSpec, LinearKind, OpKind};
use nectar_linear::ckks_matmul::{SlotOps, SlotSim};
use nectar_math::Prg;
use nectar_model::block::{BlockConfig, BlockNames, Placement};
use nectar_model::config::{Activation, ModelConfig};
use nectar_model::reference::{BlockWeights, Dense};
use nectar_model::secure::blb_spec::layer_params;
use nectar_model::weights::Weights;
use std::collections::HashMap;

/// `x·W^T + b` (rows of `x`), `scale` applied to the result.
fn dense(d: &Dense, x: &Tensor) -> Tensor {
    let mut out = Tensor::zeros(x.rows, d.out_dim);
    for r in 0..x.rows {
        for j in 0..d.out_dim {
            let w = &d.w[j * d.in_dim..(j + 1) * d.in_dim];
            let b = d.b.as_ref().map_or(0.0, |b| b[j] as f64);
            out.data[r * d.out_dim + j] = b + (0..d.in_dim).map(|k| x.at(r, k) * w[k] as f64).sum::<f64>();
        }
    }
    out
}

fn cols(x: &Tensor, start: usize, n: usize) -> Tensor {
    let mut out = Tensor::zeros(x.rows, n);
    for r in 0..x.rows {
        for c in 0..n {
            out.data[r * n + c] = x.at(r, start + c);
        }
    }
    out
}

fn add(a: &Tensor, b: &Tensor) -> Tensor {
    Tensor { rows: a.rows, cols: a.cols, data: a.data.iter().zip(&b.data).map(|(x, y)| x + y).collect() }
}

fn norm(w: &BlockWeights, name: &str, x: &Tensor, eps: f64) -> Tensor {
    let n = w.norm(name).unwrap();
    let d = x.cols;
    let mut out = x.clone();
    for r in 0..x.rows {
        let row = &x.data[r * d..(r + 1) * d];
        let mean = row.iter().sum::<f64>() / d as f64;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
        for c in 0..d {
            out.data[r * d + c] = (row[c] - mean) / (var + eps).sqrt() * n.g[c] as f64 + n.b.as_ref().map_or(0.0, |b| b[c] as f64);
        }
    }
    out
}

/// `W_O·Attn(QKV(a))`: BLB's approximations (`approx`) or the exact softmax.
fn attention(w: &BlockWeights, cfg: &BlockConfig, nm: &BlockNames, a: &Tensor, approx: bool) -> Tensor {
    let (d, h) = (cfg.hidden, cfg.heads);
    let dh = d / h;
    let qkv: Vec<Tensor> = match &nm.qkv[..] {
        [one] => {
            let t = dense(w.dense(one).unwrap(), a);
            (0..3).map(|i| cols(&t, i * d, d)).collect()
        }
        many => many.iter().map(|n| dense(w.dense(n).unwrap(), a)).collect()
    };
    let l = a.rows;
    let mut ctx = Tensor::zeros(l, d);
    for hh in 0..h {
        for i in 0..l {
            let s: Vec<f64> = (0..l)
                .map(|j| {
                    let dot: f64 = (0..dh).map(|t| qkv[0].at(i, hh * dh + t) * qkv[1].at(j, hh * dh + t)).sum::<f64>() / (dh as f64).sqrt();
                    if cfg.causal && j > i { dot + CAUSAL_MASK } else { dot }
                })
                .collect();
            let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    let t = v - m;
                    if approx {
                        if t >= T_EXP { (1.0 + t / 64.0).powi(64) } else { 0.0 }
                    } else if cfg.causal && j > i {
                        0.0
                    } else {
                        t.exp()
                    }
                })
                .collect();
            let z: f64 = e.iter().sum();
            for t in 0..dh {
                ctx.data[i * d + hh * dh + t] = (0..l).map(|j| e[j] / z * qkv[2].at(j, hh * dh + t)).sum();
            }
        }
    }
    dense(w.dense(&nm.o).unwrap(), &ctx)
}

/// The activation of `u`: P4's pieces summed (`approx`) or the model's own.
fn act(u: &Tensor, kind: Activation, approx: bool) -> Tensor {
    if approx {
        let [a, b, c] = p4_pieces(u);
        return add(&add(&a, &b), &c);
    }
    let mut v: Vec<f32> = u.data.iter().map(|&x| x as f32).collect();
    nectar_model::ops::activate(&mut v, kind);
    Tensor { rows: u.rows, cols: u.cols, data: v.into_iter().map(|x| x as f64).collect() }
}

/// One layer from its input `x` (post-norm: the previous layer's output; pre-norm: the
/// residual stream): returns (the norm output / stream value the graph hands over, the
/// FFN pre-activation `u`).
fn layer_head(w: &BlockWeights, cfg: &BlockConfig, nm: &BlockNames, x: &Tensor, approx: bool) -> (Tensor, Tensor) {
    match cfg.placement {
        Placement::Post => {
            let a = norm(w, &nm.norm1, &add(&attention(w, cfg, nm, x, approx), x), cfg.eps);
            let u = dense(w.dense(&nm.ffn_in[0]).unwrap(), &a);
            (a, u)
        }
        Placement::Pre => {
            let h = add(x, &attention(w, cfg, nm, &norm(w, &nm.norm1, x, cfg.eps), approx));
            let u = dense(w.dense(&nm.ffn_in[0]).unwrap(), &norm(w, &nm.norm2, &h, cfg.eps));
            (h, u)
        }
    }
}

/// The layer's tail: the FFN output and the next layer's input.
fn layer_tail(w: &BlockWeights, cfg: &BlockConfig, nm: &BlockNames, res: &Tensor, u: &Tensor, approx: bool) -> Tensor {
    let f = add(&dense(w.dense(&nm.ffn_out).unwrap(), &act(u, cfg.activation, approx)), res);
    match cfg.placement {
        Placement::Post => norm(w, &nm.norm2, &f, cfg.eps),
        Placement::Pre => f,
    }
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!((a.rows, a.cols), (b.rows, b.cols));
    a.data.iter().zip(&b.data).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

/// Runs the steady-state graph of layer 0 → 1 of a tiny model and checks it against the
/// layers computed directly: with BLB's approximations the same values up to rounding (the
/// graph's semantics: every operator, weight binding and sign), and against the exact
/// model within the approximations' error.
fn check(kind: &str, tokens: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, names): (BlockConfig, fn(usize) -> BlockNames) = match kind {
        "bert" => {
            nectar_bench::fixtures::tiny::write_tiny_bert(dir.path(), 5).unwrap();
            let ModelConfig::Bert(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
            (nectar_model::bert::block_config(&c), nectar_model::bert::block_names)
        }
        _ => {
            nectar_bench::fixtures::tiny::write_tiny_gpt2(dir.path(), 6).unwrap();
            let ModelConfig::Gpt2(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
            (nectar_model::gpt2::block_config(&c), nectar_model::gpt2::block_names)
        }
    };
    let weights = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let bw = BlockWeights::load(&weights, &cfg, names, 2).unwrap();
    let (n0, n1) = (names(0), names(1));
    let mut prg = Prg::new([3; 16]);
    let x0 = Tensor::new(tokens, cfg.hidden, (0..tokens * cfg.hidden).map(|_| (prg.next_u128() % 2001) as f64 / 1000.0 - 1.0).collect()).unwrap();
    let g = LayerGraph::build(&LayerSpec::from(&cfg), tokens);
    let params = layer_params(&bw, &cfg, &n0, &n1).unwrap();
    let mut errs = Vec::new();
    for approx in [true, false] {
        let (res0, u0) = layer_head(&bw, &cfg, &n0, &x0, approx);
        let x1 = layer_tail(&bw, &cfg, &n0, &res0, &u0, approx);
        let (res1, u1) = layer_head(&bw, &cfg, &n1, &x1, approx);
        let mut inputs: Vec<Tensor> = p4_pieces(&u0).into();
        inputs.push(res0);
        let out = eval_layer(&g, &params, &inputs).unwrap();
        let get = |n: &str| &out.iter().find(|(k, _)| k == n).unwrap_or_else(|| panic!("output {n}")).1;
        let act1 = add(&add(get("prev.mux_f0"), get("prev.mux_f1")), get("prev.mux_x"));
        let (e_res, e_act) = (max_diff(get("prev.residual"), &res1), max_diff(&act1, &act(&u1, cfg.activation, approx)));
        eprintln!("{kind} ({tokens} tokens) graph vs {} layer: residual {e_res:.2e}, activation {e_act:.2e}", if approx { "BLB-approximated" } else { "exact" });
        errs.push((e_res, e_act));
    }
    // Same arithmetic in another order: f64 rounding only.
    assert!(errs[0].0 < 1e-9 && errs[0].1 < 1e-9, "{kind}: graph semantics differ from the layer: {:?}", errs[0]);
    // Exact model: P4's error (≤ 0.02 on [−2.7, 2.7]) and the exp's (4.3e−3) through one layer.
    assert!(errs[1].0 < 0.1 && errs[1].1 < 0.1, "{kind}: approximation error {:?}", errs[1]);
}

#[test]
fn bert_layer_graph_evaluates_to_the_layer() {
    check("bert", 7);
}

#[test]
fn gpt2_layer_graph_evaluates_to_the_layer() {
    check("gpt2", 9);
}

/// Tiny BERT's block configuration and its two layers' weights (the directory lives as long
/// as the fixture).
struct TinyBert {
    _dir: tempfile::TempDir,
    cfg: BlockConfig,
    bw: BlockWeights,
}

fn tiny_bert() -> TinyBert {
    let dir = tempfile::tempdir().unwrap();
    nectar_bench::fixtures::tiny::write_tiny_bert(dir.path(), 5).unwrap();
    let ModelConfig::Bert(c) = ModelConfig::from_file(&dir.path().join("config.json")).unwrap() else { panic!() };
    let cfg = nectar_model::bert::block_config(&c);
    let weights = Weights::open(&dir.path().join("model.safetensors")).unwrap();
    let bw = BlockWeights::load(&weights, &cfg, nectar_model::bert::block_names, 2).unwrap();
    TinyBert { _dir: dir, cfg, bw }
}

#[test]
fn wrong_inputs_and_unbound_values_are_errors() {
    let TinyBert { cfg, bw, .. } = tiny_bert();
    let (n0, n1) = (nectar_model::bert::block_names(0), nectar_model::bert::block_names(1));
    let params = layer_params(&bw, &cfg, &n0, &n1).unwrap();
    let g = LayerGraph::build(&LayerSpec::from(&cfg), 4);
    assert!(eval_layer(&g, &params, &[]).is_err());
    let bad: Vec<Tensor> = g.inputs.iter().map(|i| Tensor::zeros(i.shape.rows + 1, i.shape.cols)).collect();
    assert!(eval_layer(&g, &params, &bad).is_err());
    // A rotary graph over a layer's values without its rotated products is refused by name.
    let mut llama = LayerSpec::from(&cfg);
    (llama.activation, llama.rope) = (nectar_blb::spec::Activation::Silu, true);
    let gl = LayerGraph::build(&llama, 4);
    let zeros: Vec<Tensor> = gl.inputs.iter().map(|i| Tensor::zeros(i.shape.rows, i.shape.cols)).collect();
    let e = eval_layer(&gl, &params, &zeros).unwrap_err();
    assert!(e.to_string().contains("attn.q.rot"), "{e}");
}

/// The layer's inputs (P4 pieces of a random pre-activation, a random residual) and the
/// twin's value of every operator.
fn twin(t: &TinyBert, g: &LayerGraph, tokens: usize) -> (Vec<Tensor>, Vec<Tensor>) {
    let (n0, n1) = (nectar_model::bert::block_names(0), nectar_model::bert::block_names(1));
    let p = layer_params(&t.bw, &t.cfg, &n0, &n1).unwrap();
    let mut prg = Prg::new([4; 16]);
    let mut rand = |cols: usize, r: f64| Tensor::new(tokens, cols, (0..tokens * cols).map(|_| ((prg.next_u128() % 2001) as f64 / 1000.0 - 1.0) * r).collect()).unwrap();
    let u = rand(t.cfg.intermediate, 3.0);
    let mut inputs: Vec<Tensor> = p4_pieces(&u).into();
    inputs.push(rand(t.cfg.hidden, 1.0));
    let vals = eval_values(g, &p, &inputs).unwrap();
    (inputs, vals)
}

fn value<'a>(g: &LayerGraph, inputs: &'a [Tensor], vals: &'a [Tensor], v: Operand) -> &'a Tensor {
    let _ = g;
    match v {
        Operand::Input(i) => &inputs[i],
        Operand::Op(i) => &vals[i],
    }
}

/// Every fused block of tiny BERT's plan on the slot simulator, its inputs taken from the
/// twin and packed where the block wants them: each operator's value equals the twin's (up
/// to f64 rounding; the simulator adds no noise), at the plan's depth.
#[test]
fn fused_blocks_on_the_simulator_equal_the_twin() {
    let t = tiny_bert();
    let (tokens, l, s) = (8, 8, 64);
    let g = LayerGraph::build(&LayerSpec::from(&t.cfg), tokens);
    let (inputs, vals) = twin(&t, &g, tokens);
    let (n0, n1) = (nectar_model::bert::block_names(0), nectar_model::bert::block_names(1));
    let p = layer_params(&t.bw, &t.cfg, &n0, &n1).unwrap();
    let plan = FusionPlan::for_layer(&LayerSpec::from(&t.cfg), "tiny", 2, tokens).unwrap();
    let mut ran = 0;
    for b in plan.blocks() {
        let idx: Vec<usize> = b.ops.iter().map(|o| g.ops.iter().position(|x| x.name == o.name).unwrap()).collect();
        let sim = SlotSim::new(s);
        let want = layouts(&g, &idx, l, s).unwrap();
        let mut ins = HashMap::new();
        for &i in &idx {
            for &v in &g.ops[i].operands {
                if matches!(v, Operand::Op(j) if idx.contains(&j)) || ins.contains_key(&v) {
                    continue;
                }
                let val = value(&g, &inputs, &vals, v);
                let cts = pack(val, want[&v], l, s).unwrap().into_iter().map(|c| sim.encrypt(c, 12)).collect();
                ins.insert(v, CtTensor { rows: val.rows, cols: val.cols, layout: want[&v], cts });
            }
        }
        let out = run_block(&sim, &g, &p, &idx, l, &ins).unwrap_or_else(|e| panic!("block {}: {e}", b.index));
        for &i in &idx {
            let ct = &out[&i];
            let got = unpack(&ct.cts.iter().map(|c| c.v.clone()).collect::<Vec<_>>(), ct.rows, ct.cols, ct.layout, l, s).unwrap();
            let want = &vals[i];
            let err = got.data.iter().zip(&want.data).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
            let mag = want.data.iter().fold(1f64, |m, v| m.max(v.abs()));
            assert!(err <= 1e-9 * mag, "block {} op {}: error {err} (magnitude {mag})", b.index, g.ops[i].name);
        }
        // The levels the plan counts are the levels used.
        let used = 12 - out.values().flat_map(|t| t.cts.iter().map(|c| c.level)).min().unwrap();
        assert_eq!(used as u32, b.depth, "block {} depth", b.index);
        ran += 1;
    }
    assert_eq!(ran, 5, "every block runs");
}

/// Block 1 of tiny BERT (FFN output product, bias, residual, LayerNorm head: depth 4, row
/// sums by rotations) on real CKKS: `N = 2^13`, `Δ = 2^30` (data primes 45 + 4·30, special
/// 45: 210 of 218 bits), 512 tokens so that 16 and 40 columns fill whole ciphertexts. Every
/// operator decrypts to the twin's value within CKKS noise (fresh and key-switch errors
/// about `2^-20` relative at this `Δ`), at the plan's depth; the simulator's operation counts
/// equal the evaluator's.
#[test]
fn fused_block_1_on_ckks_equals_the_twin() {
    use nectar_he::ckks::{CkksEvaluator, CkksParams, CkksParamsLiteral, CkksSecretKey};
    use nectar_linear::ckks_matmul::CkksOps;
    let t = tiny_bert();
    let (tokens, l) = (512, 512);
    let params = CkksParams::new(CkksParamsLiteral::from_bit_sizes(1 << 13, &[45, 30, 30, 30, 30], Some(45), 30).unwrap()).unwrap();
    let s = params.slots();
    let g = LayerGraph::build(&LayerSpec::from(&t.cfg), tokens);
    let (inputs, vals) = twin(&t, &g, tokens);
    let (n0, n1) = (nectar_model::bert::block_names(0), nectar_model::bert::block_names(1));
    let p = layer_params(&t.bw, &t.cfg, &n0, &n1).unwrap();
    let plan = FusionPlan::for_layer(&LayerSpec::from(&t.cfg), "tiny", 2, tokens).unwrap();
    let b = plan.blocks().next().unwrap();
    assert_eq!(b.depth, 4);
    let idx: Vec<usize> = b.ops.iter().map(|o| g.ops.iter().position(|x| x.name == o.name).unwrap()).collect();
    let top = params.max_level();
    // The inputs, packed; first on the simulator for the rotation steps (Galois keys).
    let mut packed = HashMap::new();
    for &i in &idx {
        for &v in &g.ops[i].operands {
            if !matches!(v, Operand::Op(j) if idx.contains(&j)) {
                let val = value(&g, &inputs, &vals, v);
                packed.insert(v, (val.rows, val.cols, pack(val, Layout::Spatial, l, s).unwrap()));
            }
        }
    }
    let sim = SlotSim::new(s);
    let sim_in = packed.iter().map(|(&v, (r, c, cts))| (v, CtTensor { rows: *r, cols: *c, layout: Layout::Spatial, cts: cts.iter().map(|x| sim.encrypt(x.clone(), top)).collect() })).collect();
    run_block(&sim, &g, &p, &idx, l, &sim_in).unwrap();
    let mut prg = Prg::new([6; 16]);
    let sk = CkksSecretKey::generate(&params, &mut prg);
    let ev = CkksEvaluator::new(&params)
        .with_relin_key(sk.relin_key(&params, &mut prg).unwrap())
        .with_galois_keys(sk.galois_keys(&params, &sim.rotation_steps(), false, &mut prg).unwrap());
    let ops = CkksOps::new(&ev);
    let enc = |x: &[f64], prg: &mut Prg| sk.encrypt(&params, &params.encode_real(x, top, params.default_scale()).unwrap(), prg).unwrap();
    let ck_in = packed.iter().map(|(&v, (r, c, cts))| (v, CtTensor { rows: *r, cols: *c, layout: Layout::Spatial, cts: cts.iter().map(|x| enc(x, &mut prg)).collect() })).collect();
    let before = ops.counts();
    let out = run_block(&ops, &g, &p, &idx, l, &ck_in).unwrap();
    let used = ops.counts() - before;
    let sc = sim.counts();
    assert_eq!((used.rotations, used.ct_ct_mults, used.ct_pt_mults, used.rescales), (sc.rotations, sc.ct_ct_mults, sc.ct_pt_mults, sc.rescales));
    for &i in &idx {
        let ct = &out[&i];
        let dec: Vec<Vec<f64>> = ct.cts.iter().map(|c| sk.decrypt_decode(&params, c).unwrap().iter().map(|z| z.re).collect()).collect();
        let got = unpack(&dec, ct.rows, ct.cols, ct.layout, l, s).unwrap();
        let want = &vals[i];
        let err = got.data.iter().zip(&want.data).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
        let mag = want.data.iter().fold(1f64, |m, v| m.max(v.abs()));
        eprintln!("block 1 on CKKS: {:<16} max error {err:.2e} (magnitude {mag:.1}), level {}", g.ops[i].name, ct.cts[0].level());
        assert!(err <= 1e-3 * mag, "{}: error {err}", g.ops[i].name);
    }
    let lowest = out.values().flat_map(|t| t.cts.iter().map(|c| c.level())).min().unwrap();
    assert_eq!(top - lowest, 4, "the plan's depth");
}

/// A `matmul_cp` whose input comes off a ct-ct product (scale `Δ²/q`, as `W_O` after
/// `P·V` in block 4) and whose output is added to a value at `Δ`: the weight is scaled by
/// `Δ/Δ_in` and the result read at `Δ`, so the addition is accepted (real CKKS refuses
/// unequal scales) and correct.
#[test]
fn matmul_after_a_ct_ct_product_lands_on_the_scale() {
    use nectar_blb::graph::{LayerInput, Op, Plain, Shape};
    use nectar_he::ckks::{CkksEvaluator, CkksParams, CkksParamsLiteral, CkksSecretKey};
    use nectar_linear::ckks_matmul::CkksOps;
    let t = tiny_bert();
    let (l, d, ff) = (512, t.cfg.hidden, t.cfg.intermediate);
    let sh = |cols| Shape { rows: l, cols };
    let op = |name: &str, kind, operands: Vec<Operand>, input, output, plain| Op { name: name.into(), kind, operands, input, output, plain, heads: 1, subtract: false };
    let g = LayerGraph {
        inputs: vec![LayerInput { name: "h".into(), shape: sh(ff) }, LayerInput { name: "r".into(), shape: sh(d) }],
        ops: vec![
            op("h2", OpKind::Linear(LinearKind::EwmulCc), vec![Operand::Input(0), Operand::Input(0)], sh(ff), sh(ff), None),
            op("ffn.down", OpKind::Linear(LinearKind::MatmulCp), vec![Operand::Op(0)], sh(ff), sh(d), Some(Plain::Weight)),
            op("ffn.residual", OpKind::Linear(LinearKind::EwaddCc), vec![Operand::Op(1), Operand::Input(1)], sh(d), sh(d), None),
        ],
        outputs: vec![("y".into(), Operand::Op(2))],
        keys: l,
    };
    let (n0, n1) = (nectar_model::bert::block_names(0), nectar_model::bert::block_names(1));
    let p = layer_params(&t.bw, &t.cfg, &n0, &n1).unwrap();
    let mut prg = Prg::new([8; 16]);
    let mut rand = |cols: usize| Tensor::new(l, cols, (0..l * cols).map(|_| (prg.next_u128() % 2001) as f64 / 1000.0 - 1.0).collect()).unwrap();
    let inputs = vec![rand(ff), rand(d)];
    let vals = eval_values(&g, &p, &inputs).unwrap();
    let params = CkksParams::new(CkksParamsLiteral::from_bit_sizes(1 << 13, &[45, 30, 30, 30], Some(45), 30).unwrap()).unwrap();
    let s = params.slots();
    let idx = [0, 1, 2];
    let sim = SlotSim::new(s);
    let top = params.max_level();
    let packed: Vec<Vec<Vec<f64>>> = inputs.iter().map(|t| pack(t, Layout::Spatial, l, s).unwrap()).collect();
    let sim_in = (0..2).map(|i| (Operand::Input(i), CtTensor { rows: l, cols: inputs[i].cols, layout: Layout::Spatial, cts: packed[i].iter().map(|v| sim.encrypt(v.clone(), top)).collect() })).collect();
    run_block(&sim, &g, &p, &idx, l, &sim_in).unwrap();
    let sk = CkksSecretKey::generate(&params, &mut prg);
    let ev = CkksEvaluator::new(&params)
        .with_relin_key(sk.relin_key(&params, &mut prg).unwrap())
        .with_galois_keys(sk.galois_keys(&params, &sim.rotation_steps(), false, &mut prg).unwrap());
    let ops = CkksOps::new(&ev);
    let ck_in = (0..2)
        .map(|i| {
            let cts = packed[i].iter().map(|v| sk.encrypt(&params, &params.encode_real(v, top, params.default_scale()).unwrap(), &mut prg).unwrap()).collect();
            (Operand::Input(i), CtTensor { rows: l, cols: inputs[i].cols, layout: Layout::Spatial, cts })
        })
        .collect();
    let out = run_block(&ops, &g, &p, &idx, l, &ck_in).unwrap();
    let y = &out[&2];
    assert!((y.cts[0].scale() / params.default_scale() - 1.0).abs() < 1e-12, "the matmul lands on Δ");
    let dec: Vec<Vec<f64>> = y.cts.iter().map(|c| sk.decrypt_decode(&params, c).unwrap().iter().map(|z| z.re).collect()).collect();
    let got = unpack(&dec, l, d, Layout::Spatial, l, s).unwrap();
    let err = got.data.iter().zip(&vals[2].data).fold(0f64, |m, (a, b)| m.max((a - b).abs()));
    let mag = vals[2].data.iter().fold(1f64, |m, v| m.max(v.abs()));
    eprintln!("matmul after a ct-ct product: max error {err:.2e} (magnitude {mag:.1})");
    assert!(err <= 1e-3 * mag, "error {err}");
}
