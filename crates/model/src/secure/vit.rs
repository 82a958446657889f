//! Secure ViT: not implemented yet.
//!
//! The plan (BumbleBee §VII-B): the client's patches (`[P, C·p·p]`) × the server's patch
//! projection as one `matmul_weight`, the server's `[CLS]` row and position embeddings added to
//! its share, pre-LN blocks as in [`crate::secure::gpt2`] without a mask, the classifier on the
//! final `[CLS]` row. There is no plaintext ViT reference in this crate yet, so there is nothing
//! to check a secure one against; the benchmark shapes are in [`crate::secure::random`].

use crate::secure::SecureError;

/// The error returned for ViT models.
pub fn unsupported() -> SecureError {
    SecureError::Unsupported(
        "secure ViT is not implemented yet (no plaintext ViT reference to check it against)".into(),
    )
}
