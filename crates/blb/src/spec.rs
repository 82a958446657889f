//! What the planner reads of a transformer layer (public architecture): its widths and the
//! kinds of its norm, attention, feed-forward block and activation. The model layer fills it
//! from its block configuration.

/// The norm's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormKind {
    /// LayerNorm (BLB App. B Alg. 3): centred, then scaled (`γ`, `β`).
    LayerNorm,
    /// RMSNorm: LayerNorm without the mean and `β`.
    RmsNorm,
}

/// Where the norms sit relative to the residual branches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// After each residual addition (BERT).
    Post,
    /// On the input of each branch (GPT-2, ViT, LLaMA).
    Pre,
}

/// The feed-forward block's form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfnKind {
    /// `W2 · act(W1 · a)`.
    Plain,
    /// `W_down · (act(W_gate · a) ⊙ W_up · a)`.
    Gated,
}

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
    pub norm: NormKind,
    pub placement: Placement,
    /// Causal attention (a mask on `Q·K^T`).
    pub causal: bool,
    /// Rotary positions on `Q` and `K`.
    pub rope: bool,
    pub ffn: FfnKind,
    pub activation: Activation,
    /// The products carry biases.
    pub bias: bool,
}
