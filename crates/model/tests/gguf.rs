//! GGUF files built by hand (`nectar_bench::fixtures::gguf`): every supported tensor type read
//! back at its offset, the tiny LLaMA as GGUF equal to the same weights as safetensors (names
//! mapped, q/k rows un-permuted, tied and untied heads), the vocabulary as a tokenizer, the chat
//! template, and how `Model::load` finds a `.gguf`.

use nectar_bench::fixtures::gguf::{random_blocks, tiny_llama, GgufBuilder, Meta};
use nectar_bench::fixtures::tiny;
use nectar_model::chat_template::Message;
use nectar_model::gguf::dequant::{dequantize, GgmlType, SUPPORTED};
use nectar_model::gguf::llama::{gguf_name, unpermute_rows};
use nectar_model::gguf::GgufFile;
use nectar_model::{Model, Network};

/// GGML type ids of [`SUPPORTED`], in its order.
const IDS: [u32; 9] = [0, 1, 30, 8, 2, 3, 12, 13, 14];

#[test]
fn every_supported_type_reads_back_from_a_hand_built_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = GgufBuilder { alignment: 64, ..Default::default() }.meta("general.alignment", Meta::U32(64));
    for (k, &id) in IDS.iter().enumerate() {
        // Two rows of 256 (one K-quant super-block, eight 32-blocks per row).
        b = b.tensor(&format!("t{k}"), &[2, 256], id, random_blocks(id, 512, k as u64));
    }
    let path = dir.path().join("types.gguf");
    b.write(&path).unwrap();
    let f = GgufFile::open(&path).unwrap();
    assert_eq!(f.tensors().len(), SUPPORTED.len());
    for (k, (&id, ty)) in IDS.iter().zip(SUPPORTED).enumerate() {
        let info = f.tensor_info(&format!("t{k}")).unwrap();
        assert_eq!(info.ty, ty);
        assert_eq!(GgmlType::from_id(id), Some(ty));
        assert_eq!(info.shape(), vec![2, 256]);
        assert_eq!(info.offset % 64, 0);
        let got = f.read_f32(&format!("t{k}")).unwrap();
        let want = dequantize(ty, &b.tensors[k].data, 512).unwrap();
        assert_eq!(got, want, "{}", ty.name());
        assert!(got.iter().all(|x| x.is_finite()), "{}", ty.name());
        assert!(got.iter().any(|&x| x != 0.0), "{}", ty.name());
    }
}

fn tiny_pair() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(dir.path(), 11).unwrap();
    let gguf = dir.path().join("gguf").join("tiny.gguf");
    std::fs::create_dir_all(gguf.parent().unwrap()).unwrap();
    tiny_llama(dir.path()).unwrap().write(&gguf).unwrap();
    (dir, gguf)
}

#[test]
fn tiny_llama_from_gguf_equals_safetensors() {
    let (dir, gguf) = tiny_pair();
    let hf = Model::load(dir.path()).unwrap();
    let gg = Model::load(&gguf).unwrap();
    assert_eq!(hf.config(), gg.config());
    let (Network::Llama(a), Network::Llama(b)) = (hf.network(), gg.network()) else { panic!("not llama") };
    for ids in [vec![3u32, 1, 4, 1, 5, 9, 2, 6], vec![7]] {
        assert_eq!(a.next_token_logits(&ids).unwrap(), b.next_token_logits(&ids).unwrap());
        assert_eq!(a.generate(&ids, 5).unwrap(), b.generate(&ids, 5).unwrap());
    }
    // The directory holding only the .gguf loads it too.
    let by_dir = Model::load(gguf.parent().unwrap()).unwrap();
    assert_eq!(by_dir.config(), gg.config());
    let s = gg.summary();
    assert!(s.contains("quantisation:  F32 ×21"), "{s}");
    assert!(s.contains("format:        GGUF v3"), "{s}");
    assert!(s.contains("kv heads:      2"), "{s}");
    assert!(s.contains("tied embed:    false"), "{s}");
}

#[test]
fn tied_output_when_the_file_has_none() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(dir.path(), 5).unwrap();
    let mut b = tiny_llama(dir.path()).unwrap();
    b.tensors.retain(|t| t.name != "output.weight");
    let path = dir.path().join("tied.gguf");
    b.write(&path).unwrap();
    let m = Model::load(&path).unwrap();
    let nectar_model::ModelConfig::Llama(c) = m.config() else { panic!("not llama") };
    assert!(c.tie_word_embeddings);
    let Network::Llama(l) = m.network() else { panic!("not llama") };
    assert_eq!(l.next_token_logits(&[1, 2, 3]).unwrap().len(), tiny::LLAMA_VOCAB);
}

