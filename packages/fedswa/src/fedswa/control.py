"""Control variates of SCAFFOLD and FedMoSWA: the server's ``c`` and each client's ``c_i``.

Controls cover the trainable floating-point parameters only (not buffers), keyed by their
``state_dict`` names. Each client's ``c_i`` is kept under its client id, never per worker or
per process (the official code keeps them per Ray actor, so they follow the worker, not the
client).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

__all__ = ["ClientControl", "ControlStore", "zeros_like_params"]


def zeros_like_params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Zero controls for every trainable floating-point parameter of `model`.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose ``named_parameters()`` define the keys.

    Returns
    -------
    dict of str to Tensor
        One zero tensor per parameter with ``requires_grad`` and a floating dtype, same shape,
        dtype and device, detached.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    return {
        name: torch.zeros_like(p, memory_format=torch.contiguous_format).detach()
        for name, p in model.named_parameters()
        if p.requires_grad and p.is_floating_point()
    }


def _check_controls(controls, name: str) -> dict[str, torch.Tensor]:
    if not isinstance(controls, Mapping):
        raise TypeError(f"`{name}` must be a mapping of str to Tensor, got {type(controls)}")
    for key, value in controls.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"`{name}[{key!r}]` must be a Tensor, got {type(value).__name__}")
        if not value.is_floating_point():
            raise TypeError(f"`{name}[{key!r}]` must be floating point, got {value.dtype}")
        if not torch.isfinite(value).all():
            raise ValueError(f"`{name}[{key!r}]` holds NaN or infinity")
    return dict(controls)


@dataclass(frozen=True)
class ClientControl:
    """The two controls a client needs in a round: the server's ``c`` and its own ``c_i``.

    Parameters
    ----------
    c_global : dict of str to Tensor
        Server control ``c``, one tensor per trainable float parameter (``state_dict`` names).
    c_local : dict of str to Tensor
        This client's control ``c_i``; same keys and shapes as `c_global`.

    Raises
    ------
    TypeError
        If either is not a mapping of tensors.
    ValueError
        If keys or shapes differ (both listed), or a tensor holds NaN or infinity.

    Notes
    -----
    The local step adds ``c - c_i`` to the clipped gradient (SCAFFOLD, Karimireddy et al. 2020,
    Alg. 1 line 10; FedMoSWA in the official code).
    """

    c_global: dict
    c_local: dict

    def __post_init__(self):
        c, ci = _check_controls(self.c_global, "c_global"), _check_controls(self.c_local, "c_local")
        if set(c) != set(ci):
            diff = sorted(set(c) ^ set(ci))
            raise ValueError(f"`c_global` and `c_local` keys differ: {diff}")
        bad = [k for k in c if c[k].shape != ci[k].shape]
        if bad:
            raise ValueError(f"`c_global` and `c_local` shapes differ for keys: {bad}")

    def correction(self) -> dict[str, torch.Tensor]:
        """``c - c_i`` per key (the drift correction added to every local gradient)."""
        return {k: self.c_global[k] - self.c_local[k] for k in self.c_global}


class ControlStore:
    """Each client's control ``c_i``, keyed by client id; missing clients start at zero.

    Parameters
    ----------
    template : dict of str to Tensor
        Keys, shapes and dtypes of a control (e.g. :func:`zeros_like_params` of the model).

    Examples
    --------
    >>> import torch
    >>> store = ControlStore({"w": torch.zeros(2)})
    >>> store.get(7)["w"]
    tensor([0., 0.])
    >>> store.put(7, {"w": torch.ones(2)}); store.get(7)["w"]
    tensor([1., 1.])
    """

    def __init__(self, template: Mapping[str, torch.Tensor]):
        if isinstance(template, Mapping) and not template:
            raise ValueError("`template` is empty (a control needs trainable float parameters)")
        self._template = {
            k: torch.zeros_like(v) for k, v in _check_controls(template, "template").items()
        }
        self._controls: dict = {}

    def __contains__(self, client_id) -> bool:
        return client_id in self._controls

    def __len__(self) -> int:
        return len(self._controls)

    def client_ids(self) -> list:
        """Ids of the clients that have a stored control, sorted."""
        return sorted(self._controls, key=repr)

    def get(self, client_id) -> dict[str, torch.Tensor]:
        """``c_i`` of `client_id` (a copy), zeros if the client never trained."""
        stored = self._controls.get(client_id, self._template)
        return {k: v.clone() for k, v in stored.items()}

    def put(self, client_id, control: Mapping[str, torch.Tensor]) -> None:
        """Store ``c_i`` of `client_id`.

        Raises
        ------
        ValueError
            If the keys or shapes differ from the template, or a value is not finite.
        """
        control = _check_controls(control, "control")
        if set(control) != set(self._template):
            raise ValueError(
                "`control` keys differ from the template: "
                f"{sorted(set(control) ^ set(self._template))}"
            )
        bad = [k for k in control if control[k].shape != self._template[k].shape]
        if bad:
            raise ValueError(f"`control` shapes differ from the template for keys: {bad}")
        self._controls[client_id] = {k: v.detach().clone() for k, v in control.items()}

    def state_dict(self) -> dict:
        """``{"template": ..., "controls": {client_id: c_i}}``, for ``torch.save``."""
        return {"template": self._template, "controls": self._controls}

    def load_state_dict(self, state: Mapping) -> None:
        """Restore what :meth:`state_dict` returned."""
        self._template = dict(state["template"])
        self._controls = {cid: dict(c) for cid, c in state["controls"].items()}
