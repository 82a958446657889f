//! nectar's GGUF reader and f32 LLaMA against llama.cpp's own Python package (`gguf`) and a
//! float64 numpy forward written the way llama.cpp computes (`tests/ref_gguf.py`: q/k used in
//! their stored row order with ggml's pairwise rotary embedding, so the un-permutation is
//! checked too):
//!
//! - a tiny 2-layer LLaMA written by `gguf.GGUFWriter` with a tensor of every supported type
//!   (F32, F16, BF16, Q8_0, Q4_0, Q4_1 quantised by `gguf.quants.quantize`; Q4_K, Q5_K, Q6_K as
//!   random blocks): every tensor dequantised equal to `gguf.quants.dequantize`, bit for bit,
//!   and the logits and greedy tokens equal to numpy's;
//! - SmolLM2-135M-Instruct, when `nectar fetch-model smollm2` has put it in the cache (`make
//!   test` does): the logits of a short prompt and its first greedy tokens.
//!
//! The logits differ from numpy's only by f32 rounding of the forward (the dequantised weights
//! are the same numbers): [`TINY_TOL`], [`SMOLLM2_TOL`].

use std::path::Path;
use std::process::Command;

use nectar_model::gguf::GgufFile;
use nectar_model::{home, Model, Network};
use serde_json::Value;

/// Logits of the tiny model reach ±50 (random K-quant weights): f32 rounding over two layers
/// (measured 1.2e-5).
const TINY_TOL: f64 = 5e-4;
/// SmolLM2's logits reach ±20 over 30 layers (measured 2.6e-5).
const SMOLLM2_TOL: f64 = 1e-3;

fn reference(args: &[&str]) -> Value {
    let probe = Command::new("python3").args(["-c", "import numpy, gguf"]).output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => panic!("python3 with numpy and gguf is required: run `pip install numpy gguf` (`make test` does it)"),
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("ref_gguf.py");
    let out = Command::new("python3").arg(script).args(args).output().expect("run python3");
    assert!(out.status.success(), "ref_gguf.py failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("ref_gguf.py output is JSON")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().expect("an array").iter().map(|x| x.as_f64().expect("a number")).collect()
}

fn ints(v: &Value) -> Vec<u32> {
    v.as_array().expect("an array").iter().map(|x| x.as_u64().expect("an id") as u32).collect()
}

fn max_abs(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).abs()).fold(0.0, f64::max)
}

fn ids_arg(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

#[test]
fn tiny_gguf_matches_the_gguf_package_and_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let ids = [3u32, 17, 42, 5, 0, 63, 8];
    let r = reference(&["tiny", dir.path().to_str().unwrap(), &ids_arg(&ids), "4"]);
    let path = dir.path().join("tiny.gguf");
    let f = GgufFile::open(&path).unwrap();
    let types = r["types"].as_object().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for t in f.tensors() {
        let got = f.read_f32(&t.name).unwrap();
        let raw = std::fs::read(dir.path().join(format!("{}.f32", t.name))).unwrap();
        let want: Vec<f32> = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got.len(), want.len(), "{}", t.name);
        let differ = got.iter().zip(&want).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        assert_eq!(differ, 0, "{} ({}): {differ} values differ from gguf.quants.dequantize", t.name, t.ty.name());
        assert_eq!(types[&t.name].as_str(), Some(t.ty.name()));
        seen.insert(t.ty.name());
    }
    assert_eq!(seen.len(), 9, "types covered: {seen:?}");
    let m = Model::load(&path).unwrap();
    let Network::Llama(l) = m.network() else { panic!("not llama") };
    let d = max_abs(&l.next_token_logits(&ids).unwrap(), &floats(&r["logits"]));
    eprintln!("tiny GGUF: max |logit - numpy| = {d:.3e}");
    assert!(d < TINY_TOL, "max |Δ| {d:e} >= {TINY_TOL:e}");
    assert_eq!(l.generate(&ids, 4).unwrap(), ints(&r["generated"]));
}

#[test]
fn smollm2_matches_numpy() {
    let dir = home::smollm2_dir(&home::default_home());
    assert!(
        home::smollm2_present(&home::default_home()),
        "SmolLM2 not found under {}: run `nectar fetch-model smollm2` (`make test` fetches it first)",
        dir.display()
    );
    let path = dir.join(home::SMOLLM2_FILE);
    let m = Model::load(&path).unwrap();
    let ids = m.tokenizer().unwrap().encode("The capital of France is").unwrap().ids;
    let r = reference(&["file", path.to_str().unwrap(), &ids_arg(&ids), "2"]);
    let Network::Llama(l) = m.network() else { panic!("not llama") };
    let d = max_abs(&l.next_token_logits(&ids).unwrap(), &floats(&r["logits"]));
    eprintln!("SmolLM2: max |logit - numpy| = {d:.3e} on {ids:?}");
    assert!(d < SMOLLM2_TOL, "max |Δ| {d:e} >= {SMOLLM2_TOL:e}");
    assert_eq!(l.generate(&ids, 2).unwrap(), ints(&r["generated"]));
}