#[test]
fn vocabulary_tokenizer_and_chat_template() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(dir.path(), 5).unwrap();
    let im = ["<|im_start|>", "<|im_end|>"];
    let mut b = tiny_llama(dir.path()).unwrap();
    // Replace the vocabulary: byte-level letters with one merge, and two control tokens.
    let mut tokens: Vec<String> = (0..tiny::LLAMA_VOCAB - 3).map(|i| ((b'a' + (i % 26) as u8) as char).to_string().repeat(1 + i / 26)).collect();
    tokens.push("ab".into());
    tokens.extend(im.iter().map(|s| s.to_string()));
    let mut types = vec![1i32; tiny::LLAMA_VOCAB];
    types[tiny::LLAMA_VOCAB - 2..].fill(3);
    for (k, v) in b.meta.iter_mut() {
        match k.as_str() {
            "tokenizer.ggml.tokens" => *v = Meta::Strs(tokens.clone()),
            "tokenizer.ggml.token_type" => *v = Meta::I32s(types.clone()),
            "tokenizer.ggml.merges" => *v = Meta::Strs(vec!["a b".into()]),
            _ => {}
        }
    }
    let template = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    b = b.meta("tokenizer.chat_template", Meta::Str(template.into()));
    let path = dir.path().join("vocab.gguf");
    b.write(&path).unwrap();
    let m = Model::load(&path).unwrap();
    let tok = m.tokenizer().unwrap();
    let ab = tiny::LLAMA_VOCAB as u32 - 3;
    let (start, end) = (ab + 1, ab + 2);
    assert_eq!(tok.encode("abc").unwrap().ids, vec![ab, 2]);
    assert_eq!(tok.encode("<|im_start|>ab<|im_end|>").unwrap().ids, vec![start, ab, end]);
    assert_eq!(tok.decode(&[start, ab, 2, end]).unwrap(), "abc");
    let prompt = m.apply_chat_template(&[Message::new("user", "ab")]).unwrap();
    assert_eq!(prompt, "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n");
    assert!(m.summary().contains("chat template: ChatML"));
    assert_eq!(m.generate_ids(&[ab], 3).unwrap().len(), 3);
    m.generate("ab", 3).unwrap();
}

#[test]
fn metadata_errors_name_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    tiny::write_tiny_llama(dir.path(), 5).unwrap();
    let base = tiny_llama(dir.path()).unwrap();
    let path = dir.path().join("bad.gguf");
    let edit = |key: &str, v: Option<Meta>| {
        let mut b = base.clone();
        b.meta.retain(|(k, _)| k != key);
        if let Some(v) = v {
            b.meta.push((key.into(), v));
        }
        b.write(&path).unwrap();
        let e = Model::load(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(!e.contains('\n'), "{e}");
        e
    };
    let e = edit("general.architecture", Some(Meta::Str("qwen2".into())));
    assert!(e.ends_with("general.architecture is \"qwen2\"; only \"llama\" GGUF files are supported"), "{e}");
    let e = edit("llama.block_count", None);
    assert!(e.ends_with("missing metadata key llama.block_count"), "{e}");
    let e = edit("llama.attention.head_count_kv", Some(Meta::U32(3)));
    assert!(e.contains("heads must divide both"), "{e}");
    let e = edit("tokenizer.ggml.model", Some(Meta::Str("llama".into())));
    assert!(e.contains("only \"gpt2\" (byte-level BPE)"), "{e}");
    let e = edit("llama.embedding_length", Some(Meta::Str("wide".into())));
    assert!(e.contains("llama.embedding_length must be a positive integer"), "{e}");
    // Two .gguf files in a directory without config.json: ambiguous.
    let two = dir.path().join("two");
    std::fs::create_dir_all(&two).unwrap();
    base.write(&two.join("a.gguf")).unwrap();
    base.write(&two.join("b.gguf")).unwrap();
    let e = Model::load(&two).unwrap_err().to_string();
    assert!(e.ends_with("holds 2 .gguf files and no config.json; name the one to load"), "{e}");
}

#[test]
fn names_map_to_gguf() {
    assert_eq!(gguf_name("embed_tokens.weight").as_deref(), Some("token_embd.weight"));
    assert_eq!(gguf_name("model.layers.12.self_attn.o_proj.weight").as_deref(), Some("blk.12.attn_output.weight"));
    assert_eq!(gguf_name("layers.0.mlp.down_proj.weight").as_deref(), Some("blk.0.ffn_down.weight"));
    assert_eq!(gguf_name("layers.3.post_attention_layernorm.weight").as_deref(), Some("blk.3.ffn_norm.weight"));
    assert_eq!(gguf_name("lm_head.weight").as_deref(), Some("output.weight"));
    assert_eq!(gguf_name("norm.weight").as_deref(), Some("output_norm.weight"));
    assert_eq!(gguf_name("layers.x.mlp.up_proj.weight"), None);
    assert_eq!(gguf_name("pooler.dense.weight"), None);
}

/// The converter's permutation (`reshape(heads, 2, dh/2, cols).swapaxes(1, 2)`) followed by
/// ours is the identity.
#[test]
fn unpermute_inverts_the_converter() {
    let (heads, dh, cols) = (3, 8, 2);
    let hf: Vec<f32> = (0..heads * dh * cols).map(|x| x as f32).collect();
    let mut stored = vec![0f32; hf.len()];
    for h in 0..heads {
        for j in 0..2 {
            for i in 0..dh / 2 {
                for c in 0..cols {
                    stored[(h * dh + 2 * i + j) * cols + c] = hf[(h * dh + j * dh / 2 + i) * cols + c];
                }
            }
        }
    }
    assert_eq!(unpermute_rows(&stored, heads, cols), hf);
}
