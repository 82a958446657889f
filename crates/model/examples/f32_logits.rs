//! nectar's plaintext f32 reference on a LLaMA GGUF file, as JSON, for scripts that compare it
//! with another implementation (`scripts/llamacpp_logits.py --nectar`).
//!
//! usage: cargo run --release -p nectar-model --example f32_logits -- MODEL.gguf IDS [IDS ...]
//!
//! IDS is a comma-separated list of token ids; for each one prints a JSON line
//! `{"ids": [..], "logits": [..]}` with the logits of the token that follows (`Llama::next_token_logits`).

use std::path::Path;

use nectar_model::{Model, Network};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: f32_logits MODEL.gguf IDS [IDS ...]   (IDS: comma-separated token ids)");
        std::process::exit(2);
    }
    let m = Model::load(Path::new(&args[0])).unwrap_or_else(|e| {
        eprintln!("f32_logits: {}: {e}", args[0]);
        std::process::exit(1)
    });
    let Network::Llama(l) = m.network() else {
        eprintln!("f32_logits: {} is not a LLaMA model", args[0]);
        std::process::exit(1)
    };
    for list in &args[1..] {
        let ids: Vec<u32> = list
            .split(',')
            .map(|s| s.trim().parse().unwrap_or_else(|_| panic!("not a token id: {s:?}")))
            .collect();
        let logits = l.next_token_logits(&ids).unwrap_or_else(|e| {
            eprintln!("f32_logits: {ids:?}: {e}");
            std::process::exit(1)
        });
        println!("{}", serde_json::json!({ "ids": ids, "logits": logits }));
    }
}
