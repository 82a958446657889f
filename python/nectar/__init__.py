"""nectar: private transformer inference between two parties.

The **server** holds a Hugging Face model (BERT, GPT-2, LLaMA, ViT families); the **client**
holds the input. The client learns the model's output, the server learns nothing about the
input, and the client learns nothing about the weights beyond the public architecture. This
package runs the same Rust code as the ``nectar`` CLI (``nectar serve`` / ``nectar infer``), so
a Python client can talk to a CLI server and the other way round.

    >>> import nectar
    >>> with nectar.Server(nectar.default_model_dir()) as server:           # doctest: +SKIP
    ...     client = nectar.Client("127.0.0.1", server.port)
    ...     vectors = client.embed(["private text"])                        # (1, 384)

Every blocking call releases the GIL. Errors raise :class:`NectarError` (a ``RuntimeError``)
with the CLI's message. Every client call accepts ``return_metrics=True`` and then returns
``(result, metrics)``: a dict with ``seconds``, ``setup_seconds``, ``inference_seconds``, bytes
each way (``bytes_client_to_server``, ``bytes_server_to_client``, ``bytes_total``,
``setup_bytes``), ``rounds`` (the client's flights: how often it began sending after
receiving; both parties together make about twice as many), per-query figures (``queries``) and the per-operator profile
(``ops``: one dict per operator with ``op``, ``protocol``, ``calls``, ``seconds``,
``bytes_sent``, ``bytes_recv``, ``rounds``, ``prepro_bytes``, ``prepro_seconds``).
``progress=True`` draws a progress bar on stderr (one step per transformer block); a
callable ``f(query, queries, block, blocks)`` is called instead.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _nectar
from ._nectar import NectarError

__version__: str = _nectar.__version__

__all__ = [
    "Server",
    "Client",
    "run_local",
    "embed_plaintext",
    "write_tiny_model",
    "default_model_dir",
    "NectarError",
    "__version__",
]

#: Keyword limits of :class:`Server`, as the flags of ``nectar serve``.
SERVER_LIMITS = (
    "reveal_to_server",
    "max_sessions",
    "max_concurrent_sessions",
    "handshake_timeout",
    "idle_timeout",
    "max_frame_mib",
    "memory_budget_mib",
    "max_batch_tokens",
    "quiet",
)

Text = Union[str, Sequence[int]]
Progress = Union[bool, Callable[[int, int, int, int], Any], None]


def default_model_dir() -> str:
    """The directory ``nectar fetch-model minilm`` fetches into (``$NECTAR_HOME/minilm``)."""
    return _nectar.default_model_dir()


def write_tiny_model(kind: str, directory: Union[str, os.PathLike], seed: int = 1) -> str:
    """Write a deterministic tiny checkpoint (``bert`` with a 3-way classifier, ``gpt2``,
    ``llama`` or ``vit``; random weights in the real HF format, no tokenizer) into
    ``directory`` and return it. For tests and examples: feed it token ids, not text."""
    _nectar.write_tiny_model(kind, os.fspath(directory), int(seed))
    return os.fspath(directory)


def embed_plaintext(model_dir: Union[str, os.PathLike], texts: Union[str, Sequence[str]]) -> np.ndarray:
    """The plaintext f32 reference embeddings (``nectar embed --plaintext``), ``(n, dim)``."""
    texts = [texts] if isinstance(texts, str) else list(texts)
    return np.asarray(_nectar.embed_plaintext(os.fspath(model_dir), texts), dtype=np.float32)


class Server:
    """The party holding the model: serves private inference to clients over TCP.

    ``Server(model_dir, suite="nectar", host="127.0.0.1", port=0, **limits)`` loads (memory-
    maps and checks) the model and binds ``host:port`` at once (``port=0``: any free port, read
    it from :attr:`port`). ``limits`` are the flags of ``nectar serve``: ``reveal_to_server``,
    ``max_sessions``, ``max_concurrent_sessions``, ``handshake_timeout``, ``idle_timeout``
    (seconds), ``max_frame_mib``, ``memory_budget_mib`` (weight blocks a session prepares
    ahead of their operator; 0: none), ``max_batch_tokens`` (most tokens of one batched query;
    default: the model's positions), and ``quiet`` (default True: no per-session log lines
    on stderr). Use :meth:`serve_forever`, or :meth:`start` / :meth:`stop` (also as a ``with``
    block).

    ``insecure_test_seed`` (tests only, NO privacy): session ``i`` derives all its randomness
    from this public seed and ``i`` instead of the operating system, as ``nectar serve
    --insecure-test-seed``; a warning is printed on stderr.
    """

    def __init__(
        self,
        model_dir: Union[str, os.PathLike],
        suite: str = "nectar",
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        insecure_test_seed: Optional[int] = None,
        **limits: Any,
    ) -> None:
        unknown = sorted(set(limits) - set(SERVER_LIMITS))
        if unknown:
            raise TypeError(f"unknown server limit(s) {', '.join(unknown)} (known: {', '.join(SERVER_LIMITS)})")
        self._native = _nectar.Server(
            os.fspath(model_dir), suite, host, int(port), insecure_test_seed=insecure_test_seed, **limits
        )
        self._started = False

    @property
    def port(self) -> int:
        """The bound port."""
        return self._native.port

    @property
    def address(self) -> str:
        """The bound address, ``host:port``."""
        return self._native.address

    @property
    def suite(self) -> str:
        """The resolved suite."""
        return self._native.suite

    @property
    def model_type(self) -> str:
        """The served architecture (``bert``, ``gpt2``, ``llama``, ``vit``)."""
        return self._native.model_type

    @property
    def running(self) -> bool:
        """Whether the server accepts connections."""
        return self._native.running

    def start(self) -> "Server":
        """Accept connections on a background thread (one session per connection)."""
        if not self._started:
            self._native.start()
            self._started = True
        return self

    def stop(self, timeout: Optional[float] = None) -> bool:
        """Stop accepting, then wait up to ``timeout`` seconds (``None``: until they end) for
        the sessions still running. True when the server has ended."""
        self._native.stop_accepting()
        return self._native.join(timeout)

    def serve_forever(self) -> None:
        """Serve in this thread until ``max_sessions`` sessions have ended or Ctrl-C."""
        self.start()
        try:
            # Short waits without the GIL, so that Ctrl-C (KeyboardInterrupt) is seen.
            while not self._native.join(0.2):
                pass
        except KeyboardInterrupt:
            self.stop(timeout=5)
            raise

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"nectar.Server({self.model_type}, suite={self.suite}, address={self.address}, running={self.running})"


class _Bar:
    """A one-line progress display on stderr: queries, forward passes (one per generated
    token), transformer blocks."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.last = ""
        self.query = -1
        self.passes = 0

    def __call__(self, query: int, queries: int, block: int, blocks: int) -> None:
        if query != self.query:
            self.query, self.passes = query, 0
        if block == blocks:
            self.passes += 1
        width = 24
        done = (query + block / max(1, blocks)) / max(1, queries)
        filled = int(round(done * width))
        step = f", pass {self.passes + (block < blocks)}" if self.passes > 1 or (self.passes == 1 and block < blocks) else ""
        line = f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] query {query + 1}/{queries}{step}, block {block}/{blocks}"
        if line != self.last:
            sys.stderr.write(line.ljust(len(self.last)))
            sys.stderr.flush()
            self.last = line

    def close(self) -> None:
        if self.last:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _call(
    fn: Callable[..., Tuple[list, str]], progress: Progress, label: str, *args: Any, seed: Optional[int] = None, **kw: Any
) -> Tuple[list, Dict[str, Any]]:
    """Run a native call with the progress choice; outputs and the metrics as a dict."""
    bar = _Bar(label) if progress is True else None
    cb = bar if bar is not None else (progress if callable(progress) else None)
    try:
        outs, metrics = fn(*args, cb, insecure_test_seed=seed, **kw)
    finally:
        if bar is not None:
            bar.close()
    m = json.loads(metrics)
    if m.get("reveal_to_server"):
        warnings.warn("this server also learns each output (its reveal_to_server option is on)", stacklevel=3)
    return outs, m


