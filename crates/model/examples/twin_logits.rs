//! Where a LLaMA GGUF model's fixed-point error comes from: the next-token logits of the
//! plaintext twin of a suite ([`PlainEngine`], the secure run's arithmetic without the
//! protocols) against nectar's f32 reference, with every operator approximated, and with each
//! of the suite's nonlinear operators approximated alone (the others exact) — the attribution
//! `nectar accuracy` gives for encoder models. The server's calibration (statistics shifts)
//! is applied as `nectar serve` applies it.
//!
//! usage: cargo run --release -p nectar-model --example twin_logits -- MODEL.gguf SUITE IDS [IDS ...]
//!
//! IDS is a comma-separated list of token ids. For each list and each setting prints a JSON
//! line: the max |Δ| of the logits, the f32 reference's two best tokens and their gap, and the
//! twin's best token.

use std::path::Path;

use nectar_math::FixedPoint;
use nectar_model::config::ModelConfig;
use nectar_model::gguf::{GgufFile, GgufLlama};
use nectar_model::secure::SecureModel;
use nectar_model::twin::PlainEngine;
use nectar_model::{Model, Network, Suite};

fn fail(msg: String) -> ! {
    eprintln!("twin_logits: {msg}");
    std::process::exit(1)
}

/// The two best (index, logit) of `v`.
fn top2(v: &[f64]) -> [(usize, f64); 2] {
    let mut best = [(0, f64::NEG_INFINITY), (0, f64::NEG_INFINITY)];
    for (i, &x) in v.iter().enumerate() {
        if x > best[0].1 {
            best[1] = best[0];
            best[0] = (i, x);
        } else if x > best[1].1 {
            best[1] = (i, x);
        }
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: twin_logits MODEL.gguf SUITE IDS [IDS ...]   (IDS: comma-separated token ids)");
        std::process::exit(2);
    }
    let path = Path::new(&args[0]);
    let suite = Suite::parse(&args[1]).unwrap_or_else(|e| fail(format!("suite {}: {e}", args[1])));
    let model = Model::load(path).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    let Network::Llama(llama) = model.network() else { fail(format!("{} is not a LLaMA model", path.display())) };
    let src = GgufFile::open(path).and_then(GgufLlama::new).unwrap_or_else(|e| fail(format!("{}: {e}", path.display())));
    let mut cfg = src.config().clone();
    let hi = nectar_nn::rsqrt::LAYERNORM_RANGE.newton.hi;
    cfg.scale_shifts = nectar_model::calibrate::model_scale_shifts(&model, FixedPoint::BUMBLEBEE, hi).unwrap_or_else(|e| fail(format!("calibration: {e}")));
    eprintln!("statistics shifts: {}", serde_json::json!(cfg.scale_shifts));
    let config = ModelConfig::Llama(cfg);
    let sm = SecureModel::new(&config, Some(&src)).unwrap_or_else(|e| fail(format!("secure model: {e}")));
    let SecureModel::Llama(sl) = &sm else { fail("not a LLaMA".into()) };
    // Every approximated operator, then each alone (the others exact).
    let ops = ["silu", "softmax", "rmsnorm"];
    let mut settings: Vec<(String, Vec<&str>)> = vec![("all approximated".into(), vec![]), ("all exact".into(), ops.to_vec())];
    for op in ops {
        settings.push((format!("{op} alone"), ops.iter().copied().filter(|o| *o != op).collect()));
    }
    for list in &args[2..] {
        let ids: Vec<u32> = list
            .split(',')
            .map(|s| s.trim().parse().unwrap_or_else(|_| fail(format!("not a token id: {s:?}"))))
            .collect();
        let want: Vec<f64> = llama
            .next_token_logits(&ids)
            .unwrap_or_else(|e| fail(format!("{ids:?}: {e}")))
            .into_iter()
            .map(f64::from)
            .collect();
        let [w0, w1] = top2(&want);
        for (label, exact) in &settings {
            let mut e = PlainEngine::new(FixedPoint::BUMBLEBEE, &suite)
                .and_then(|e| e.with_exact(exact))
                .unwrap_or_else(|e| fail(format!("twin: {e}")));
            let mut cache = sl.new_cache();
            let h = sl.forward_step(&mut e, Some(&ids), ids.len(), &mut cache).unwrap_or_else(|e| fail(format!("{ids:?}: {e}")));
            let lg = sl.last_logits(&mut e, &h, ids.len()).unwrap_or_else(|e| fail(format!("{ids:?}: {e}")));
            let got = FixedPoint::BUMBLEBEE.decode_vec(&lg);
            let err = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).fold(0f64, f64::max);
            let [g0, _] = top2(&got);
            println!(
                "{}",
                serde_json::json!({
                    "ids": ids, "setting": label, "max_abs_err": err,
                    "f32_top2": [w0.0, w1.0], "f32_gap": w0.1 - w1.1,
                    "twin_top1": g0.0, "twin_margin": got[w0.0] - got[w1.0], "top1_equal": g0.0 == w0.0,
                })
            );
        }
    }
}
