//! What an architecture adds to the block (DESIGN.md "One block": BERT, GPT-2, LLaMA and ViT
//! differ only in embeddings, head and config mapping; issue 46): the checkpoint tensors of
//! its embeddings and heads, declared once ([`Decl`]; the f32 loader, the secure model's
//! `require` and [`crate::shapes::expected_tensors`] all read the declaration), and the few
//! operators embeddings and heads need besides the block's ([`ArchOps`]), so that each
//! architecture's embeddings and heads are written once (in `bert.rs`, `gpt2.rs`, `llama.rs`,
//! `vit.rs`) and run on the f32 reference and on the engines alike. The steps shared by the
//! decoders (LM head on the last row, greedy next token, the generation loop) are here.

use crate::block::{BlockConfig, BlockNames, BlockOps, KvCache, Layout, NormKind};
use crate::weights::WeightSource;
use crate::ModelError;

/// A dense layer `{name}.weight` (stored as `shape`: `layout` of `in_dim × out_dim`, or a
/// convolution weight read as `[out, in]`) and, with `bias`, `{name}.bias` `[out_dim]`.
/// Read by rows it is a token table: row `t` of an `[out = vocab, in = dim]` weight is token
/// `t`'s embedding ([`ArchOps::lookup`]; GPT-2 ties its LM head to it).
#[derive(Clone, Debug)]
pub struct DenseDecl {
    pub name: String,
    pub in_dim: usize,
    pub out_dim: usize,
    pub layout: Layout,
    pub bias: bool,
    pub shape: Vec<usize>,
}

impl DenseDecl {
    /// The layer stored as `layout` implies.
    pub fn new(name: impl Into<String>, in_dim: usize, out_dim: usize, layout: Layout, bias: bool) -> Self {
        let shape = match layout {
            Layout::OutIn => vec![out_dim, in_dim],
            Layout::InOut => vec![in_dim, out_dim],
        };
        DenseDecl { name: name.into(), in_dim, out_dim, layout, bias, shape }
    }

    /// A token table `[vocab, dim]` (`nn.Embedding`), also usable as a bias-free `dim → vocab`
    /// head.
    pub fn table(name: impl Into<String>, vocab: usize, dim: usize) -> Self {
        DenseDecl::new(name, dim, vocab, Layout::OutIn, false)
    }
}

/// A tensor `name` read by rows of width `shape`'s last dimension (positions, token types,
/// `[CLS]`), the rows at public indices.
#[derive(Clone, Debug)]
pub struct TableDecl {
    pub name: String,
    pub shape: Vec<usize>,
}

impl TableDecl {
    pub fn new(name: impl Into<String>, shape: &[usize]) -> Self {
        TableDecl { name: name.into(), shape: shape.to_vec() }
    }
    /// Width of one row.
    pub fn width(&self) -> usize {
        self.shape.last().copied().unwrap_or(0)
    }
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.shape.iter().product::<usize>() / self.width().max(1)
    }
}

/// A norm `{name}.weight` (and `.bias` for LayerNorm) of width `dim`, run by
/// [`BlockOps::norm`] with the block's kind and ε.
#[derive(Clone, Debug)]
pub struct NormDecl {
    pub name: String,
    pub kind: NormKind,
    pub dim: usize,
}

/// One declared tensor of an architecture's embeddings or heads.
#[derive(Clone, Debug)]
pub enum Decl {
    Dense(DenseDecl),
    Table(TableDecl),
    Norm(NormDecl),
}

/// One expected checkpoint tensor: full name and shape.
pub type Expected = (String, Vec<usize>);

impl Decl {
    /// The checkpoint tensors this declaration reads.
    pub fn expected(&self) -> Vec<Expected> {
        match self {
            Decl::Dense(d) => {
                let mut out = vec![(format!("{}.weight", d.name), d.shape.clone())];
                if d.bias {
                    out.push((format!("{}.bias", d.name), vec![d.out_dim]));
                }
                out
            }
            Decl::Table(t) => vec![(t.name.clone(), t.shape.clone())],
            Decl::Norm(n) => {
                let mut out = vec![(format!("{}.weight", n.name), vec![n.dim])];
                if n.kind == NormKind::LayerNorm {
                    out.push((format!("{}.bias", n.name), vec![n.dim]));
                }
                out
            }
        }
    }
}

