//! The tensors a config implies — names and shapes — checked against a checkpoint without
//! reading any tensor data, so that a `config.json` that does not match its weights is found
//! when a server starts, not in the middle of a client's query.
//!
//! Mirrors the loaders of the plaintext reference ([`crate::reference::BlockWeights::load`],
//! `Bert::load`, `Gpt2::load`, `Llama::load`, `Vit::load`), which read (and copy) every tensor.

use crate::block::{BlockConfig, BlockNames, Layout, NormKind};
use crate::config::ModelConfig;
use crate::weights::Weights;
use crate::ModelError;

/// One expected tensor: full name and shape.
pub type Expected = (String, Vec<usize>);

fn dense(out: &mut Vec<Expected>, name: &str, i: usize, o: usize, layout: Layout, bias: bool) {
    let w = match layout {
        Layout::OutIn => vec![o, i],
        Layout::InOut => vec![i, o],
    };
    out.push((format!("{name}.weight"), w));
    if bias {
        out.push((format!("{name}.bias"), vec![o]));
    }
}

fn norm(out: &mut Vec<Expected>, name: &str, d: usize, kind: NormKind) {
    out.push((format!("{name}.weight"), vec![d]));
    if kind == NormKind::LayerNorm {
        out.push((format!("{name}.bias"), vec![d]));
    }
}

/// The tensors of blocks `0..layers`, at the shapes `cfg` implies.
pub fn block_tensors(cfg: &BlockConfig, names: impl Fn(usize) -> BlockNames, layers: usize) -> Result<Vec<Expected>, ModelError> {
    let (h, ff, kvd) = (cfg.hidden, cfg.intermediate, cfg.kv_dim());
    let mut out = Vec::new();
    let parts = |names: &[String], outs: &[usize]| -> Result<Vec<(String, usize)>, ModelError> {
        match names {
            [one] => Ok(vec![(one.clone(), outs.iter().sum())]),
            many if many.len() == outs.len() => Ok(many.iter().cloned().zip(outs.iter().copied()).collect()),
            _ => Err(ModelError::Unsupported(format!("{} weight tensors for a product of {} parts", names.len(), outs.len()))),
        }
    };
    for l in 0..layers {
        let nm = names(l);
        for (name, o) in parts(&nm.qkv, &[h, kvd, kvd])? {
            dense(&mut out, &name, h, o, cfg.layout, cfg.bias);
        }
        dense(&mut out, &nm.o, h, h, cfg.layout, cfg.bias);
        for (name, o) in parts(&nm.ffn_in, &cfg.ffn_in_outs())? {
            dense(&mut out, &name, h, o, cfg.layout, cfg.bias);
        }
        dense(&mut out, &nm.ffn_out, ff, h, cfg.layout, cfg.bias);
        norm(&mut out, &nm.norm1, h, cfg.norm);
        norm(&mut out, &nm.norm2, h, cfg.norm);
    }
    Ok(out)
}

