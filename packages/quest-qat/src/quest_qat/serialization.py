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
        If the file has no QuEST ``quantization_config`` or another format version, a layer it
        names is missing from `model` or has other in/out features, or the tensors do not match
        `model`'s (missing, unexpected or misshapen keys).
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
    config = json.loads(metadata.get("quantization_config", "{}"))
    if config.get("quant_method") != "quest":
        raise ValueError(f"{path} has no QuEST quantization_config (not from save_quantized)")
    if config.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path} has format_version {config.get('format_version')!r}; this version of "
            f"quest-qat reads {FORMAT_VERSION}"
        )
    first = next(model.parameters(), None)
    device = "cpu" if first is None else str(first.device)
    state: dict[str, Any] = load_file(str(path), device=device)
    for name, target in json.loads(metadata.get("aliases", "{}")).items():
        state[name] = state[target]
    for fqn, spec in config["layers"].items():
        _set(model, fqn, _rebuild(model, fqn, spec, state))
        state[f"{fqn}._extra_state"] = {f: spec[f] for f in ("a_bits", "block", "rotate")}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise ValueError(f"the tensors of {path} do not fit `model`: {err}") from None
    return model


def _rebuild(model: nn.Module, fqn: str, spec: dict, state: dict) -> _QuESTCodesLinear:
    """The integer layer `spec` describes, made of its tensors in `state`, after checking that
    `model` has a layer of the same sizes at `fqn`."""
    try:
        old = model.get_submodule(fqn)
    except AttributeError:
        raise ValueError(f"`model` has no layer {fqn!r}, which the checkpoint quantizes") from None
    cls = _CLASSES.get(str(spec.get("class")))
    if cls is None:
        raise ValueError(f"layer {fqn!r}: unknown class {spec.get('class')!r}")
    tensors = {b: state.get(f"{fqn}.{b}") for b in ("qweight", "w_step", "w_add", "bias", "w_keep")}
    if any(tensors[b] is None for b in ("qweight", "w_step", "w_add")):
        raise ValueError(f"layer {fqn!r}: the checkpoint lacks its qweight/w_step/w_add")
    layer = cls(**tensors, **{f: spec[f] for f in _FIELDS})
    weight = getattr(old, "weight", None)
    if isinstance(weight, torch.Tensor):
        n_k = (layer.out_features, layer.in_features)
        if tuple(weight.shape) != (n_k[::-1] if _is_conv1d(old) else n_k):
            raise ValueError(
                f"layer {fqn!r}: the checkpoint has K={layer.in_features}, "
                f"N={layer.out_features}, `model` has a weight of shape {tuple(weight.shape)}"
            )
    return layer