/// The tensors of blocks `0..layers` at the shapes `cfg` implies (a product's weight as one
/// fused tensor or one tensor per part).
pub fn block_decls(cfg: &BlockConfig, names: impl Fn(usize) -> BlockNames, layers: usize) -> Result<Vec<Decl>, ModelError> {
    let (h, ff, kvd) = (cfg.hidden, cfg.intermediate, cfg.kv_dim());
    let dense = |name: &str, i: usize, o: usize| Decl::Dense(DenseDecl::new(name, i, o, cfg.layout, cfg.bias));
    let product = |names: &[String], outs: &[usize]| -> Result<Vec<Decl>, ModelError> {
        match names {
            [one] => Ok(vec![dense(one, h, outs.iter().sum())]),
            many if many.len() == outs.len() => Ok(many.iter().zip(outs).map(|(n, &o)| dense(n, h, o)).collect()),
            _ => Err(ModelError::Unsupported(format!(
                "{} weight tensors for a product of {} parts",
                names.len(),
                outs.len()
            ))),
        }
    };
    let norm = |name: &str| Decl::Norm(NormDecl { name: name.into(), kind: cfg.norm, dim: h });
    let mut out = Vec::new();
    for l in 0..layers {
        let nm = names(l);
        out.extend(product(&nm.qkv, &[h, kvd, kvd])?);
        out.push(dense(&nm.o, h, h));
        out.extend(product(&nm.ffn_in, &cfg.ffn_in_outs())?);
        out.push(dense(&nm.ffn_out, ff, h));
        out.push(norm(&nm.norm1));
        out.push(norm(&nm.norm2));
    }
    Ok(out)
}

/// The embedding and head tensors of one architecture (each architecture's `Tensors`).
pub trait ArchTensors {
    /// The embeddings' tensors (required of every checkpoint).
    fn embeddings(&self) -> Vec<Decl>;
    /// The heads' tensors the checkpoint has (final norm included).
    fn heads(&self) -> Vec<Decl>;
    /// Every declared tensor, embeddings first.
    fn all(&self) -> Vec<Decl> {
        let mut v = self.embeddings();
        v.extend(self.heads());
        v
    }
}

/// Outputs of a checkpoint's `classifier` (`[labels, hidden]`), `None` without one: the
/// tensor's, which must agree with the config's `num_labels` (a config that contradicts its
/// checkpoint is found when the model is built); the config's where the source gives no
/// shapes (pseudo-random weights) or there are no weights (the client).
pub fn classifier_labels(w: Option<&dyn WeightSource>, num_labels: Option<usize>) -> Result<Option<usize>, ModelError> {
    let Some(w) = w else { return Ok(num_labels) };
    if !w.contains("classifier.weight") {
        return Ok(None);
    }
    let labels = match w.shape("classifier.weight") {
        None => return Ok(num_labels),
        Some(s) if s.len() == 2 => s[0],
        Some(_) => return Ok(None),
    };
    match num_labels {
        Some(k) if k != labels => Err(ModelError::Input(format!(
            "tensor \"classifier.weight\" has {labels} outputs but config names {k} labels"
        ))),
        _ => Ok(Some(labels)),
    }
}

/// The operators of embeddings and heads, besides the block's, on one arithmetic (the f32
/// reference, [`crate::reference::F32Block`]; an engine, [`crate::secure::block::EngineBlock`]).
pub trait ArchOps: BlockOps<Error: From<ModelError>> {
    /// Runs `f` as one named step (a profile row of the engines: `embed`, `pool`,
    /// `classifier`, `lm_head`, `argmax`, `output`; nested steps belong to the outer one).
    fn step<T>(
        &mut self,
        label: &'static str,
        f: impl FnOnce(&mut Self) -> Result<T, Self::Error>,
    ) -> Result<T, Self::Error>;

    /// Rows `ids` of the token table `t` (`[vocab, dim]`): `one_hot(ids) · t`, the client's
    /// ids (`Some` on the client and the twin) against the server's table (DESIGN.md data
    /// flow step 2). `[n, dim]`.
    fn lookup(&mut self, t: &DenseDecl, ids: Option<&[u32]>, n: usize) -> Result<Self::Val, Self::Error>;

