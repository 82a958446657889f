//! Text to token ids with a Hugging Face `tokenizer.json` (the `tokenizers` crate).
//!
//! Padding configured in the file is switched off (nectar runs one sequence at a time, and
//! padding would only add positions that the mask then removes); truncation is set to the
//! model's maximum sequence length.

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationParams};

use crate::ModelError;

/// One encoded text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    pub attention_mask: Vec<u32>,
}

/// A loaded `tokenizer.json`.
pub struct TextTokenizer {
    inner: Tokenizer,
    path: PathBuf,
    max_len: usize,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("path", &self.path)
            .field("max_len", &self.max_len)
            .finish()
    }
}

impl TextTokenizer {
    /// Loads `path`, truncating encodings to `max_len` tokens (special tokens included).
    pub fn from_file(path: &Path, max_len: usize) -> Result<Self, ModelError> {
        let err = |msg: String| ModelError::Tokenizer {
            file: path.display().to_string(),
            msg,
        };
        let inner =
            Tokenizer::from_file(path).map_err(|e| err(format!("cannot load tokenizer: {e}")))?;
        Self::from_tokenizer(inner, path, max_len)
    }

    /// Wraps a tokenizer built in memory (e.g. from a GGUF vocabulary, [`crate::gguf::vocab`]);
    /// `source` names it in error messages.
    pub fn from_tokenizer(mut inner: Tokenizer, source: &Path, max_len: usize) -> Result<Self, ModelError> {
        let err = |msg: String| ModelError::Tokenizer {
            file: source.display().to_string(),
            msg,
        };
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                ..Default::default()
            }))
            .map_err(|e| err(format!("cannot set truncation: {e}")))?;
        Ok(TextTokenizer {
            inner,
            path: source.to_path_buf(),
            max_len,
        })
    }

    /// Maximum number of tokens per encoding.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Encodes `text` with the special tokens of the model (e.g. `[CLS] ... [SEP]` for BERT).
    pub fn encode(&self, text: &str) -> Result<Encoded, ModelError> {
        let enc = self
            .inner
            .encode(text, true)
            .map_err(|e| ModelError::Tokenizer {
                file: self.path.display().to_string(),
                msg: format!("cannot encode text: {e}"),
            })?;
        Ok(Encoded {
            ids: enc.get_ids().to_vec(),
            type_ids: enc.get_type_ids().to_vec(),
            attention_mask: enc.get_attention_mask().to_vec(),
        })
    }

    /// Decodes ids back to text (special tokens skipped).
    pub fn decode(&self, ids: &[u32]) -> Result<String, ModelError> {
        self.inner
            .decode(ids, true)
            .map_err(|e| ModelError::Tokenizer {
                file: self.path.display().to_string(),
                msg: format!("cannot decode ids: {e}"),
            })
    }
}
