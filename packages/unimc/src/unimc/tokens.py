r"""UniMC-style condition tokens: one instance token and K keypoint tokens per instance.

Source: UniMC (Guo et al., ICML 2025, arXiv 2507.02713), abstract and project page: every instance
contributes compact tokens built from its class, box and keypoints, coordinates encoded as Fourier
features. The token layout, the MLPs and the binding term $W h_i$ are OUR reconstruction (the
method section and code are unpublished); the instance MLP follows GLIGEN's projection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from .fourier import fourier_embed
from .skeletons import Skeleton

__all__ = ["ConditionTokens", "ConditionTokenizer", "validate_conditions"]

Layout = Literal["instance+keypoints", "instance", "keypoints"]
_LAYOUTS = ("instance+keypoints", "instance", "keypoints")


@dataclass
class ConditionTokens:
    """Condition tokens of a batch, with their key-padding mask and owning instance.

    Parameters
    ----------
    tokens : Tensor, shape [B, M, D], floating
        Token vectors; padded tokens are zero.
    mask : Tensor, shape [B, M], bool
        True for real tokens (instance present, keypoint labelled).
    owner : Tensor, shape [B, M], int64
        Index of the instance (in ``[0, N)``) each token belongs to.
    """

    tokens: torch.Tensor
    mask: torch.Tensor
    owner: torch.Tensor

    def to(self, *args, **kwargs) -> ConditionTokens:
        """Move ``tokens`` (and the mask and owner, without a dtype change) like ``Tensor.to``."""
        t = self.tokens.to(*args, **kwargs)
        return ConditionTokens(t, self.mask.to(t.device), self.owner.to(t.device))

    def __len__(self) -> int:
        return int(self.tokens.shape[0])


def _mlp(d_in: int, d: int) -> nn.Sequential:
    # GLIGEN's PositionNet projection shape: Linear -> SiLU -> Linear -> SiLU -> Linear.
    return nn.Sequential(nn.Linear(d_in, d), nn.SiLU(), nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))


def validate_conditions(
    classes: torch.Tensor,
    boxes: torch.Tensor,
    keypoints: torch.Tensor | None,
    instance_mask: torch.Tensor,
    *,
    num_classes: int,
    skeleton_of_class: Mapping[int, Skeleton] | None = None,
) -> None:
    """Check a padded batch of instance conditions; raise a ValueError naming the argument.

    Parameters
    ----------
    classes : Tensor, shape [B, N], int64
        Class index of each instance, in ``[0, num_classes)`` where `instance_mask` is True.
    boxes : Tensor, shape [B, N, 4], floating
        Boxes xyxy normalised to [0, 1] (see :func:`unimc.normalize`).
    keypoints : Tensor, shape [B, N, K, 3], floating, or None
        ``(x, y, v)`` normalised to [0, 1]; v in {0, 1, 2} (COCO: 0 unlabelled).
    instance_mask : Tensor, shape [B, N], bool
        True for real instances, False for padding.
    num_classes : int
        Number of classes.
    skeleton_of_class : mapping of int to Skeleton, optional
        Required when `keypoints` is given: each present class's skeleton.

    Raises
    ------
    TypeError
        If an argument is not a tensor of the expected dtype.
    ValueError
        On a wrong shape, NaN/inf, a class out of range or without a skeleton, a box with
        x1 < x0 or y1 < y0, coordinates outside [0, 1], v not in {0, 1, 2}, or K different from
        the class's skeleton.
    """
    for name, t in (("classes", classes), ("boxes", boxes), ("instance_mask", instance_mask)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor, got {type(t).__name__}")
    if classes.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"`classes` must be an integer tensor, got {classes.dtype}")
    if instance_mask.dtype != torch.bool:
        raise TypeError(f"`instance_mask` must be a bool tensor, got {instance_mask.dtype}")
    if classes.ndim != 2:
        raise ValueError(f"`classes` must have shape [B, N]; got {tuple(classes.shape)}")
    b, n = classes.shape
    if b == 0:
        raise ValueError("`classes` is empty (batch size 0)")
    if tuple(instance_mask.shape) != (b, n):
        raise ValueError(
            f"`instance_mask` must have shape {(b, n)} like `classes`; got "
            f"{tuple(instance_mask.shape)}"
        )
    if not boxes.is_floating_point():
        raise TypeError(f"`boxes` must be a floating tensor, got {boxes.dtype}")
    if tuple(boxes.shape) != (b, n, 4):
        raise ValueError(f"`boxes` must have shape {(b, n, 4)}; got {tuple(boxes.shape)}")
    if not torch.isfinite(boxes).all():
        raise ValueError("`boxes` contains NaN or inf")
    m = instance_mask
    if m.any():
        c = classes[m]
        if (c < 0).any() or (c >= num_classes).any():
            raise ValueError(f"`classes` must lie in [0, {num_classes}) for present instances")
        bx = boxes[m]
        if (bx[:, 2] < bx[:, 0]).any() or (bx[:, 3] < bx[:, 1]).any():
            raise ValueError("`boxes` must be xyxy with x1 >= x0 and y1 >= y0")
        if (bx < 0).any() or (bx > 1).any():
            raise ValueError(
                "`boxes` must be normalised to [0, 1] (hint: unimc.normalize(boxes, keypoints, "
                "size) divides pixel coordinates by the image size)"
            )
    if keypoints is None:
        return
    if not isinstance(keypoints, torch.Tensor) or not keypoints.is_floating_point():
        raise TypeError("`keypoints` must be a floating torch.Tensor")
    if keypoints.ndim != 4 or tuple(keypoints.shape[:2]) != (b, n) or keypoints.shape[3] != 3:
        raise ValueError(
            f"`keypoints` must have shape [{b}, {n}, K, 3]; got {tuple(keypoints.shape)}"
        )
    if not torch.isfinite(keypoints).all():
        raise ValueError("`keypoints` contains NaN or inf")
    v = keypoints[..., 2]
    if ((v != 0) & (v != 1) & (v != 2)).any():
        raise ValueError("`keypoints` visibility v must be 0, 1 or 2 (COCO)")
    k = keypoints.shape[2]
    if skeleton_of_class is None:
        raise ValueError("`skeleton_of_class` is required with keypoints")
    if m.any():
        for c in torch.unique(classes[m]).tolist():
            sk = skeleton_of_class.get(int(c))
            if sk is None:
                raise ValueError(
                    f"class {c} has no skeleton in `skeleton_of_class` (known: "
                    f"{sorted(skeleton_of_class)})"
                )
            if sk.num_keypoints != k:
                raise ValueError(
                    f"`keypoints` has K={k} but class {c}'s skeleton {sk.name!r} has "
                    f"{sk.num_keypoints}"
                )
        lab = m.unsqueeze(-1) & (v > 0)
        xy = keypoints[..., :2][lab]
        if (xy < 0).any() or (xy > 1).any():
            raise ValueError(
                "`keypoints` coordinates of labelled points must lie in [0, 1] (hint: "
                "unimc.normalize(boxes, keypoints, size))"
            )


class ConditionTokenizer(nn.Module):
    r"""Turn each instance's class, box and keypoints into compact condition tokens.

    Instance token (GLIGEN's projection, our choice for UniMC):

    $$
    h_i = \mathrm{MLP}_{inst}\big([E_{cls}(c_i);\ \phi(b_i)]\big),\qquad
    h_{ik} = \mathrm{MLP}_{kp}\big([\phi(x_{ik}, y_{ik});\ E_{type}(s_i, k);\ E_{vis}(v_{ik})]\big)
             + W h_i
    $$

    where $\phi$ is :func:`unimc.fourier_embed`, $s_i$ the skeleton of class $c_i$ (each
    skeleton has its own keypoint-type table: COCO-17 and AP-10K-17 have the same K but not the
    same meaning) and $W h_i$ binds keypoints to their instance without an instance index, so
    permuting instances permutes tokens. Unlabelled keypoints (v = 0) and padded instances are
    masked out and their tokens set to zero.

    Parameters
    ----------
    num_classes : int
        Number of instance classes (e.g. 2: human, animal).
    d_model : int
        Token width D.
    skeleton_of_class : mapping of int to Skeleton
        Skeleton of each class with keypoints (classes without one may only be used with
        ``layout="instance"``).
    num_freqs : int, default=8
        Fourier frequencies F (GLIGEN).
    layout : {"instance+keypoints", "instance", "keypoints"}, default="instance+keypoints"
        Which tokens to emit: per instance ``[h_i, h_i1..h_iK]``, only ``h_i``, or only ``h_ik``.

    Raises
    ------
    ValueError
        If `num_classes` or `d_model` < 1, `layout` is unknown, or a class index of
        `skeleton_of_class` is outside ``[0, num_classes)``.
    """

    def __init__(
        self,
        num_classes: int,
        d_model: int,
        *,
        skeleton_of_class: Mapping[int, Skeleton],
        num_freqs: int = 8,
        layout: Layout = "instance+keypoints",
    ) -> None:
        super().__init__()
        for name, val in (
            ("num_classes", num_classes),
            ("d_model", d_model),
            ("num_freqs", num_freqs),
        ):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"`{name}` must be an int >= 1; got {val!r}")
        if layout not in _LAYOUTS:
            raise ValueError(f"`layout` must be one of {_LAYOUTS}; got {layout!r}")
        if not isinstance(skeleton_of_class, Mapping):
            raise TypeError("`skeleton_of_class` must be a mapping of class index to Skeleton")
        for c, sk in skeleton_of_class.items():
            if not isinstance(c, int) or not 0 <= c < num_classes:
                raise ValueError(f"`skeleton_of_class` key {c!r} is outside [0, {num_classes})")
            if not isinstance(sk, Skeleton):
                raise TypeError(f"`skeleton_of_class[{c}]` must be a Skeleton")
        self.num_classes = num_classes
        self.d_model = d_model
        self.num_freqs = num_freqs
        self.layout: Layout = layout
        self.skeleton_of_class = dict(skeleton_of_class)
        names = sorted({sk.name for sk in self.skeleton_of_class.values()})
        offsets, total = {}, 0
        for name in names:
            sk = next(s for s in self.skeleton_of_class.values() if s.name == name)
            offsets[name] = total
            total += sk.num_keypoints
        # type offset of each class (0 for classes without skeleton; never used for them)
        off = torch.zeros(num_classes, dtype=torch.long)
        for c, sk in self.skeleton_of_class.items():
            off[c] = offsets[sk.name]
        self.register_buffer("type_offset", off, persistent=False)
        self.type_offset: torch.Tensor
        self.cls_embed = nn.Embedding(num_classes, d_model)
        self.inst_mlp = _mlp(d_model + 4 * 2 * num_freqs, d_model)
        self.type_embed = nn.Embedding(max(total, 1), d_model)
        self.vis_embed = nn.Embedding(3, d_model)
        self.kp_mlp = _mlp(2 * 2 * num_freqs + 2 * d_model, d_model)
        self.bind = nn.Linear(d_model, d_model, bias=False)

    @property
    def tokens_per_instance(self) -> int:
        """Tokens emitted per instance slot for the largest skeleton (1, K or 1 + K)."""
        k = max((s.num_keypoints for s in self.skeleton_of_class.values()), default=0)
        return {"instance": 1, "keypoints": k, "instance+keypoints": 1 + k}[self.layout]

    def forward(
        self,
        classes: torch.Tensor,
        boxes: torch.Tensor,
        keypoints: torch.Tensor | None,
        instance_mask: torch.Tensor,
    ) -> ConditionTokens:
        """Encode a padded batch of instances.

        Parameters
        ----------
        classes : Tensor, shape [B, N], int64
            Class of each instance.
        boxes : Tensor, shape [B, N, 4], floating
            xyxy normalised to [0, 1].
        keypoints : Tensor, shape [B, N, K, 3], floating, or None
            ``(x, y, v)`` normalised; None only with ``layout="instance"``.
        instance_mask : Tensor, shape [B, N], bool
            True for real instances.

        Returns
        -------
        ConditionTokens
            ``tokens [B, N*(1+K), D]`` (or ``[B, N, D]`` / ``[B, N*K, D]`` for the other
            layouts), ``mask`` and ``owner`` alike; tokens ordered instance by instance.

        Raises
        ------
        ValueError, TypeError
            See :func:`validate_conditions`.
        """
        need_kp = self.layout != "instance"
        if need_kp and keypoints is None:
            raise ValueError(f"`keypoints` is required with layout={self.layout!r}")
        validate_conditions(
            classes,
            boxes,
            keypoints if need_kp else None,
            instance_mask,
            num_classes=self.num_classes,
            skeleton_of_class=self.skeleton_of_class,
        )
        dtype = self.cls_embed.weight.dtype
        dev = self.cls_embed.weight.device
        b, n = classes.shape
        m = instance_mask.to(dev)
        cls = torch.where(m, classes.to(dev).long(), torch.zeros_like(classes, device=dev).long())
        box = torch.where(
            m.unsqueeze(-1), boxes.to(dev, dtype), torch.zeros((), dtype=dtype, device=dev)
        )
        h = self.inst_mlp(torch.cat([self.cls_embed(cls), fourier_embed(box, self.num_freqs)], -1))
        h = h * m.unsqueeze(-1).to(dtype)  # [B, N, D]
        owner_i = torch.arange(n, device=dev).expand(b, n)
        parts, masks, owners = [], [], []
        if self.layout != "keypoints":
            parts.append(h.unsqueeze(2))
            masks.append(m.unsqueeze(2))
            owners.append(owner_i.unsqueeze(2))
        if need_kp:
            assert keypoints is not None
            kp = keypoints.to(dev, dtype)
            k = kp.shape[2]
            vis = kp[..., 2].round().long()
            kmask = m.unsqueeze(-1) & (vis > 0)
            xy = torch.where(
                kmask.unsqueeze(-1), kp[..., :2], torch.zeros((), dtype=dtype, device=dev)
            )
            types = self.type_offset[cls].unsqueeze(-1) + torch.arange(k, device=dev)
            types = types.clamp_max(self.type_embed.num_embeddings - 1)
            feats = torch.cat(
                [
                    fourier_embed(xy, self.num_freqs),
                    self.type_embed(types),
                    self.vis_embed(vis.clamp(0, 2)),
                ],
                -1,
            )
            hk = self.kp_mlp(feats) + self.bind(h).unsqueeze(2)
            hk = hk * kmask.unsqueeze(-1).to(dtype)
            parts.append(hk)
            masks.append(kmask)
            owners.append(owner_i.unsqueeze(2).expand(b, n, k))
        tok = torch.cat(parts, 2)
        return ConditionTokens(
            tokens=tok.reshape(b, -1, self.d_model),
            mask=torch.cat(masks, 2).reshape(b, -1),
            owner=torch.cat(owners, 2).reshape(b, -1),
        )