    /// Server-held rows at public indices: row `i` is `Σ_parts table[rows[i]]` (summed before
    /// encoding). `[rows.len(), width]`.
    fn server_rows(&mut self, parts: &[(&TableDecl, &[usize])]) -> Result<Self::Val, Self::Error>;

    /// The client's private values (`Some` on the client and the twin; `what` names them in
    /// errors), `len` of them.
    fn client_values(&mut self, x: Option<&[f32]>, len: usize, what: &str) -> Result<Self::Val, Self::Error>;

    /// `x · W + b` by an embedding's or a head's dense layer `d` on `n` rows (not a block
    /// operator: the engines always use their weight product here).
    fn dense(&mut self, d: &DenseDecl, x: &Self::Val, n: usize) -> Result<Self::Val, Self::Error>;

    /// Rows `r` of a row-major value of width `width`.
    fn take_rows(&mut self, x: &Self::Val, r: std::ops::Range<usize>, width: usize) -> Result<Self::Val, Self::Error>;

    /// Mean of the rows of `x` (`[n, width]`) whose `mask` is set (all without a mask).
    fn mean_rows(&mut self, x: &Self::Val, n: usize, width: usize, mask: Option<&[bool]>)
        -> Result<Self::Val, Self::Error>;

    /// Rows at public indices `rows` of a row-major value of width `width`.
    fn pick_rows(&mut self, x: &Self::Val, rows: &[usize], width: usize) -> Result<Self::Val, Self::Error>;

    /// Means of the rows of each input of a batch (issue 52): `x` holds `lens[0]` rows of the
    /// first input, then `lens[1]` of the second, ...; `[lens.len(), width]`.
    fn mean_segments(&mut self, x: &Self::Val, lens: &[usize], width: usize) -> Result<Self::Val, Self::Error>;

    /// Element-wise tanh.
    fn tanh(&mut self, x: &Self::Val) -> Result<Self::Val, Self::Error>;

    /// Index of the largest value of each of `rows` rows of `cols`.
    fn argmax(&mut self, x: &Self::Val, rows: usize, cols: usize) -> Result<Self::Val, Self::Error>;

    /// Opens `x` to the client: `Some(values)` there (and on the twin and the reference).
    fn reveal(&mut self, x: &Self::Val) -> Result<Option<Vec<f64>>, Self::Error>;

    /// Opens integer values (indices) to the client.
    fn reveal_index(&mut self, x: &Self::Val) -> Result<Option<Vec<u64>>, Self::Error>;

    /// The client's public decision `go` (`Some` on the client and the twin; `None` on the
    /// server, which receives it): one message from the client. Used to stop a generation
    /// early (the client saw an end-of-sequence token), which the server then learns.
    fn client_says(&mut self, go: Option<bool>) -> Result<bool, Self::Error>;

    /// Whether another decoding step of one new token follows the step that runs next (the
    /// generation loop's, from the public generation length: the same on both parties; a
    /// protocol may prepare that step's work ahead, `matmul = olt-ahead`). Default: ignored.
    fn steps_follow(&mut self, more: bool) {
        let _ = more;
    }

