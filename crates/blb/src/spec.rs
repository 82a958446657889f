//! What the planner reads of a transformer layer (public architecture): its widths and the
//! kinds of its norm, attention, feed-forward block and activation. The model layer fills it
//! from its block configuration.

/// The activation as the graph decomposes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// BOLT's P4 pieces (BLB App. B Alg. 4).
    Gelu,
    /// BumbleBee's polynomial segments (App. D).
    Silu,
}

/// One transformer layer's public shape, as the planner and the evaluator read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerSpec {
    /// `D`.
    pub hidden: usize,
    /// Query heads (grouped key / value heads are expanded into the weights' columns).
    pub heads: usize,
    /// The feed-forward block's inner width.
    pub intermediate: usize,
    /// LayerNorm (BLB App. B Alg. 3: centred, then `γ` and `β`); RMSNorm otherwise (no mean,
    /// no `β`).
    pub layer_norm: bool,
    /// Norms after each residual addition (BERT); otherwise on each branch's input (GPT-2,
    /// ViT, LLaMA).
    pub post_norm: bool,
    /// Causal attention (a mask on `Q·K^T`).
    pub causal: bool,
    /// Rotary positions on `Q` and `K`.
    pub rope: bool,
    /// A gated FFN, `W_down · (act(W_gate · a) ⊙ W_up · a)`; otherwise `W2 · act(W1 · a)`.
    pub gated: bool,
    pub activation: Activation,
    /// The products carry biases.
    pub bias: bool,
}
