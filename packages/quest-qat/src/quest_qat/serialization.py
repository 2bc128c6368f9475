"""Save and load converted QuEST models as safetensors (``save_quantized`` / ``load_quantized``).

A converted model's ``state_dict`` holds the integer layers' buffers (``qweight``, ``w_step``,
``w_add``, ``bias``, ``w_keep``) beside the full-precision tensors; how to rebuild each integer
layer lies in a ``quantization_config`` (the name and shape of the entry transformers'
quantizers use: ``quant_method``, bits, block, rotate) stored in the safetensors header and, for a
transformers model, in its ``config.json``. Loading rebuilds those layers in a model of the same
architecture (fresh from its config, any initialisation) and loads every tensor strictly, so a
missing, extra or misshapen tensor raises.

Format (version 1): ``model.safetensors`` with metadata ``quantization_config`` (JSON:
``quant_method="quest"``, ``format_version``, the model-wide ``w_bits``, ``a_bits``, ``block``,
``rotate`` (None where layers differ) and ``layers``: ``{fqn: {"class", "w_bits", "a_bits",
"block", "rotate"}}``) and ``aliases`` (JSON ``{name: name it shares storage with}``, for tied
weights, which safetensors stores once).
"""

import copy
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .api import _set
from .nn import QuESTInt4Linear, QuESTInt8Linear, QuESTLinear, _is_conv1d, _QuESTCodesLinear

__all__ = ["save_quantized", "load_quantized", "quantization_config"]

WEIGHTS_NAME = "model.safetensors"
FORMAT_VERSION = 1
_CLASSES = {cls.__name__: cls for cls in (QuESTInt4Linear, QuESTInt8Linear)}
_FIELDS = ("w_bits", "a_bits", "block", "rotate")


