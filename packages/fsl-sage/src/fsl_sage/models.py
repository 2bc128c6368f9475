"""Split models: client part, server part and the auxiliary model of the cut layer.

Source: official ``srijith1996/FSL-SAGE`` model configs (``simple_conv`` client/server,
``linear_grad_scalar`` aux; ResNet-18 split after ``layer2``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from icml25_core import check_scalar, check_tensor

from .aux import GradScalarAux, LinearGradScalarAux, _check_shape, check_labels, check_log_probs

__all__ = ["SplitSpec", "resnet18_split", "simple_conv_split", "split_sequential"]


@dataclass
class SplitSpec:
    """A model split at the cut layer.

    Attributes
    ----------
    client : nn.Module
        ``x -> z``: input ``[B, *X]`` to smashed data ``[B, *cut_shape]`` (float32).
    server : nn.Module
        ``z -> log-probs [B, C]``.
    aux_factory : callable
        ``() -> GradScalarAux`` making a fresh auxiliary model for one client.
    cut_shape : tuple of int
        Per-sample shape of the smashed data.
    num_classes : int
        ``C >= 2``.

    Raises
    ------
    TypeError
        If `client` or `server` is not an ``nn.Module``, `aux_factory` is not callable or
        `cut_shape` is not an int or a tuple of ints.
    ValueError
        If `cut_shape` holds a size < 1 or ``num_classes < 2``.

    Notes
    -----
    Whether the parts fit together is checked where data first meets them: the server's
    output must be ``[N, C]`` log-probabilities (:meth:`check_input`, run on every partition
    by :class:`~fsl_sage.Simulation` and on every Flower node), and so must the aux models'
    (:meth:`check_aux`), since every loss is ``NLL(output, y)``.
    """

    client: nn.Module
    server: nn.Module
    aux_factory: Callable[[], GradScalarAux]
    cut_shape: tuple[int, ...]
    num_classes: int

    def __post_init__(self):
        for name in ("client", "server"):
            module = getattr(self, name)
            if not isinstance(module, nn.Module):
                raise TypeError(f"`{name}` must be an nn.Module, got {type(module).__name__}")
        if not callable(self.aux_factory):
            raise TypeError(
                "`aux_factory` must be a callable returning a GradScalarAux, got "
                f"{type(self.aux_factory).__name__}"
            )
        self.cut_shape = _check_shape(self.cut_shape, "cut_shape")
        check_scalar(self.num_classes, "num_classes", kind=int, low=2)

    @classmethod
    def from_sequential(
        cls, model: nn.Sequential, cut: int, example_input: torch.Tensor, num_classes: int
    ) -> SplitSpec:
        """Split ``model`` (ending in log-probabilities) at ``cut``, with a linear aux.

        Parameters
        ----------
        model : nn.Sequential
            ``x -> log-probs [B, C]`` (end it with ``nn.LogSoftmax(dim=1)``).
        cut : int
            Layers kept on the client, ``1 <= cut < len(model)``.
        example_input : Tensor, shape [B, *X], float32
            One batch of inputs; its first sample is run once (eval mode, no grad) to find the
            cut shape and to check that the model ends in ``C`` log-probabilities.
        num_classes : int
            ``C``, the width of the model's output.

        Returns
        -------
        SplitSpec
            With :class:`LinearGradScalarAux` (official ``linear_grad_scalar``) as aux.

        Raises
        ------
        TypeError, ValueError
            As :func:`split_sequential`; for ``num_classes < 2``; for an `example_input` that is
            not a finite, non-empty float32 tensor or does not fit the model; for a model whose
            output is not ``[B, num_classes]`` log-probabilities (``logsumexp = 0`` per row).
        """
        client, server = split_sequential(model, cut)
        check_scalar(num_classes, "num_classes", kind=int, low=2)
        check_tensor(example_input, "example_input", dtype=torch.float32)
        if example_input.ndim < 2:
            raise ValueError(
                f"`example_input` must have shape [B, *X], got {tuple(example_input.shape)}"
            )
        label = _input_label("example_input", example_input)
        z = _probe(client, example_input, label, f"`model[:{cut}]` (the client)")
        cut_shape = tuple(z.shape[1:])
        _check_head(server, z, num_classes, _smashed_label("example_input", z), "`model`")
        return cls(
            client,
            server,
            lambda: LinearGradScalarAux(cut_shape, num_classes),
            cut_shape,
            num_classes,
        )

    def check_input(self, x: torch.Tensor, name: str) -> None:
        """Check that inputs ``x`` ``[N, *X]`` fit this split (one sample, eval mode, no grad).

        Raises
        ------
        TypeError
            If `x` is not a float32 tensor.
        ValueError
            If `x` is empty or not finite, the client cannot take its per-sample shape, the
            client does not produce ``cut_shape``, or the server cannot take the smashed data
            or does not return ``[N, num_classes]`` log-probabilities; the message names
            `name`.
        """
        check_tensor(x, name, dtype=torch.float32)
        if x.ndim < 2:
            raise ValueError(f"`{name}` must have shape [N, *X], got {tuple(x.shape)}")
        z = _probe(self.client, x, _input_label(name, x), "the client model")
        if tuple(z.shape[1:]) != tuple(self.cut_shape):
            raise ValueError(
                f"`{name}` of per-sample shape {tuple(x.shape[1:])} gives smashed data of shape "
                f"{tuple(z.shape[1:])}, not the cut shape {tuple(self.cut_shape)}"
            )
        _check_head(self.server, z, self.num_classes, _smashed_label(name, z), "the server model")

    def check_data(self, data, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Check one client's (or the test) data ``(x, y)`` against this split: the pair, `x` as
        :meth:`check_input` (``"<name> x"``), labels ``y`` int64 in ``[0, num_classes)``, one
        per row of `x` (``"<name> y"``).

        Returns
        -------
        (Tensor, Tensor)
            ``(x, y)``.

        Raises
        ------
        TypeError
            If `data` is not an ``(x, y)`` pair, `x` not float32 or `y` not int64.
        ValueError
            As :meth:`check_input`, or for labels of another length or outside
            ``[0, num_classes)``; the message names `name`.
        """
        if not isinstance(data, list | tuple) or len(data) != 2:
            got = f"length {len(data)}" if isinstance(data, list | tuple) else type(data).__name__
            raise TypeError(f"`{name}` must be an (x, y) pair of tensors, got {got}")
        x, y = data
        self.check_input(x, f"{name} x")
        check_labels(y, f"{name} y", x.shape[0], self.num_classes)
        return x, y

    def check_aux(self, aux) -> None:
        """Check an auxiliary model of :attr:`aux_factory` against the cut: a
        :class:`GradScalarAux` whose network takes one zero sample of ``cut_shape`` (eval mode,
        no grad) and returns ``[1, num_classes]`` log-probabilities.

        Raises
        ------
        TypeError
            If `aux` is not a :class:`GradScalarAux`.
        ValueError
            If it expects another input shape, cannot take the cut shape or does not return
            ``num_classes`` log-probabilities; the message names `aux_factory`.
        """
        if not isinstance(aux, GradScalarAux):
            raise TypeError(f"`aux_factory` must return a GradScalarAux, got {type(aux).__name__}")
        what = "the auxiliary model of `aux_factory`"
        if aux.input_shape is not None and aux.input_shape != self.cut_shape:
            raise ValueError(
                f"{what} takes inputs of shape {aux.input_shape}, not the cut shape "
                f"{self.cut_shape} of the smashed data"
            )
        like = next(aux.parameters(), torch.zeros(()))  # the network's dtype and device
        z = torch.zeros(1, *self.cut_shape).to(like)
        _check_head(aux.net, z, self.num_classes, f"the cut shape {self.cut_shape}", what)