/// Every tensor `config` implies in `w` (optional heads included when `w` holds them).
pub fn expected_tensors(config: &ModelConfig, w: &Weights) -> Result<Vec<Expected>, ModelError> {
    let mut out = Vec::new();
    match config {
        ModelConfig::Bert(c) => {
            let h = c.hidden_size;
            out.extend(block_tensors(&crate::bert::block_config(c), crate::bert::block_names, c.num_hidden_layers)?);
            out.push(("embeddings.word_embeddings.weight".into(), vec![c.vocab_size, h]));
            out.push(("embeddings.position_embeddings.weight".into(), vec![c.max_position_embeddings, h]));
            out.push(("embeddings.token_type_embeddings.weight".into(), vec![c.type_vocab_size, h]));
            norm(&mut out, "embeddings.LayerNorm", h, NormKind::LayerNorm);
            if w.contains("pooler.dense.weight") {
                dense(&mut out, "pooler.dense", h, h, Layout::OutIn, true);
                if let (Some(s), Some(n)) = (w.shape("classifier.weight"), c.num_labels) {
                    if s.len() == 2 {
                        dense(&mut out, "classifier", h, n, Layout::OutIn, true);
                    }
                }
            }
        }
        ModelConfig::Gpt2(c) => {
            let e = c.n_embd;
            out.extend(block_tensors(&crate::gpt2::block_config(c), crate::gpt2::block_names, c.n_layer)?);
            out.push(("wte.weight".into(), vec![c.vocab_size, e]));
            out.push(("wpe.weight".into(), vec![c.n_positions, e]));
            norm(&mut out, "ln_f", e, NormKind::LayerNorm);
        }
        ModelConfig::Llama(c) => {
            let h = c.hidden_size;
            out.extend(block_tensors(&crate::llama::block_config(c), crate::llama::block_names, c.num_hidden_layers)?);
            out.push(("embed_tokens.weight".into(), vec![c.vocab_size, h]));
            out.push(("norm.weight".into(), vec![h]));
            if !c.tie_word_embeddings || w.contains("lm_head.weight") {
                out.push(("lm_head.weight".into(), vec![c.vocab_size, h]));
            }
        }
        ModelConfig::Vit(c) => {
            let h = c.hidden_size;
            let np = crate::vit::num_patches(c);
            out.extend(block_tensors(&crate::vit::block_config(c), crate::vit::block_names, c.num_hidden_layers)?);
            let proj = "embeddings.patch_embeddings.projection";
            out.push((format!("{proj}.weight"), vec![h, c.num_channels, c.patch_size, c.patch_size]));
            out.push((format!("{proj}.bias"), vec![h]));
            out.push(("embeddings.cls_token".into(), vec![1, 1, h]));
            out.push(("embeddings.position_embeddings".into(), vec![1, np + 1, h]));
            norm(&mut out, "layernorm", h, NormKind::LayerNorm);
            if let (Some(s), Some(n)) = (w.shape("classifier.weight"), c.num_labels) {
                if s.len() == 2 {
                    dense(&mut out, "classifier", h, n, Layout::OutIn, true);
                }
            }
        }
    }
    Ok(out)
}

/// Checks every tensor `config` implies against `w` (presence, shape, float dtype) without
/// reading tensor data; returns how many were checked, or the first mismatch.
pub fn check_shapes(config: &ModelConfig, w: &Weights) -> Result<usize, ModelError> {
    let expected = expected_tensors(config, w)?;
    for (name, shape) in &expected {
        w.check(name, shape)?;
    }
    Ok(expected.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_models_match_and_a_changed_config_does_not() {
        let dir = tempfile::tempdir().unwrap();
        for (i, write) in [
            crate::tiny::write_tiny_bert as fn(&std::path::Path, u64) -> Result<(), ModelError>,
            crate::tiny::write_tiny_gpt2,
            crate::tiny::write_tiny_llama,
            crate::tiny::write_tiny_vit,
        ]
        .into_iter()
        .enumerate()
        {
            let d = dir.path().join(i.to_string());
            std::fs::create_dir_all(&d).unwrap();
            write(&d, 1).unwrap();
            let cfg = ModelConfig::from_file(&d.join("config.json")).unwrap();
            let w = Weights::open(&d.join("model.safetensors")).unwrap();
            assert!(check_shapes(&cfg, &w).unwrap() > 10);
        }
        let d = dir.path().join("1");
        let text = std::fs::read_to_string(d.join("config.json")).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["n_inner"] = serde_json::json!(1000);
        let cfg = ModelConfig::from_json_str(&v.to_string(), &d.join("config.json")).unwrap();
        let w = Weights::open(&d.join("model.safetensors")).unwrap();
        let e = check_shapes(&cfg, &w).unwrap_err().to_string();
        assert!(e.contains("h.0.mlp.c_fc.weight") && e.contains("expected"), "{e}");
    }
}
