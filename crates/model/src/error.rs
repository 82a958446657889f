//! The error type of the model layer.
//!
//! Every variant renders as one line that names the file (and the field or tensor) at fault,
//! so that a user pointing `nectar` at a broken Hugging Face directory sees what to fix.

/// Errors while loading or running a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// `config.json` unreadable, not JSON, or with a missing / ill-typed / unsupported field.
    #[error("{file}: {msg}")]
    Config { file: String, msg: String },
    /// `model.safetensors` missing, corrupt, or lacking a tensor of the expected shape.
    #[error("{file}: {msg}")]
    Weights { file: String, msg: String },
    /// `tokenizer.json` missing or unusable.
    #[error("{file}: {msg}")]
    Tokenizer { file: String, msg: String },
    /// A caller-supplied input is out of range (token id, sequence length...).
    #[error("invalid input: {0}")]
    Input(String),
    /// The operation exists in the API but not (yet) for this architecture.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Downloading or extracting model files failed.
    #[error("fetch: {0}")]
    Fetch(String),
    /// Other I/O on a named path.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// BLB's planner and executor report in the same words.
impl From<nectar_blb::BlbError> for ModelError {
    fn from(e: nectar_blb::BlbError) -> Self {
        match e {
            nectar_blb::BlbError::Input(m) => ModelError::Input(m),
            nectar_blb::BlbError::Unsupported(m) => ModelError::Unsupported(m),
        }
    }
}

impl ModelError {
    pub fn config(file: &std::path::Path, msg: impl Into<String>) -> Self {
        ModelError::Config {
            file: file.display().to_string(),
            msg: msg.into(),
        }
    }
    pub fn weights(file: &std::path::Path, msg: impl Into<String>) -> Self {
        ModelError::Weights {
            file: file.display().to_string(),
            msg: msg.into(),
        }
    }
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        ModelError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