def _input_label(name: str, x: torch.Tensor) -> str:
    return f"`{name}` of per-sample shape {tuple(x.shape[1:])}"


def _smashed_label(name: str, z: torch.Tensor) -> str:
    return f"the smashed data of `{name}` (per-sample shape {tuple(z.shape[1:])})"


def _probe(module: nn.Module, x: torch.Tensor, label: str, what: str) -> torch.Tensor:
    """``module(x[:1])`` in eval mode without grad (state untouched); errors say that `label`
    (what the user gave, e.g. "`x` of per-sample shape (3,)") does not fit `what`."""
    flags = {m: m.training for m in module.modules()}
    module.eval()
    try:
        with torch.no_grad():
            out = module(x[:1])
    except (RuntimeError, TypeError, ValueError, IndexError) as err:
        raise ValueError(f"{label} does not fit {what}: {err}") from err
    finally:
        for m, flag in flags.items():
            m.training = flag
    if not isinstance(out, torch.Tensor) or not torch.isfinite(out).all():
        raise ValueError(f"{what} gives a non-tensor or non-finite output on {label}")
    return out


def _check_head(module: nn.Module, z: torch.Tensor, num_classes: int, label: str, what: str):
    """`module` (a server or aux network) maps `z` to ``[N, num_classes]`` log-probabilities
    (probed on one sample, :func:`_probe`; :func:`~fsl_sage.aux.check_log_probs`)."""
    out = _probe(module, z, label, what)
    if out.ndim != 2 or out.shape[1] != num_classes:
        raise ValueError(
            f"{what} must output log-probabilities [N, num_classes={num_classes}], got "
            f"per-sample shape {tuple(out.shape[1:])} on {label}"
        )
    check_log_probs(out, what)