def _items(texts: Union[Text, Sequence[Text]]) -> List[Union[str, List[int]]]:
    """A text, a list of texts, token ids, or a list of token-id lists, as native items."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, np.ndarray):
        texts = texts.tolist()
    seq = list(texts)
    if not seq:
        raise NectarError("no input given")
    if all(isinstance(x, (int, np.integer)) for x in seq):
        return [[int(x) for x in seq]]
    out: List[Union[str, List[int]]] = []
    for x in seq:
        if isinstance(x, str):
            out.append(x)
        else:
            out.append([int(v) for v in x])
    return out


def _pixels(model_dir: Optional[str], image: Any) -> List[List[float]]:
    """Images as normalised ``[C, H, W]`` floats: 8-bit ``(H, W, C)`` arrays are scaled and
    normalised with the model's ``preprocessor_config.json``; float arrays ``(C, H, W)`` are
    taken as already normalised. A 4-d array or a list holds several images."""
    arr = np.asarray(image)
    if arr.ndim == 4 or (isinstance(image, (list, tuple)) and arr.ndim != 3):
        return [p for img in image for p in _pixels(model_dir, img)]
    if arr.ndim != 3:
        raise NectarError(f"an image must be a 3-d array ((H, W, C) uint8 or (C, H, W) float), got shape {arr.shape}")
    if arr.dtype == np.uint8:
        if model_dir is None:
            raise NectarError("an 8-bit image is normalised with the model's preprocessor_config.json: pass model_dir")
        h, w, _ = arr.shape
        return [_nectar.image_pixels(model_dir, np.ascontiguousarray(arr).tobytes(), h, w)]
    return [np.asarray(arr, dtype=np.float32).ravel().tolist()]


def _labels(model_dir: Optional[str], n: int) -> List[str]:
    """Class names from ``config.json``'s ``id2label``, else HF's ``LABEL_i``."""
    names = [f"LABEL_{i}" for i in range(n)]
    if model_dir is None:
        return names
    try:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
            id2label = json.load(f).get("id2label") or {}
        for k, v in id2label.items():
            if 0 <= int(k) < n:
                names[int(k)] = str(v)
    except (OSError, ValueError, AttributeError):
        pass
    return names


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    return e / e.sum()


def _batch_size(batch_size: int) -> int:
    """A batch size as the native calls take it (an error below 1)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise NectarError(f"batch_size must be a positive integer, not {batch_size!r}")
    return batch_size


