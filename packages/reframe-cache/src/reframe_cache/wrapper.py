r"""The ReFrame wrapper: layer caching around the user's per-frame network.

A *cache point* is an activation of the deep, low-resolution path that shallow full-resolution
layers consume (for the demo U-Net: ``u1 = up1(u2)``, concatenated with the top skip). On a
*refresh* frame the full network runs and the cache point's output is stored; on a *hit* frame
only the layers that do not depend on the cached activation run, with the stored tensor in its
place.

The split is done with ``torch.fx``: the *full graph* is the traced forward that also returns the
cached activations; the *hit graph* is the same graph with the cached nodes turned into inputs
and dead code eliminated. Models ``torch.fx`` cannot trace implement
``forward_split(*inputs, cache, refresh)`` instead.

Sources: Liu & Aamodt, ICML 2025 (arXiv:2506.13814), Sec. 3; official ``samples/unet/unet.py``
(refresh stores ``up1``'s output; a hit runs ``down1``, ``cat``, ``up_conv1``, ``out_conv``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.fx import Graph, GraphModule, Node, Tracer
from torch.fx.proxy import TraceError

from .policies import Always, EveryN, Never, Policy, parse_policy

__all__ = ["ReFrame", "FeatureCache", "count_flops"]


class FeatureCache(dict):
    """Per-instance store of the cached features: name -> detached tensor.

    ``signature`` records the (shape, dtype, device) of the inputs the features were computed
    from; the wrapper clears the cache when it changes. ``forward_split`` implementations read
    and write it like a dict.
    """

    def __init__(self) -> None:
        super().__init__()
        self.signature: tuple | None = None

    def clear(self) -> None:
        """Drop every feature and the signature."""
        super().clear()
        self.signature = None


class _CacheTracer(Tracer):
    """fx tracer that keeps the requested cache modules as leaves (one node each)."""

    def __init__(self, leaves: Sequence[str]):
        super().__init__()
        self.leaves = set(leaves)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return module_qualified_name in self.leaves or super().is_leaf_module(
            m, module_qualified_name
        )


def _trace(model: nn.Module, leaves: Sequence[str]) -> Graph:
    return _CacheTracer(leaves).trace(model)


def _ancestors(node: Node) -> set[Node]:
    seen: set[Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        for inp in n.all_input_nodes:
            if inp not in seen:
                seen.add(inp)
                stack.append(inp)
    return seen


def _output_node(graph: Graph) -> Node:
    return next(n for n in graph.nodes if n.op == "output")


def _cache_nodes(graph: Graph, names: Sequence[str]) -> list[Node]:
    nodes = []
    for name in names:
        found = [n for n in graph.nodes if n.op == "call_module" and n.target == name]
        if len(found) != 1:
            raise ValueError(
                f"`cache` {name!r} is called {len(found)} times in the traced forward; a cache "
                "point must be a submodule called exactly once"
            )
        nodes.append(found[0])
    return nodes


def split_graphs(model: nn.Module, names: Sequence[str]) -> tuple[GraphModule, GraphModule]:
    """The full and the hit graph of `model` for the cache points `names` (``torch.fx``).

    Parameters
    ----------
    model : nn.Module
        The network; must be traceable by ``torch.fx.Tracer``.
    names : sequence of str
        Qualified submodule names whose outputs are cached.

    Returns
    -------
    full : GraphModule
        ``full(*inputs) -> (output, (cached_0, ...))``.
    hit : GraphModule
        ``hit(*inputs, *cached) -> output``; the nodes that only fed the cache points are gone
        (``Graph.eliminate_dead_code``).

    Raises
    ------
    ValueError
        If a cache point is called other than once or does not feed the output.
    torch.fx.proxy.TraceError, TypeError, ...
        What ``torch.fx`` raises on an untraceable model.

    Notes
    -----
    Source: spec §2, "hit graph = forward graph with cached nodes as inputs and dead code removed";
    the official samples hand-write the same split per network (``samples/unet/unet.py``).
    """
    full_graph = _trace(model, names)
    cached = _cache_nodes(full_graph, names)
    out = _output_node(full_graph)
    feeding = _ancestors(out)
    for name, node in zip(names, cached, strict=True):
        if node not in feeding:
            raise ValueError(f"`cache` {name!r} does not feed the model's output")
    (orig,) = out.args
    out.args = ((orig, tuple(cached)),)
    full_graph.lint()
    full = GraphModule(model, full_graph, class_name="ReFrameFull")

    hit_graph = _trace(model, names)
    cached = _cache_nodes(hit_graph, names)
    placeholders = [n for n in hit_graph.nodes if n.op == "placeholder"]
    anchor = placeholders[-1]
    for i, node in enumerate(cached):
        with hit_graph.inserting_after(anchor):
            ph = hit_graph.placeholder(f"reframe_cached_{i}")
        ph.meta = dict(node.meta)
        node.replace_all_uses_with(ph)
        anchor = ph
    hit = GraphModule(model, hit_graph, class_name="ReFrameHit")
    hit.graph.eliminate_dead_code()  # needs the owning module for its purity check
    hit.graph.lint()
    hit.recompile()
    return full, hit


def _called_modules(gm: GraphModule) -> set[str]:
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_module"}


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """FLOPs of one call of `fn` counted by ``torch.utils.flop_counter.FlopCounterMode``.

    Parameters
    ----------
    fn : callable
        Called as ``fn(*args, **kwargs)`` under ``torch.no_grad()``.

    Returns
    -------
    int
        Exact integer FLOPs (2 per multiply-accumulate; convolutions, matmuls, attention, ...;
        elementwise ops count 0, as in ``FlopCounterMode``).

    Notes
    -----
    Source: spec §2 (F_full, F_hit by ``FlopCounterMode``, never hand-counted).
    """
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return int(counter.get_total_flops())


def _signature(args: tuple, kwargs: dict) -> tuple:
    sig = []
    for key, value in [*enumerate(args), *sorted(kwargs.items())]:
        if isinstance(value, torch.Tensor):
            sig.append((key, tuple(value.shape), value.dtype, value.device))
    return tuple(sig)


TriggerSpec = str | int | Sequence[str | int] | Callable[[tuple, dict], torch.Tensor]


class ReFrame(nn.Module):
    r"""Wrap a per-frame network so its deep features are cached and refreshed by a policy.

    Call it once per frame of one stream, like the model. Refresh frames run the full network
    (bit-identical to the model) and store the cache point's output; hit frames run only what
    does not depend on it.

    Parameters
    ----------
    model : nn.Module
        The user's network (U-Net-like denoiser, super-resolver, frame extrapolator). Its
        parameters are shared, not copied; it runs on its own device.
    cache : str or sequence of str, optional
        Qualified submodule name(s) whose outputs are cached (``"up1"`` for
        :class:`reframe_cache.UNet`). ``None`` requires ``model.forward_split``.
    policy : str or Policy, default="delta-0.1"
        Refresh policy: ``"always"``, ``"never"``, ``"N-k"``, ``"delta-τ"``, ``"delta-in-out-τ"``
        or a :class:`~reframe_cache.Policy` (the official demo's ``delta`` with τ = 0.1).
    trigger : str, int, sequence or callable, default="input"
        What the delta policies compare: ``"input"`` (the first positional argument), a
        positional index or keyword name, a list of them (flattened and concatenated: one SMAPE
        over all), or ``fn(args, kwargs) -> Tensor`` (e.g. noise-free albedo/normal/depth).
    compat : {None, "official"}, default=None
        ``"official"`` reproduces the SS sample's halved refresh score at a sequence start
        (``delta-in-out`` only; DECISIONS 7).

    Attributes
    ----------
    frames : int
        Frames seen since the last reset.
    skipped : int
        Hit frames (cache reused) since the last reset.
    history : list of bool
        Per frame since the last reset, True for a refresh.
    cache : FeatureCache
        The stored features (detached, per instance).

    Raises
    ------
    ValueError
        Unknown cache name (valid names listed), a cache point that does not feed the output,
        an unparseable policy, k < 1, τ < 0 or NaN.
    TypeError
        If `model` is not an nn.Module or `trigger` has an unsupported type.

    Notes
    -----
    Forced refreshes: frame 0, after :meth:`reset`, and when any tensor input's shape, dtype or
    device changes (the cache is cleared). In ``train()`` mode, or when autograd records (grad
    enabled and parameters or inputs requiring grad), the plain model runs and nothing is cached
    or counted: call it under ``torch.inference_mode()``.
    Source: spec §3; official ``samples/unet/unet.py`` (policy and cache per model instance;
    here per wrapper, with ``reset()``, which no official sample has: DeepCache#54).

    Examples
    --------
    >>> import torch
    >>> from reframe_cache import ReFrame, UNet
    >>> net = UNet(3, 3, widths=(4, 8, 8, 8)).eval()
    >>> wrapped = ReFrame(net, cache="up1", policy="N-2")
    >>> with torch.inference_mode():
    ...     outs = [wrapped(torch.rand(1, 3, 16, 16)) for _ in range(4)]
    >>> wrapped.skipped, wrapped.history
    (2, [True, False, True, False])
    """

    def __init__(
        self,
        model: nn.Module,
        cache: str | Sequence[str] | None = None,
        *,
        policy: str | Policy = "delta-0.1",
        trigger: TriggerSpec = "input",
        compat: str | None = None,
    ):
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
        if compat not in (None, "official"):
            raise ValueError(f"`compat` must be None or 'official', got {compat!r}")
        self.model = model
        self.cache_names: tuple[str, ...] = self._check_cache(model, cache)
        self.policy: Policy = parse_policy(policy, compat=compat)
        self.trigger = self._check_trigger(trigger)
        self.compat = compat
        self.cache = FeatureCache()
        self._build()
        self.reset()

    # -- construction -------------------------------------------------------------------------
    @staticmethod
    def _check_cache(model: nn.Module, cache) -> tuple[str, ...]:
        if cache is None:
            if not callable(getattr(model, "forward_split", None)):
                raise ValueError(
                    "`cache` is required unless the model implements "
                    "forward_split(*inputs, cache, refresh)"
                )
            return ()
        if not isinstance(cache, str | Sequence):
            raise ValueError(f"`cache` must be a submodule name or a list of them, got {cache!r}")
        names = (cache,) if isinstance(cache, str) else tuple(cache)
        if not names or not all(isinstance(n, str) for n in names):
            raise ValueError(f"`cache` must be a submodule name or a list of them, got {cache!r}")
        valid = [n for n, _ in model.named_modules() if n]
        for name in names:
            if name not in valid:
                shown = ", ".join(valid[:40]) + (" ..." if len(valid) > 40 else "")
                raise ValueError(
                    f"`cache` {name!r} is not a submodule of the model; valid names: {shown}"
                )
        return names

    @staticmethod
    def _check_trigger(trigger):
        if callable(trigger) and not isinstance(trigger, str | int):
            return trigger
        items = [trigger] if isinstance(trigger, str | int) else trigger
        if isinstance(items, Sequence) and not isinstance(items, str) and items:
            for item in items:
                if isinstance(item, bool) or not isinstance(item, str | int):
                    raise TypeError(f"`trigger` entries must be str or int, got {item!r}")
                if isinstance(item, int) and item < 0:
                    raise ValueError(f"`trigger` index must be >= 0, got {item}")
            return list(items)
        raise TypeError(
            f"`trigger` must be 'input', an index, a keyword, a list of them or a "
            f"callable, got {trigger!r}"
        )

    def _build(self) -> None:
        self._full: Any = None
        self._hit: Any = None
        self._split_error: str | None = None
        self._skipped_modules: frozenset[str] = frozenset()
        if self.cache_names:
            try:
                full, hit = split_graphs(self.model, self.cache_names)
            except TraceError as err:  # a ValueError subclass: handled before our own
                self._untraceable(err)
            except ValueError:
                raise
            except Exception as err:  # torch.fx cannot trace this model
                self._untraceable(err)
            else:
                object.__setattr__(self, "_full", full)  # not submodules: no duplicate state
                object.__setattr__(self, "_hit", hit)
                self._skipped_modules = frozenset(_called_modules(full) - _called_modules(hit))

    def _untraceable(self, err: Exception) -> None:
        if not callable(getattr(self.model, "forward_split", None)):
            raise TypeError(
                f"torch.fx cannot trace the model ({type(err).__name__}: {err}); "
                "implement forward_split(*inputs, cache, refresh) on it"
            ) from err
        self._split_error = f"{type(err).__name__}: {err}"

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_full"] = state["_hit"] = None  # rebuilt from the model on unpickling
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if self.cache_names and self._split_error is None:
            full, hit = split_graphs(self.model, self.cache_names)
            object.__setattr__(self, "_full", full)
            object.__setattr__(self, "_hit", hit)

    @property
    def skipped_modules(self) -> frozenset[str]:
        """Qualified names of the modules a hit frame does not call (fx split only)."""
        return self._skipped_modules

    @property
    def full_graph(self) -> GraphModule | None:
        """The fx full graph, ``(*inputs) -> (output, cached)``; None for ``forward_split``."""
        return self._full

    @property
    def hit_graph(self) -> GraphModule | None:
        """The fx hit graph, ``(*inputs, *cached) -> output``; None for ``forward_split``."""
        return self._hit

    def compile(self, **kwargs) -> ReFrame:  # type: ignore[override]
        """Compile the full and the hit graphs separately with ``torch.compile(**kwargs)``.

        Each graph has static shapes for a fixed input size, so ``mode="reduce-overhead"``
        (CUDA graphs) applies to both. Returns self.
        """
        if self._full is None:
            self.model.compile(**kwargs)
            return self
        object.__setattr__(self, "_full", torch.compile(self._full, **kwargs))
        object.__setattr__(self, "_hit", torch.compile(self._hit, **kwargs))
        return self

    # -- state --------------------------------------------------------------------------------
    def reset(self) -> None:
        """Start a new sequence: next frame refreshes; policy references, cache and counters
        are cleared."""
        self.cache.clear()
        self.policy.reset()
        self.frames = 0
        self.skipped = 0
        self.history: list[bool] = []
        self._prev_output: torch.Tensor | None = None
        self._warned_grad = False

    @property
    def skip_rate(self) -> float:
        """Fraction of frames since the last reset that reused the cache (0 before any)."""
        return self.skipped / self.frames if self.frames else 0.0

    # -- per frame ----------------------------------------------------------------------------
    def trigger_tensor(self, args: tuple, kwargs: dict) -> torch.Tensor:
        """The tensor the delta policies compare for a call with `args` and `kwargs`.

        Raises
        ------
        ValueError
            If an index is out of range or a keyword is missing (naming `trigger`).
        """
        if callable(self.trigger):
            value = self.trigger(args, kwargs)
            if not isinstance(value, torch.Tensor):
                raise TypeError(
                    f"`trigger` callable must return a Tensor, got {type(value).__name__}"
                )
            return value.detach()
        parts = []
        for item in self.trigger:
            if item == "input":
                item = 0
            if isinstance(item, int):
                if item >= len(args):
                    raise ValueError(
                        f"`trigger` index {item} is out of range: the call has "
                        f"{len(args)} positional inputs"
                    )
                value = args[item]
            else:
                if item not in kwargs:
                    raise ValueError(
                        f"`trigger` keyword {item!r} is not among the call's "
                        f"keywords {sorted(kwargs)}"
                    )
                value = kwargs[item]
            if not isinstance(value, torch.Tensor):
                raise ValueError(
                    f"`trigger` {item!r} selects a {type(value).__name__}, not a Tensor"
                )
            parts.append(value.detach())
        return parts[0] if len(parts) == 1 else torch.cat([p.reshape(-1) for p in parts])

    def _records_grad(self, args, kwargs) -> bool:
        if not torch.is_grad_enabled():
            return False
        if any(p.requires_grad for p in self.model.parameters()):
            return True
        values = [*args, *kwargs.values()]
        return any(isinstance(v, torch.Tensor) and v.requires_grad for v in values)

    def forward(self, *args, **kwargs):
        """Run one frame: refresh (full graph, store cache) or hit (hit graph, cached input).

        Parameters
        ----------
        *args, **kwargs
            The model's inputs for this frame.

        Returns
        -------
        The model's output for this frame (exact on refresh frames).
        """
        if self.model.training or self._records_grad(args, kwargs):
            if not self._warned_grad:
                warnings.warn(
                    "ReFrame runs the plain model without caching in train() mode or while "
                    "autograd records; call it under torch.inference_mode() and .eval()",
                    stacklevel=2,
                )
                self._warned_grad = True
            return self.model(*args, **kwargs)
        sig = _signature(args, kwargs)
        forced = self.frames == 0 or not self.cache or sig != self.cache.signature
        trig = None if self._policy_blind() else self.trigger_tensor(args, kwargs)
        if forced:
            if self.cache.signature is not None and sig != self.cache.signature:
                self.policy.reset()
            self.cache.clear()
            refresh = True
        else:
            refresh = self.policy.decide(self.frames, trig, self._prev_output)
        output = self._run(args, kwargs, refresh)
        self.cache.signature = sig
        prev = self._prev_output
        if refresh:
            self.policy.on_refresh(trig, output, prev)
        else:
            self.skipped += 1
        self.policy.observe(trig, output)
        self._prev_output = output.detach() if isinstance(output, torch.Tensor) else None
        self.history.append(refresh)
        self.frames += 1
        return output

    def _policy_blind(self) -> bool:
        return isinstance(self.policy, Always | EveryN | Never)

    def _run(self, args, kwargs, refresh: bool):
        if self._full is None:
            model: Any = self.model
            return model.forward_split(*args, cache=self.cache, refresh=refresh, **kwargs)
        if refresh:
            output, cached = self._full(*args, **kwargs)
            for name, value in zip(self.cache_names, cached, strict=True):
                self.cache[name] = value.detach()
            return output
        cached = [self.cache[name] for name in self.cache_names]
        return self._hit(*args, *cached, **kwargs)

    # -- cost ---------------------------------------------------------------------------------
    def flops(self, *args, **kwargs) -> dict[str, int]:
        """FLOPs of one full and one hit frame for these inputs (``FlopCounterMode``).

        Leaves the wrapper's cache, policy and counters untouched.

        Returns
        -------
        dict
            ``{"full": F_full, "hit": F_hit}``, exact integers (2 FLOPs per MAC).
        """
        with torch.no_grad():
            if self._full is None:
                scratch = FeatureCache()
                model: Any = self.model
                split = model.forward_split
                full = count_flops(split, *args, cache=scratch, refresh=True, **kwargs)
                hit = count_flops(split, *args, cache=scratch, refresh=False, **kwargs)
                return {"full": full, "hit": hit}
            _, cached = self._full(*args, **kwargs)
            full = count_flops(self._full, *args, **kwargs)
            hit = count_flops(self._hit, *args, *cached, **kwargs)
        return {"full": full, "hit": hit}

    def extra_repr(self) -> str:
        return f"cache={list(self.cache_names)}, policy={self.policy!r}"
