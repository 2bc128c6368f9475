"""QuEST as a torchao workflow: ``torchao.quantization.quantize_(model, QuESTAOConfig(...))``.

This module belongs to the ``[torchao]`` extra (torchao >= 0.18; card ``optional-modules``): it
imports torchao at its top, so importing it without the extra raises an ``ImportError`` naming
``pip install 'quest-qat[torchao]'``, while ``import quest_qat`` never imports it. The config is a
:class:`~quest_qat.QuESTConfig` that is also a ``torchao.core.config.AOBaseConfig``; its handler,
registered with torchao's ``register_quantize_module_handler`` (torchao 0.18
``quantization/transform_module.py``), makes of each ``nn.Linear`` that ``quantize_``'s
``filter_fn`` selects exactly the :class:`~quest_qat.QuESTLinear` that :func:`~quest_qat.prepare_`
makes (same weight and bias Parameters).

Difference from :func:`~quest_qat.prepare_`: ``quantize_`` chooses the layers with its own
``filter_fn`` (default: every ``nn.Linear``, ``lm_head`` and tied layers included) and gives the
handler no layer name, so pass ``filter_fn=lambda m, fqn: not fqn.endswith("lm_head")`` to keep
the LM head in full precision as ``prepare_`` does. ``quantize_`` cannot replace the module it
is given (torchao drops the handler's result for the root), so a bare ``nn.Linear`` passed to
it stays unchanged: wrap it in ``nn.Sequential``.

Example::

    from torchao.quantization import quantize_
    from quest_qat.torchao_config import QuESTAOConfig

    quantize_(model, QuESTAOConfig(w_bits=4, a_bits=4))  # same layers as prepare_(model, ...)
"""

from dataclasses import dataclass

from torch import nn

from icml25_core.extras import requires_extra

from .api import QuESTConfig, _swap_linear, _swappable

with requires_extra("quest-qat", "torchao"):
    from torchao.core.config import AOBaseConfig
    from torchao.quantization.transform_module import register_quantize_module_handler

__all__ = ["QuESTAOConfig"]


@dataclass
class QuESTAOConfig(QuESTConfig, AOBaseConfig):
    """:class:`~quest_qat.QuESTConfig` for ``torchao.quantization.quantize_``.

    Same fields, defaults and validation as ``QuESTConfig`` (w_bits, a_bits, block, trust,
    clip_scale, grid, sparse48, on_incompatible).
    """


@register_quantize_module_handler(QuESTAOConfig)
def _quest_transform(module: nn.Module, config: QuESTAOConfig) -> nn.Module:
    # filter_fn may select any module: only plain nn.Linear (and GPT-2 Conv1D) layers are
    # swapped, as in prepare_.
    if not _swappable(module):
        return module
    layer = _swap_linear(module, config)
    return module if layer is None else layer