def _check_normalize(normalize: bool) -> None:
    if not normalize:
        raise NectarError(
            "normalize=False is not implemented: the secure session returns the L2-normalised "
            "mean-pooled embedding (as sentence-transformers' all-MiniLM-L6-v2 pipeline does)"
        )


def _result(value: Any, metrics: Dict[str, Any], return_metrics: bool) -> Any:
    return (value, metrics) if return_metrics else value


class Client:
    """The party holding the input: runs private inference against a :class:`Server` (or a
    ``nectar serve``) at ``host:port``.

    Texts are tokenized with the tokenizer of ``model_dir`` (default: the fetched MiniLM, as
    ``nectar infer``), whose ``config.json`` the handshake compares with the server's model.
    Token ids (lists of ints) can be given instead of texts and then need no local copy. Each
    call is one session: handshake, session setup (keys, base OTs), one query per input.

    ``insecure_test_seed`` (tests only, NO privacy): every session derives the client's
    randomness from this public seed, as ``nectar infer --insecure-test-seed``; with the same
    seed on a freshly seeded server the outputs equal the CLI's bit for bit.

    ``weight_cache`` (suites with Nimbus's COP, ``matmul=nimbus-cop`` / ``embed=nimbus-cop``):
    keep the server's encrypted weights in ``cop/`` of nectar's cache, so that a later session
    with the same server skips their transfer (``False``: as ``nectar infer --no-weight-cache``).
    """

    def __init__(
        self,
        host: str,
        port: int,
        suite: str = "nectar",
        model_dir: Optional[Union[str, os.PathLike]] = None,
        *,
        insecure_test_seed: Optional[int] = None,
        weight_cache: bool = True,
    ) -> None:
        self.host = host
        self.port = int(port)
        self.suite = suite
        self.model_dir = os.fspath(model_dir) if model_dir is not None else None
        self.insecure_test_seed = insecure_test_seed
        self.weight_cache = bool(weight_cache)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _run(self, task: str, items: list, images: list, max_new_tokens: int, progress: Progress, batch_size: int = 1) -> Tuple[list, Dict[str, Any]]:
        return _call(
            _nectar.client_run,
            progress,
            task,
            self.address,
            self.suite,
            self.model_dir,
            task,
            items,
            images,
            max_new_tokens,
            seed=self.insecure_test_seed,
            batch_size=_batch_size(batch_size),
            weight_cache=self.weight_cache,
        )

    def embed(
        self,
        texts: Union[Text, Sequence[Text]],
        normalize: bool = True,
        *,
        batch_size: int = 1,
        return_metrics: bool = False,
        progress: Progress = False,
    ) -> Any:
        """Sentence embeddings, ``(n, dim)`` float32: mean pooling over the tokens and L2
        normalisation, as sentence-transformers (BERT-family models). Texts longer than the
        model's ``max_seq_length`` are truncated, as sentence-transformers does.

        ``batch_size``: texts per query — a batch is one private forward pass (attention per
        text), so it pays the protocol's round trips once; 1 sends one query per text. The
        server bounds a batch's total tokens (``nectar serve --max-batch-tokens``)."""
        _check_normalize(normalize)
        outs, m = self._run("embed", _items(texts), [], 0, progress, batch_size)
        return _result(np.asarray([o[1] for o in outs], dtype=np.float32), m, return_metrics)

    def logits(self, text: Text, *, return_metrics: bool = False, progress: Progress = False) -> Any:
        """Classifier logits of one text (BERT sequence-classification heads), ``(labels,)``."""
        items = _items(text)
        if len(items) != 1:
            raise NectarError("logits() takes one text (or one list of token ids)")
        outs, m = self._run("classify", items, [], 0, progress)
        return _result(np.asarray(outs[0][1], dtype=np.float32), m, return_metrics)

    def classify(self, text: Text, *, return_metrics: bool = False, progress: Progress = False) -> Any:
        """``(label, scores)``: the most likely class (from ``config.json``'s ``id2label``, else
        ``LABEL_i``) and the softmax of the logits."""
        logits, m = self.logits(text, return_metrics=True, progress=progress)
        scores = _softmax(logits.astype(np.float64)).astype(np.float32)
        label = _labels(self.model_dir, len(scores))[int(np.argmax(scores))]
        return _result((label, scores), m, return_metrics)

    def generate(self, prompt: Text, max_new_tokens: int = 8, *, stream: bool = False, return_metrics: bool = False, progress: Progress = False) -> Any:
        """Greedy continuation of ``prompt`` (GPT-2, LLaMA), as given (no chat template): the
        generated text, or the new token ids (a list of ints) when the prompt was given as ids.

        ``stream=True``: an iterator over the new tokens as the client learns them — text
        pieces for a text prompt (empty while a character is incomplete), token ids for ids."""
        items = _items(prompt)
        if len(items) != 1:
            raise NectarError("generate() takes one prompt (or one list of token ids)")
        if max_new_tokens < 1:
            raise NectarError("max_new_tokens must be at least 1")
        if stream:
            if return_metrics or progress:
                raise NectarError("stream=True takes no return_metrics or progress (see TokenStream.metrics)")
            ids = isinstance(items[0], list)
            s = _nectar.client_stream(self.address, self.suite, self.model_dir, items[0], None, int(max_new_tokens), self.insecure_test_seed)
            return (t if ids else piece for t, piece in s)
        outs, m = self._run("generate", items, [], int(max_new_tokens), progress)
        _, _, tokens, text = outs[0]
        return _result(text if text is not None else list(tokens), m, return_metrics)

    def chat(self, messages: Sequence[Dict[str, str]], max_new_tokens: int = 128, *, stream: bool = False) -> Any:
        """The assistant's answer to ``messages`` (``[{"role": "user", "content": "..."}]``;
        roles ``system``, ``user``, ``assistant``), rendered with the chat template of
        ``model_dir`` (an instruct model's GGUF file): greedy tokens until its end-of-sequence
        token or ``max_new_tokens``. The server learns the prompt's and the answer's lengths,
        no token. ``stream=True``: an iterator over the answer's text pieces."""
        if max_new_tokens < 1:
            raise NectarError("max_new_tokens must be at least 1")
        msgs = []
        for m in messages:
            if not isinstance(m, dict) or set(m) - {"role", "content"} or "role" not in m or "content" not in m:
                raise NectarError("each message is a dict with 'role' and 'content'")
            msgs.append((str(m["role"]), str(m["content"])))
        if not msgs:
            raise NectarError("chat() needs at least one message")
        s = _nectar.client_stream(self.address, self.suite, self.model_dir, None, msgs, int(max_new_tokens), self.insecure_test_seed)
        pieces = (piece for _, piece in s)
        return pieces if stream else "".join(pieces)

    def vit(self, image: np.ndarray, *, return_metrics: bool = False, progress: Progress = False) -> np.ndarray:
        """Class logits of one image (ViT), ``(labels,)``: an 8-bit ``(H, W, 3)`` array
        (normalised with ``model_dir``'s ``preprocessor_config.json``) or ``(C, H, W)``
        floats already normalised, at the model's image size."""
        images = _pixels(self.model_dir, image)
        if len(images) != 1:
            raise NectarError("vit() takes one image")
        outs, m = self._run("classify", [], images, 0, progress)
        return _result(np.asarray(outs[0][1], dtype=np.float32), m, return_metrics)

    def __repr__(self) -> str:
        return f"nectar.Client({self.address}, suite={self.suite})"


