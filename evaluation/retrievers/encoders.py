"""Where and how a sentence-transformers model encodes: device, backend, precision, batch size.

Devices: ``cuda`` (NVIDIA), ``mps`` (Apple silicon) or ``cpu``, picked in that order by
:func:`pick_device` unless one is asked for. Backends:

- ``torch``: the model as sentence-transformers loads it; half precision (fp16) on CUDA unless
  turned off, fp32 elsewhere;
- ``onnx``: the model's transformer exported once to ONNX (``torch.onnx.export``, eager
  attention), fused by ONNX Runtime's transformer optimizer and run with ONNX Runtime (fp32); the
  pooling / normalisation modules after it stay those of the model;
- ``onnx-int8``: the same graph with its weights quantised to int8 by ONNX Runtime's dynamic
  quantisation (``onnxruntime.quantization.quantize_dynamic``; details in :data:`RECIPE`):
  vectors within cosine 0.98 of fp32 (0.995 on average on MiniLM), 1.6-1.8x torch on a 2-core
  AVX2 CPU, more on CPUs with int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI).

The same export serves a sentence-transformers ``CrossEncoder`` (the reranker of
:mod:`evaluation.retrievers.rerank`): its transformer is exported with its classification head,
logits out, and :class:`OnnxCrossEncoder` runs it.

Exports are written once under ``<cache_dir>/onnx/<key>/`` (never into the model's own folder,
which may be read-only or shared), the key naming the model, the recipe and the onnxruntime
version, and found there by every later run. Everything works offline.

sentence-transformers' own ``backend="onnx"`` needs ``optimum-onnx``, whose published versions
require transformers < 4.58 while sentence-transformers 6 requires transformers >= 5; the export
here uses only torch and onnxruntime, which is why it does not go through ``optimum``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from storage.errors import IFJudgeError

BACKENDS = ("torch", "onnx", "onnx-int8")
DEVICES = ("cpu", "cuda", "mps")
BATCH_SIZES = {"cuda": 128, "mps": 64, "cpu": 32}
ONNX_OPSET = 17


def pick_device(requested: str | None = None) -> str:
    """``requested`` when given (checked), else CUDA, then Apple MPS, then CPU.

    Accepts ``cpu``, ``cuda``, ``cuda:N`` and ``mps``; a device that is not available here is
    refused with what is.

    Examples
    --------
    >>> pick_device("cpu")
    'cpu'
    >>> pick_device() in ("cuda", "mps", "cpu")
    True
    """
    import torch

    available = available_devices()
    if requested is None or requested == "auto":
        return available[0]
    kind = requested.split(":", 1)[0]
    if kind not in DEVICES or (kind != "cuda" and ":" in requested):
        raise IFJudgeError(f"unknown device {requested!r}; expected one of auto, cpu, cuda, cuda:N, mps")
    if kind not in available:
        raise IFJudgeError(f"device {requested!r} is not available here; available: {', '.join(available)}")
    if kind == "cuda" and ":" in requested:
        index = requested.split(":", 1)[1]
        if not index.isdigit() or int(index) >= torch.cuda.device_count():
            raise IFJudgeError(f"device {requested!r} does not exist; this machine has {torch.cuda.device_count()} CUDA device(s)")
    return requested


def available_devices() -> list[str]:
    """The device kinds usable here, best first (``cpu`` always last)."""
    import torch

    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found + ["cpu"]


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise IFJudgeError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    return backend


def precision_for(device: str, backend: str, *, fp16: bool = True) -> str:
    """The numeric precision the vectors are computed in: ``fp16``, ``fp32`` or ``int8``.

    Examples
    --------
    >>> precision_for("cuda", "torch"), precision_for("cuda", "torch", fp16=False)
    ('fp16', 'fp32')
    >>> precision_for("cpu", "torch"), precision_for("cpu", "onnx-int8")
    ('fp32', 'int8')
    """
    check_backend(backend)
    if backend == "onnx-int8":
        return "int8"
    if backend == "torch" and fp16 and device.startswith("cuda"):
        return "fp16"
    return "fp32"


def default_batch_size(device: str) -> int:
    """Texts per forward pass: 128 on CUDA, 64 on MPS, 32 on a CPU (sentence-transformers' own
    default, where larger batches only add padding).

    Examples
    --------
    >>> default_batch_size("cuda:1"), default_batch_size("cpu")
    (128, 32)
    """
    return BATCH_SIZES[device.split(":", 1)[0]]


# -- ONNX export ---------------------------------------------------------------------------
#: How the ONNX files are made. Its digest (:func:`recipe_id`) names the export folder and, through
#: :func:`recipe_tag`, belongs in the embedding cache identity: a changed recipe never reuses an
#: older export, nor the vectors one computed. Each step was measured on MiniLM (bench/README.md).
RECIPE = {
    # Eager attention: with it the graph has the plain MatMul/Softmax attention pattern that the
    # optimizer fuses (transformers' SDPA path exports an IsNaN/Where mask that it cannot fuse).
    "export": f"torch.onnx.export (TorchScript), opset {ONNX_OPSET}, eager attention",
    # Fused Attention, EmbedLayerNormalization, SkipLayerNormalization, BiasGelu; opt_level 0 so the
    # file stays portable across execution providers. Kept only if within OPTIMIZER_TOLERANCE.
    "optimize": "onnxruntime.transformers.optimizer, model_type bert, opt_level 0",
    # Dynamic int8 (weights quantised once, activations per batch). reduce_range: 7-bit weights,
    # so AVX2's u8 x s8 multiply-add (no VNNI) cannot saturate; per channel: one scale per
    # output column. The FFN output products of the first layers stay fp32: quantising their
    # input (a GELU output with a long tail) to 8 bits costs the most accuracy.
    "int8": {
        "weight_type": "QInt8", "per_channel": True, "reduce_range": True,
        "op_types": ["MatMul", "Attention"], "fp32_ffn_output_layers": 3,
    },
}
#: Largest |difference| of token embeddings allowed between the optimized and the plain export.
OPTIMIZER_TOLERANCE = 1e-4
_FFN_OUTPUT = re.compile(r"layers?\.(\d+)/output/dense/MatMul$")


def recipe_id() -> str:
    """12 hex digits identifying :data:`RECIPE`.

    Examples
    --------
    >>> len(recipe_id()), recipe_id() == recipe_id()
    (12, True)
    """
    return hashlib.sha256(json.dumps(RECIPE, sort_keys=True).encode("utf-8")).hexdigest()[:12]


def recipe_tag(backend: str) -> str:
    """What an embedding cache identity of ``backend`` carries besides backend and precision:
    nothing for ``torch``, ``|onnx-recipe=<recipe_id()>`` for the ONNX backends.

    Examples
    --------
    >>> recipe_tag("torch")
    ''
    >>> recipe_tag("onnx-int8") == "|onnx-recipe=" + recipe_id()
    True
    """
    check_backend(backend)
    return "" if backend == "torch" else f"|onnx-recipe={recipe_id()}"


def _require_onnxruntime():
    """onnxruntime, or an error that says how to get it (or to use ``--backend torch``)."""
    try:
        import onnx  # noqa: F401  (the optimizer and the quantiser need it)
        import onnxruntime
    except ImportError as exc:
        raise IFJudgeError(
            f"the onnx and onnx-int8 backends need the onnxruntime and onnx packages ({exc.name} is not "
            "installed): pip install onnxruntime onnx (versions in requirements.txt), or use --backend torch"
        ) from None
    return onnxruntime


def onnx_dir(model_identity: str, cache_dir: str | os.PathLike) -> Path:
    """Folder of the ONNX exports of one model made by the current recipe with the installed
    onnxruntime: ``<cache_dir>/onnx/<sha256(identity, recipe_id(), onnxruntime version)[:32]>``.

    Examples
    --------
    >>> onnx_dir("m", "c").parent.as_posix(), len(onnx_dir("m", "c").name)
    ('c/onnx', 32)
    """
    ort = _require_onnxruntime()
    key = f"{model_identity}|recipe={recipe_id()}|onnxruntime={ort.__version__}"
    return Path(cache_dir) / "onnx" / hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _transformer(model):
    from sentence_transformers.models import Transformer

    first = model[0]
    if not isinstance(first, Transformer):
        raise IFJudgeError(
            f"the ONNX backends need a model whose first module is a Transformer; this one starts with {type(first).__name__}"
        )
    return first


def _tokenize(model, texts: list) -> dict:
    features = (model.preprocess if hasattr(model, "preprocess") else model.tokenize)(texts)
    return {k: v for k, v in features.items() if hasattr(v, "shape")}


_SAMPLE = ["an example sentence", "another, somewhat longer sentence: it makes the batch pad the first one"]
#: a cross-encoder reads (query, document) pairs
_SAMPLE_PAIRS = [("an example query", "an example sentence"), ("another query", _SAMPLE[1])]


def _scores_pairs(model) -> bool:
    """True for a sentence-transformers CrossEncoder (its transformer classifies a text pair:
    the export's output is the ``logits``), False for a bi-encoder (token embeddings)."""
    return getattr(_transformer(model), "transformer_task", None) == "sequence-classification"


def _sample(model) -> dict:
    return _tokenize(model, _SAMPLE_PAIRS if _scores_pairs(model) else _SAMPLE)


def _omp_threads() -> int:
    """``$OMP_NUM_THREADS`` as a positive integer, else 0 (onnxruntime's default)."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else 0


def _session(path: Path, *, threads: int = 0, device: str = "cpu"):
    ort = _require_onnxruntime()
    providers = ["CPUExecutionProvider"]
    if device.startswith("cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
        providers.insert(0, "CUDAExecutionProvider")
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL  # an encoder's layers follow each other
    # 0: the thread cap of the process (OMP_NUM_THREADS: `ifjudge worker` sets it to one fewer than
    # the cores, so the web app beside it keeps a core), else onnxruntime's default, one per physical core
    options.intra_op_num_threads = threads or _omp_threads()
    return ort.InferenceSession(str(path), options, providers=providers)


def _run(path: Path, feed: dict) -> np.ndarray:
    session = _session(path)
    return session.run(None, {i.name: feed[i.name] for i in session.get_inputs()})[0]


def _export_plain(model, target: Path) -> None:
    """torch.onnx export of the model's transformer (token embeddings out; a cross-encoder's
    logits), eager attention."""
    import torch

    auto = _transformer(model).auto_model.eval()
    pairs = _scores_pairs(model)
    sample = _sample(model)
    names = list(sample)
    output = "logits" if pairs else "token_embeddings"

    class _Forward(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            out = self.inner(**dict(zip(names, inputs)))
            return out.logits if pairs else out.last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    axes[output] = {0: "batch"} if pairs else {0: "batch", 1: "tokens"}
    before = getattr(auto.config, "_attn_implementation", None)
    switch = hasattr(auto, "set_attn_implementation") and before not in (None, "eager")
    if switch:
        auto.set_attn_implementation("eager")
    try:
        # The legacy (TorchScript) exporter: dynamic batch and token axes in ~2 s with no extra
        # package; its tracer warnings are about branches that are constant for an encoder.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Forward(auto).cpu(), tuple(sample[n].cpu() for n in names), str(target),
                input_names=names, output_names=[output], dynamic_axes=axes,
                opset_version=ONNX_OPSET, dynamo=False,
            )
    finally:
        if switch:
            auto.set_attn_implementation(before)


def _optimize(model, plain: Path, target: Path) -> bool:
    """Write the fused graph of ``plain`` to ``target`` if it gives the same token embeddings
    (a cross-encoder: logits) within :data:`OPTIMIZER_TOLERANCE` on a padded sample; False
    (nothing kept) otherwise."""
    from onnxruntime.transformers import optimizer

    config = _transformer(model).auto_model.config
    logging.disable(logging.WARNING)  # the optimizer logs each fusion it could not apply
    try:
        fused = optimizer.optimize_model(
            str(plain), model_type="bert", opt_level=0,
            num_heads=getattr(config, "num_attention_heads", 0), hidden_size=getattr(config, "hidden_size", 0),
        )
        fused.save_model_to_file(str(target))
    except Exception:  # an architecture the optimizer does not know: the plain export serves
        target.unlink(missing_ok=True)
        return False
    finally:
        logging.disable(logging.NOTSET)
    feed = {k: v.cpu().numpy() for k, v in _sample(model).items()}
    if np.abs(_run(target, feed) - _run(plain, feed)).max() > OPTIMIZER_TOLERANCE:
        target.unlink()
        return False
    return True


def int8_excluded_nodes(onnx_file: Path) -> list[str]:
    """Names of the products :data:`RECIPE` keeps in fp32: the FFN output MatMul of the first
    ``fp32_ffn_output_layers`` layers (node names such as ``.../layer.0/output/dense/MatMul``;
    a graph named otherwise keeps none)."""
    import onnx

    first = RECIPE["int8"]["fp32_ffn_output_layers"]
    graph = onnx.load(str(onnx_file), load_external_data=False).graph
    return [n.name for n in graph.node if (m := _FFN_OUTPUT.search(n.name)) and int(m.group(1)) < first]


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    spec = RECIPE["int8"]
    logging.disable(logging.WARNING)  # its "consider pre-processing" hint, logged on the root logger
    try:
        quantize_dynamic(
            str(source), str(target), weight_type=QuantType[spec["weight_type"]],
            per_channel=spec["per_channel"], reduce_range=spec["reduce_range"],
            op_types_to_quantize=spec["op_types"], nodes_to_exclude=int8_excluded_nodes(source),
            # the fused ops are outside the ONNX domain: shape inference cannot type their outputs
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)


def export_onnx(model, directory: Path, *, int8: bool) -> Path:
    """Write ``model.onnx`` (and ``model_int8.onnx`` when ``int8``) into ``directory`` unless
    already there, following :data:`RECIPE`; returns the file to load.

    ``model.onnx`` is the optimized (fused) graph when the optimizer's output agrees with the plain
    export, else the plain export; ``model_int8.onnx`` is its dynamic int8 quantisation. Files are
    written to temporary names, then renamed, so a crashed export never leaves a file that looks
    finished. ``directory`` comes from :func:`onnx_dir`, whose name carries the recipe.
    """
    _require_onnxruntime()
    directory.mkdir(parents=True, exist_ok=True)
    fp32 = directory / "model.onnx"
    tag = f"{os.getpid()}.tmp.onnx"
    if not fp32.exists():
        plain, fused = directory / f".plain.{tag}", directory / f".fused.{tag}"
        try:
            _export_plain(model, plain)
            os.replace(fused if _optimize(model, plain, fused) else plain, fp32)
        finally:
            plain.unlink(missing_ok=True)
            fused.unlink(missing_ok=True)
    if not int8:
        return fp32
    quantised = directory / "model_int8.onnx"
    if not quantised.exists():
        tmp = directory / f".int8.{tag}"
        try:
            _quantize(fp32, tmp)
            os.replace(tmp, quantised)
        finally:
            tmp.unlink(missing_ok=True)
    return quantised


class OnnxEncoder:
    """A sentence-transformers model whose transformer runs in ONNX Runtime.

    Tokenisation and the modules after the transformer (pooling, normalisation, dense layers)
    are the model's own, so the vectors are those of ``model.encode`` up to the export's
    numerical differences (fp32: max |difference| ~2e-7 on MiniLM; int8: see bench/README.md).
    Texts are sorted by length before batching, so a batch pads only to its longest text.

    Parameters
    ----------
    model : SentenceTransformer
        Loaded on the CPU.
    onnx_file : path
        From :func:`export_onnx`.
    device : str
        ``cuda`` uses ONNX Runtime's CUDA provider when installed, otherwise the CPU provider.
    threads : int
        Intra-op threads; 0 (default): ``$OMP_NUM_THREADS`` when set (the cap ``ifjudge worker``
        puts on torch and BLAS), else ONNX Runtime's default, one per physical core.
    """

    def __init__(self, model, onnx_file: Path, *, device: str = "cpu", threads: int = 0):
        self.model = model
        self.onnx_file = Path(onnx_file)
        self.session = _session(self.onnx_file, threads=threads, device=device)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.after = list(model)[1:]

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        import torch

        out = []
        texts = list(texts)
        # Sorted by length as sentence-transformers does, so a batch pads to similar lengths.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            features = _tokenize(self.model, batch)
            feed = {n: features[n].cpu().numpy() for n in self.inputs}
            token_embeddings = torch.from_numpy(self.session.run(None, feed)[0])
            state = {"token_embeddings": token_embeddings, "attention_mask": features["attention_mask"]}
            with torch.no_grad():
                for module in self.after:
                    state = module(state)
            out.append(state["sentence_embedding"].float().numpy())
        if not out:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.concatenate(out)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result


class OnnxCrossEncoder:
    """A sentence-transformers ``CrossEncoder`` whose transformer runs in ONNX Runtime.

    Tokenisation of the (query, document) pairs and the activation after the logits are the
    model's own (``CrossEncoder.preprocess``, ``activation_fn``: a sigmoid for one label), so the
    scores are those of ``CrossEncoder.predict`` up to the export's numerical differences. Pairs
    are sorted by length before batching, so a batch pads only to its longest pair.

    Parameters
    ----------
    model : CrossEncoder
        Loaded on the CPU.
    onnx_file : path
        From :func:`export_onnx`.
    device : str
        ``cuda`` uses ONNX Runtime's CUDA provider when installed, otherwise the CPU provider.
    threads : int
        Intra-op threads; 0 (default): ``$OMP_NUM_THREADS`` when set (the cap ``ifjudge worker``
        puts on torch and BLAS), else ONNX Runtime's default, one per physical core.
    """

    def __init__(self, model, onnx_file: Path, *, device: str = "cpu", threads: int = 0):
        self.model = model
        self.onnx_file = Path(onnx_file)
        self.session = _session(self.onnx_file, threads=threads, device=device)
        self.inputs = [i.name for i in self.session.get_inputs()]

    def predict(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> np.ndarray:
        """One score per pair, in the order given."""
        import torch

        pairs = [tuple(p) for p in pairs]
        order = np.argsort([-(len(q) + len(d)) for q, d in pairs], kind="stable")
        out = []
        for start in range(0, len(pairs), batch_size):
            features = _tokenize(self.model, [pairs[i] for i in order[start : start + batch_size]])
            logits = torch.from_numpy(self.session.run(None, {n: features[n].cpu().numpy() for n in self.inputs})[0])
            with torch.no_grad():
                scores = self.model.activation_fn(logits) if self.model.activation_fn is not None else logits
            out.append((scores.squeeze(-1) if scores.ndim > 1 and scores.shape[-1] == 1 else scores).float().numpy())
        if not out:
            return np.zeros(0, dtype=np.float32)
        scores = np.concatenate(out)
        result = np.empty_like(scores)
        result[order] = scores
        return result