def quantization_config(model: nn.Module) -> dict:
    """The ``quantization_config`` entry describing the converted layers of `model`.

    Returns
    -------
    dict
        ``{"quant_method": "quest", "format_version": 1, "w_bits", "a_bits", "block", "rotate",
        "layers": {fqn: {"class", "w_bits", "a_bits", "block", "rotate"}}}``; a model-wide field
        is None where the layers differ (``a_bits`` None also means weight-only).

    Raises
    ------
    TypeError
        If `model` is not an nn.Module.
    ValueError
        If `model` holds a QuESTLinear that was not converted, or no converted layer.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    fake = [fqn for fqn, m in model.named_modules() if isinstance(m, QuESTLinear)]
    if fake:
        raise ValueError(
            f"`model` holds QuESTLinear layers that are not converted ({', '.join(fake[:3])}): "
            "call convert_(model) first (a QAT checkpoint is its plain state_dict)"
        )
    layers = {
        fqn: {"class": type(m).__name__, **{f: getattr(m, f) for f in _FIELDS}}
        for fqn, m in model.named_modules()
        if isinstance(m, _QuESTCodesLinear)
    }
    if not layers:
        raise ValueError("`model` holds no converted QuEST layer: prepare_, train, convert_ it")
    config: dict = {"quant_method": "quest", "format_version": FORMAT_VERSION}
    for field in _FIELDS:
        values = {json.dumps(layer[field]) for layer in layers.values()}
        config[field] = json.loads(values.pop()) if len(values) == 1 else None
    config["layers"] = layers
    return config


def _deduplicate(state: dict) -> tuple[dict, dict]:
    """Tensors that are the same view of the same storage (tied weights) kept once, plus the
    aliases; other tensors copied when they share storage (safetensors refuses shared memory)."""
    kept: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    views: dict[tuple, str] = {}
    storages: set[int] = set()
    for name, tensor in state.items():
        tensor = tensor.detach()
        ptr = tensor.untyped_storage().data_ptr()
        view = (ptr, tensor.storage_offset(), tuple(tensor.shape), tensor.stride(), tensor.dtype)
        if view in views:
            aliases[name] = views[view]
            continue
        views[view] = name
        shared = ptr in storages and tensor.numel() > 0
        storages.add(ptr)
        kept[name] = tensor.clone() if shared else tensor.contiguous()
    return kept, aliases


def save_quantized(model: nn.Module, directory) -> Path:
    """Write a converted `model` to `directory` (created if missing).

    Writes ``model.safetensors`` (every tensor of the state_dict, tied ones once; the
    ``quantization_config`` in its metadata) and, when `model` has a transformers ``config``
    (``save_pretrained``), ``config.json`` with that ``quantization_config`` added (the model's
    own config object is not changed).

    Parameters
    ----------
    model : nn.Module
        A model after :func:`~quest_qat.convert_`.
    directory : str or os.PathLike

    Returns
    -------
    Path
        The safetensors file.

    Raises
    ------
    TypeError
        If `model` is not an nn.Module.
    ValueError
        If `model` holds unconverted QuESTLinear layers or no converted layer.
    NotADirectoryError
        If `directory` exists and is a file.
    """
    from safetensors.torch import save_file

    config = quantization_config(model)
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"`directory` {str(directory)!r} is a file")
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v for k, v in model.state_dict().items() if not k.endswith("._extra_state")}
    tensors, aliases = _deduplicate(state)
    path = directory / WEIGHTS_NAME
    metadata = {
        "format": "pt",
        "quantization_config": json.dumps(config),
        "aliases": json.dumps(aliases),
    }
    save_file(tensors, str(path), metadata=metadata)
    hf_config: Any = getattr(model, "config", None)
    if callable(getattr(hf_config, "save_pretrained", None)):
        hf_config = copy.deepcopy(hf_config)
        hf_config.quantization_config = config
        hf_config.save_pretrained(str(directory))
    return path


def load_quantized(model: nn.Module, directory) -> nn.Module:
    """Load a model written by :func:`save_quantized` into `model`, in place.

    Everything is checked before `model` is touched, so a failed load leaves it unchanged: the
    metadata (``quantization_config``: class, ``w_bits``, ``a_bits``, ``block``, ``rotate`` of
    each layer; ``aliases``), each quantized layer's tensors (dtype and shape, see
    :meth:`QuESTInt4Linear.check_arguments`, and a ``bias`` exactly where `model`'s layer has
    one) and every other tensor's name and shape against `model`'s state_dict (strict, as
    ``load_state_dict(strict=True)``; source: the torch ``nn.Module.load_state_dict`` contract).

    Parameters
    ----------
    model : nn.Module
        The same architecture, not converted (e.g. ``LlamaForCausalLM(config)`` built from the
        saved ``config.json``; its initial values do not matter). The layers named in the
        ``quantization_config`` are replaced by their integer form; every tensor is then loaded
        strictly, onto the device of `model`'s first parameter.
    directory : str or os.PathLike
        Holding ``model.safetensors``.

    Returns
    -------
    nn.Module
        `model`.

    Raises
    ------
    TypeError
        If `model` is not an nn.Module.
    FileNotFoundError
        If ``model.safetensors`` is missing.
    ValueError
        Naming the file: if it has no QuEST ``quantization_config``, another format version, or
        malformed metadata (not JSON, a missing field, a bad bits/block/rotate value, an alias to
        a missing tensor); if a layer it names is missing from `model` or has other in/out
        features or another bias layout; if a tensor is missing, unexpected, misshapen or of the
        wrong dtype (the message names the tensor).
    """
    from safetensors import safe_open
    from safetensors.torch import load_file

    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    path = Path(directory) / WEIGHTS_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"no {WEIGHTS_NAME} in {str(directory)!r} (save_quantized writes it)"
        )
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
    config = _json_entry(metadata, "quantization_config", path, {})
    if not isinstance(config, dict) or config.get("quant_method") != "quest":
        raise ValueError(f"{path} has no QuEST quantization_config (not from save_quantized)")
    if config.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path} has format_version {config.get('format_version')!r}; this version of "
            f"quest-qat reads {FORMAT_VERSION}"
        )
    layers = config.get("layers")
    if not isinstance(layers, dict) or not layers:
        raise ValueError(
            f"{path}: malformed quantization_config: `layers` must be a non-empty dict "
            f"{{name: spec}}, got {layers!r}"
        )
    aliases = _json_entry(metadata, "aliases", path, {})
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise ValueError(
            f"{path}: malformed aliases: must be a dict {{name: name}}, got {aliases!r}"
        )
    first = next(model.parameters(), None)
    device = "cpu" if first is None else str(first.device)
    state: dict[str, Any] = load_file(str(path), device=device)
    for name, target in aliases.items():
        if target not in state:
            raise ValueError(f"{path}: malformed aliases: {name!r} -> {target!r}, no such tensor")
        state[name] = state[target]
    # 1. build every integer layer (validated) without touching `model`
    new: dict[str, _QuESTCodesLinear] = {}
    for fqn, spec in layers.items():
        new[fqn] = _rebuild(model, fqn, spec, state, path)
        state[f"{fqn}._extra_state"] = new[fqn].get_extra_state()
    # 2. the state_dict `model` will have: compare names and shapes with the file's
    _check_keys(model, new, state, path)
    # 3. swap and load; restore the old layers if torch still refuses
    old = {fqn: model.get_submodule(fqn) for fqn in new}
    for fqn, layer in new.items():
        _set(model, fqn, layer)
    try:
        model.load_state_dict(state, strict=True)
    except (RuntimeError, ValueError) as err:
        for fqn, previous in old.items():
            _set(model, fqn, previous)
        raise ValueError(f"the tensors of {path} do not fit `model`: {err}") from None
    return model


def _json_entry(metadata: dict, key: str, path: Path, default):
    """The JSON value of the safetensors metadata `key` (`default` if absent)."""
    if key not in metadata:
        return default
    try:
        return json.loads(metadata[key])
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: malformed {key} (not JSON: {err})") from None


def _layer_sizes(old: nn.Module, fqn: str) -> tuple[int, int, bool]:
    """``(N, K, has_bias)`` of the layer `old` of `model` at `fqn` (nn.Linear, GPT-2 Conv1D, a
    QuEST layer)."""
    bias = getattr(old, "bias", None)
    if isinstance(old, QuESTLinear | _QuESTCodesLinear):
        return old.out_features, old.in_features, isinstance(bias, torch.Tensor)
    weight = getattr(old, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError(
            f"`model`'s layer {fqn!r} is a {type(old).__name__} with no 2-D weight: the "
            "checkpoint quantizes a linear layer there"
        )
    k, n = weight.shape if _is_conv1d(old) else weight.shape[::-1]
    return int(n), int(k), isinstance(bias, torch.Tensor)


def _rebuild(model: nn.Module, fqn: str, spec: Any, state: dict, path: Path) -> _QuESTCodesLinear:
    """The integer layer `spec` describes, made of its tensors in `state`, after checking the
    spec, the tensors and that `model` has a layer of the same sizes and bias layout at `fqn`."""
    where = f"{path}, layer {fqn!r}"
    if not isinstance(fqn, str) or not isinstance(spec, dict):
        raise ValueError(f"{path}: malformed quantization_config: layers[{fqn!r}] = {spec!r}")
    missing = [f for f in ("class", *_FIELDS) if f not in spec]
    if missing:
        raise ValueError(f"{path}: malformed quantization_config: layers[{fqn!r}] lacks {missing}")
    try:
        old = model.get_submodule(fqn)
    except AttributeError:
        raise ValueError(f"`model` has no layer {fqn!r}, which {path} quantizes") from None
    cls = _CLASSES.get(str(spec["class"]))
    if cls is None:
        raise ValueError(f"{where}: unknown class {spec['class']!r}")
    n, k, has_bias = _layer_sizes(old, fqn)
    tensors = {b: state.get(f"{fqn}.{b}") for b in ("qweight", "w_step", "w_add", "bias", "w_keep")}
    for b in ("qweight", "w_step", "w_add") + (("bias",) if has_bias else ()):
        if tensors[b] is None:
            raise ValueError(f"{where}: missing tensor {fqn}.{b} (`model`'s layer needs it)")
    if not has_bias and tensors["bias"] is not None:
        raise ValueError(f"{where}: unexpected tensor {fqn}.bias (`model`'s layer has no bias)")
    try:
        cls.check_arguments(**tensors, **{f: spec[f] for f in _FIELDS}, prefix=f"{fqn}.")
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None
    qweight: torch.Tensor = state[f"{fqn}.qweight"]
    if (qweight.shape[0], qweight.shape[1] * cls.codes_per_byte) != (n, k):
        raise ValueError(
            f"layer {fqn!r}: the checkpoint has K={qweight.shape[1] * cls.codes_per_byte}, "
            f"N={qweight.shape[0]}, `model` has K={k}, N={n} ({path})"
        )
    return cls(**tensors, **{f: spec[f] for f in _FIELDS})


def _check_keys(model: nn.Module, new: dict, state: dict, path: Path) -> None:
    """Raise unless `state` has exactly the names and shapes of `model`'s state_dict once the
    layers in `new` replace theirs (what ``load_state_dict(strict=True)`` would check)."""
    expected: dict[str, tuple] = {}
    for name, t in model.state_dict(keep_vars=True).items():
        if not any(name.startswith(f"{fqn}.") for fqn in new):
            expected[name] = tuple(t.shape) if isinstance(t, torch.Tensor) else ()
    for fqn, layer in new.items():
        for name, t in layer.state_dict(prefix=f"{fqn}.", keep_vars=True).items():
            expected[name] = tuple(t.shape) if isinstance(t, torch.Tensor) else ()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    misshapen = [
        f"{name}: {tuple(state[name].shape)} in the file, {shape} in `model`"
        for name, shape in expected.items()
        if name in state
        and isinstance(state[name], torch.Tensor)
        and tuple(state[name].shape) != shape
    ]
    problems = []
    if missing:
        problems.append(f"missing tensor(s) {missing}")
    if unexpected:
        problems.append(f"unexpected tensor(s) {unexpected}")
    if misshapen:
        problems.append(f"misshapen tensor(s) {misshapen}")
    if problems:
        raise ValueError(f"the tensors of {path} do not fit `model`: {'; '.join(problems)}")