    /// Fails unless this arithmetic can generate `n_new` tokens (checked before the prompt
    /// runs). Default: it can.
    fn check_generation(&self, _n_new: usize) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The step `output`: `x` opened to the client, as f32.
pub fn output<O: ArchOps>(o: &mut O, x: &O::Val) -> Result<Option<Vec<f32>>, O::Error> {
    let opened = o.step("output", |o| o.reveal(x))?;
    Ok(opened.map(|v| v.iter().map(|&x| x as f32).collect()))
}

/// LM head of the decoders: logits `[vocab]` of the last of `n` hidden rows by `head` (GPT-2's
/// tied `wte`, LLaMA's `lm_head` or tied `embed_tokens`).
pub fn last_logits<O: ArchOps>(o: &mut O, head: &DenseDecl, hidden: &O::Val, n: usize) -> Result<O::Val, O::Error> {
    o.step("lm_head", |o| {
        let last = o.take_rows(hidden, n - 1..n, head.in_dim)?;
        o.dense(head, &last, 1)
    })
}

/// Greedy next token: the argmax of the logits row, revealed to the client only (`Some(id)`
/// there).
pub fn next_token<O: ArchOps>(o: &mut O, logits: &O::Val, vocab: usize) -> Result<Option<u32>, O::Error> {
    let idx = o.step("argmax", |o| o.argmax(logits, 1, vocab))?;
    let opened = o.step("output", |o| o.reveal_index(&idx))?;
    match opened.as_deref() {
        None => Ok(None),
        Some([t]) if (*t as usize) < vocab => Ok(Some(*t as u32)),
        Some(v) => Err(O::shape_error(format!("argmax opened to {v:?}, not a token id < {vocab}"))),
    }
}

/// Greedy generation of `n_new` tokens after the `len` prompt ids (GPT-2, LLaMA): `step(ids,
/// n, cache)` runs `n` new tokens after the cached ones and returns the logits of the last;
/// each step after the prompt runs the one token chosen before. `Some(tokens)` where the
/// tokens are opened (the client, the twin, the reference).
#[allow(clippy::too_many_arguments)]
pub fn generate<O, F>(
    o: &mut O,
    ids: Option<&[u32]>,
    len: usize,
    n_new: usize,
    vocab: usize,
    cache: &mut KvCache<O::Val>,
    step: F,
) -> Result<Option<Vec<u32>>, O::Error>
where
    O: ArchOps,
    F: FnMut(&mut O, Option<&[u32]>, usize, &mut KvCache<O::Val>) -> Result<O::Val, O::Error>,
{
    generate_with(o, ids, len, n_new, vocab, cache, step, &mut Decode::default())
}

/// How a generation reports its tokens and may stop ([`generate_with`]).
#[derive(Default)]
pub struct Decode<'a> {
    /// Called on the client with each token as it is opened (streaming output); its answer
    /// is whether to go on.
    pub on_token: Option<&'a mut dyn FnMut(u32) -> bool>,
    /// Public (both parties agree): after each token but the last the client tells the server
    /// whether to go on ([`ArchOps::client_says`], one message per token), so an answer that
    /// ended (end-of-sequence) stops both; the server learns where it stopped. Without it,
    /// `n_new` tokens are always generated and `on_token`'s answer is ignored.
    pub stoppable: bool,
}

/// [`generate`] with the options of `d`. The last token opened is not in `cache` (a
/// conversation's next turn starts with it).
#[allow(clippy::too_many_arguments)]
pub fn generate_with<O, F>(
    o: &mut O,
    ids: Option<&[u32]>,
    len: usize,
    n_new: usize,
    vocab: usize,
    cache: &mut KvCache<O::Val>,
    mut step: F,
    d: &mut Decode<'_>,
) -> Result<Option<Vec<u32>>, O::Error>
where
    O: ArchOps,
    F: FnMut(&mut O, Option<&[u32]>, usize, &mut KvCache<O::Val>) -> Result<O::Val, O::Error>,
{
    // `n_new` may come from the network: never size an allocation by it.
    let mut tokens = Vec::with_capacity(n_new.min(1024));
    let mut learned = true;
    if n_new == 0 {
        return Ok(Some(tokens));
    }
    o.check_generation(n_new)?;
    o.steps_follow(n_new >= 2);
    let first = step(o, ids, len, cache);
    o.steps_follow(false);
    let mut logits = first?;
    for t in 0..n_new {
        let tok = next_token(o, &logits, vocab)?;
        let mut go = true;
        match tok {
            Some(x) => {
                tokens.push(x);
                if let Some(f) = d.on_token.as_mut() {
                    go = f(x);
                }
            }
            None => learned = false,
        }
        if t + 1 == n_new {
            break;
        }
        // the client's answer; the server (tok == None) learns it
        if d.stoppable && !o.client_says(tok.map(|_| go))? {
            break;
        }
        let next = tok.map(|x| [x]);
        o.steps_follow(t + 2 < n_new);
        let out = step(o, next.as_ref().map(|a| &a[..]), 1, cache);
        o.steps_follow(false);
        logits = out?;
    }
    Ok(learned.then_some(tokens))
}