def run_local(
    model_dir: Union[str, os.PathLike],
    inputs: Any,
    suite: str = "nectar",
    net: str = "lan",
    *,
    task: str = "auto",
    max_new_tokens: int = 8,
    normalize: bool = True,
    return_metrics: bool = False,
    progress: Progress = False,
    insecure_test_seed: Optional[int] = None,
    batch_size: int = 1,
) -> Any:
    """Both parties in this process over the simulated link ``net`` (``none``, ``MBPS/RTT_MS``
    with the round trip in ms such as ``100/80``, or a preset: ``lan``, ``wan``,
    ``bumblebee-wan``, ``blb-wan2``, ``blb-wan3``, ``rotl-wan``): the server with ``model_dir``'s
    weights, the client with its tokenizer.

    ``inputs``: texts or token-id lists (images as arrays for a ViT). ``task``: ``auto`` (the
    architecture's own: embed for BERT, generate for GPT-2 / LLaMA, classify for ViT),
    ``embed``, ``classify`` or ``generate``. Returns ``(n, dim)`` embeddings, ``(n, labels)``
    logits, or a list of generated texts (token-id lists for id prompts).
    ``insecure_test_seed`` (tests only, NO privacy): both parties seeded from it, so equal seeds
    give equal outputs bit for bit. ``batch_size`` (embed, classify): inputs per query, each
    batch one forward pass (as ``Client.embed``).
    """
    _check_normalize(normalize)
    model_dir = os.fspath(model_dir)
    is_image = isinstance(inputs, np.ndarray) and inputs.dtype != object and inputs.ndim >= 3
    items = [] if is_image else _items(inputs)
    images = _pixels(model_dir, inputs) if is_image else []
    outs, m = _call(
        _nectar.local_run,
        progress,
        "run_local",
        model_dir,
        suite,
        net,
        task,
        items,
        images,
        int(max_new_tokens),
        seed=insecure_test_seed,
        batch_size=_batch_size(batch_size),
    )
    kind = outs[0][0]
    if kind in ("embedding", "logits"):
        value: Any = np.asarray([o[1] for o in outs], dtype=np.float32)
    else:
        value = [o[3] if o[3] is not None else list(o[2]) for o in outs]
    return _result(value, m, return_metrics)
