//! The tokenizer of a GGUF file, built from its vocabulary with the `tokenizers` crate.
//!
//! Only GPT-2-style byte-level BPE is built (`tokenizer.ggml.model = "gpt2"`): the token strings
//! `tokenizer.ggml.tokens` (index = id), the merges `tokenizer.ggml.merges` (each `"left right"`,
//! in priority order), a byte-level pre-tokenizer with GPT-2's split pattern (preceded by one
//! split per digit for the pre-tokenizer types that llama.cpp gives individual digits:
//! `smollm`, `starcoder`, `refact`...) and the byte-level decoder. Tokens typed CONTROL (3) or
//! USER_DEFINED (4) in `tokenizer.ggml.token_type` become added tokens, matched whole in the
//! text (so `<|im_start|>` in a chat prompt is one token) and, for CONTROL, skipped when
//! decoding. With `tokenizer.ggml.add_bos_token` set, the BOS token
//! (`tokenizer.ggml.bos_token_id`) is prepended to every encoding.

use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, PreTokenizerWrapper, Tokenizer};

use crate::gguf::file::{GgufFile, Value};
use crate::tokenizer::TextTokenizer;
use crate::ModelError;

/// `tokenizer.ggml.pre` values whose split pattern is GPT-2's, after individual digits.
const DIGIT_SPLIT_PRE: [&str; 6] = ["smollm", "starcoder", "refact", "codeshell", "exaone", "minerva"];
/// `tokenizer.ggml.pre` values whose split pattern is GPT-2's alone.
const GPT2_PRE: [&str; 2] = ["default", "gpt2"];

/// `tokenizer.ggml.token_type` of control tokens (`<|im_start|>`...).
const CONTROL: i128 = 3;
/// `tokenizer.ggml.token_type` of user-defined tokens.
const USER_DEFINED: i128 = 4;

/// The tokenizer of `f`, truncating to `max_len` tokens.
pub fn tokenizer(f: &GgufFile, max_len: usize) -> Result<TextTokenizer, ModelError> {
    let err = |m: String| ModelError::Tokenizer { file: f.path().display().to_string(), msg: m };
    let model = f.get("tokenizer.ggml.model").and_then(Value::as_str).unwrap_or("(none)");
    if model != "gpt2" {
        return Err(err(format!(
            "tokenizer.ggml.model is {model:?}; only \"gpt2\" (byte-level BPE) vocabularies are supported"
        )));
    }
    let pre = f.get("tokenizer.ggml.pre").and_then(Value::as_str).unwrap_or("default");
    let digits = if DIGIT_SPLIT_PRE.contains(&pre) {
        true
    } else if GPT2_PRE.contains(&pre) {
        false
    } else {
        return Err(err(format!("tokenizer.ggml.pre {pre:?} is not supported (supported: {})", [GPT2_PRE.as_slice(), &DIGIT_SPLIT_PRE].concat().join(", "))));
    };
    let tokens = f
        .get("tokenizer.ggml.tokens")
        .and_then(Value::as_array)
        .and_then(|a| a.strings())
        .ok_or_else(|| err("missing tokenizer.ggml.tokens (an array of strings)".into()))?;
    let merges = f
        .get("tokenizer.ggml.merges")
        .and_then(Value::as_array)
        .and_then(|a| a.strings())
        .ok_or_else(|| err("missing tokenizer.ggml.merges (an array of strings)".into()))?;
    let types = match f.get("tokenizer.ggml.token_type") {
        None => vec![1; tokens.len()],
        Some(v) => v
            .as_array()
            .and_then(|a| a.ints())
            .filter(|t| t.len() == tokens.len())
            .ok_or_else(|| err(format!("tokenizer.ggml.token_type must be {} integers", tokens.len())))?,
    };
    let vocab: Vocab = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
    let pairs = merges
        .iter()
        .enumerate()
        .map(|(i, m)| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| err(format!("merge {i} ({m:?}) is not two tokens separated by a space")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, pairs)
        .build()
        .map_err(|e| err(format!("cannot build the BPE model: {e}")))?;
    let mut t = Tokenizer::new(bpe);
    let byte_level = ByteLevel::new(false, true, true);
    let pre_tok: PreTokenizerWrapper = if digits {
        Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into()
    } else {
        byte_level.into()
    };
    t.with_pre_tokenizer(Some(pre_tok));
    t.with_decoder(Some(ByteLevel::default()));
    let special: Vec<AddedToken> = tokens
        .iter()
        .zip(&types)
        .filter(|(_, &ty)| ty == CONTROL || ty == USER_DEFINED)
        .map(|(s, &ty)| AddedToken::from(s.clone(), ty == CONTROL))
        .collect();
    t.add_special_tokens(&special);
    let id = |k: &str| -> Result<Option<u32>, ModelError> {
        match f.get(k) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(i) if (i as usize) < tokens.len() => Ok(Some(i as u32)),
                _ => Err(err(format!("{k} = {} is not a token id below {}", v.describe(), tokens.len()))),
            },
        }
    };
    let add_bos = f.get("tokenizer.ggml.add_bos_token").and_then(Value::as_bool).unwrap_or(false);
    if add_bos {
        let bos = id("tokenizer.ggml.bos_token_id")?
            .ok_or_else(|| err("tokenizer.ggml.add_bos_token is set but there is no bos_token_id".into()))?;
        let text = &tokens[bos as usize];
        let post = TemplateProcessing::builder()
            .try_single(format!("{text} $A"))
            .map_err(|e| err(format!("cannot prepend BOS token {text:?}: {e}")))?
            .special_tokens(vec![(text.clone(), bos)])
            .build()
            .map_err(|e| err(format!("cannot prepend BOS token {text:?}: {e}")))?;
        t.with_post_processor(Some(post));
    }
    TextTokenizer::from_tokenizer(t, f.path(), max_len)
}

/// The end-of-sequence token id (`tokenizer.ggml.eos_token_id`), if set.
pub fn eos_id(f: &GgufFile) -> Option<u32> {
    f.get("tokenizer.ggml.eos_token_id").and_then(Value::as_u64).and_then(|i| u32::try_from(i).ok())
}