def split_sequential(model: nn.Sequential, cut: int) -> tuple[nn.Module, nn.Module]:
    """Split ``model`` into ``model[:cut]`` (client) and ``model[cut:]`` (server).

    The two parts share the original modules (no copy), so ``server(client(x)) == model(x)``.

    Parameters
    ----------
    model : nn.Sequential
    cut : int
        Number of leading layers kept on the client, ``1 <= cut < len(model)``.

    Returns
    -------
    tuple of nn.Sequential
        ``(client, server)``.

    Raises
    ------
    TypeError
        If `model` is not an ``nn.Sequential`` or `cut` not an int.
    ValueError
        If `cut` is out of range.
    """
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"`model` must be an nn.Sequential, got {type(model).__name__}")
    check_scalar(cut, "cut", kind=int, low=1, high=len(model) - 1)
    return model[:cut], model[cut:]


def _init_linear(module: nn.Module) -> None:
    """Official ``simple_conv`` server init: Linear weights ~ N(0, 0.05), biases 0."""
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, 0.0, 0.05)
        nn.init.zeros_(module.bias)


def simple_conv_split(
    in_channels: int = 1,
    num_classes: int = 10,
    image_size: int = 28,
    widths: tuple[int, int] = (64, 64),
) -> SplitSpec:
    """The official ``simple_conv`` model split after its two conv blocks.

    Client: ``[conv5x5(w1, pad 2), ReLU, maxpool 3/2 pad 1, LRN(4, 0.001/9, 0.75, 1),
    conv5x5(w2, pad 2), ReLU, LRN, maxpool 3/2 pad 1]``; server: ``Flatten, Linear(d, 384), ReLU,
    Linear(384, 192), ReLU, Linear(192, C), LogSoftmax`` with Linear init N(0, 0.05);
    aux: :class:`LinearGradScalarAux` on the cut shape ``(w2, s, s)``, ``s = ceil(image/4)``.

    Parameters
    ----------
    in_channels : int, default=1
    num_classes : int, default=10
    image_size : int, default=28
        Square input side in pixels.
    widths : tuple of 2 int, default=(64, 64)
        Conv channels (official 64/64; the reproduce uses 16/32).

    Returns
    -------
    SplitSpec

    Raises
    ------
    ValueError
        For non-positive sizes or ``num_classes < 2``.
    """
    check_scalar(in_channels, "in_channels", kind=int, low=1)
    check_scalar(num_classes, "num_classes", kind=int, low=2)
    check_scalar(image_size, "image_size", kind=int, low=1)
    if len(widths) != 2 or any(not isinstance(w, int) or w < 1 for w in widths):
        raise ValueError(f"`widths` must be two positive ints, got {widths!r}")
    w1, w2 = widths
    client = nn.Sequential(
        nn.Conv2d(in_channels, w1, 5, padding=2),
        nn.ReLU(),
        nn.MaxPool2d(3, 2, padding=1),
        nn.LocalResponseNorm(4, alpha=0.001 / 9.0, beta=0.75, k=1.0),
        nn.Conv2d(w1, w2, 5, padding=2),
        nn.ReLU(),
        nn.LocalResponseNorm(4, alpha=0.001 / 9.0, beta=0.75, k=1.0),
        nn.MaxPool2d(3, 2, padding=1),
    )
    side = math.floor((math.floor((image_size - 1) / 2) + 1 - 1) / 2) + 1
    cut_shape = (w2, side, side)
    d = math.prod(cut_shape)
    server = nn.Sequential(
        nn.Flatten(),
        nn.Linear(d, 384),
        nn.ReLU(),
        nn.Linear(384, 192),
        nn.ReLU(),
        nn.Linear(192, num_classes),
        nn.LogSoftmax(dim=1),
    )
    server.apply(_init_linear)
    return SplitSpec(
        client, server, lambda: LinearGradScalarAux(cut_shape, num_classes), cut_shape, num_classes
    )


def _aux_resnet(block_cls, num_classes: int) -> nn.Module:
    stage = nn.Sequential(
        block_cls(
            128,
            256,
            stride=2,
            downsample=nn.Sequential(nn.Conv2d(128, 256, 1, 2, bias=False), nn.BatchNorm2d(256)),
        ),
        block_cls(256, 256),
    )
    return nn.Sequential(
        stage,
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(256, num_classes),
        nn.LogSoftmax(dim=1),
    )


def resnet18_split(num_classes: int, in_channels: int = 3, image_size: int = 32) -> SplitSpec:
    """torchvision ResNet-18 split after ``layer2`` (needs the ``[vision]`` extra).

    Client: stem (conv, BN, ReLU, maxpool) + ``layer1`` + ``layer2`` (``z`` of shape
    ``[128, 4, 4]`` at 32 px); server: ``layer3`` + ``layer4`` + pool + fc + LogSoftmax; aux: one
    ``layer3``-like stage + pool + fc (a :class:`GradScalarAux`).

    Raises
    ------
    ImportError
        If torchvision is not installed (``pip install fsl-sage[vision]``).
    ValueError
        For ``num_classes < 2`` or ``in_channels < 1``.
    """
    check_scalar(num_classes, "num_classes", kind=int, low=2)
    check_scalar(in_channels, "in_channels", kind=int, low=1)
    check_scalar(image_size, "image_size", kind=int, low=8)
    try:
        from torchvision.models import resnet18
        from torchvision.models.resnet import BasicBlock
    except ImportError as err:
        raise ImportError("resnet18_split needs torchvision: pip install fsl-sage[vision]") from err
    net = resnet18(num_classes=num_classes)
    if in_channels != 3:
        net.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
    client = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool, net.layer1, net.layer2)
    server = nn.Sequential(
        net.layer3, net.layer4, net.avgpool, nn.Flatten(), net.fc, nn.LogSoftmax(dim=1)
    )
    with torch.no_grad():
        cut_shape = tuple(
            client.eval()(torch.zeros(1, in_channels, image_size, image_size)).shape[1:]
        )
    client.train()
    return SplitSpec(
        client,
        server,
        lambda: GradScalarAux(
            _aux_resnet(BasicBlock, num_classes), input_shape=cut_shape, num_classes=num_classes
        ),
        cut_shape,
        num_classes,
    )
