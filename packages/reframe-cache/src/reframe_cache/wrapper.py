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

import copy
import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.fx import Graph, GraphModule, Node, Tracer
from torch.fx.proxy import TraceError

from .policies import Always, DeltaInOut, EveryN, Never, Policy, parse_policy

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


class StatefulForwardError(TypeError):
    """The model's forward writes module attributes: a traced graph cannot replay that."""


def _snapshot(model: nn.Module) -> list[tuple[nn.Module, dict, dict, dict, dict]]:
    return [
        (m, dict(m.__dict__), dict(m._parameters), dict(m._buffers), dict(m._modules))
        for m in model.modules()
    ]


def _restore(snapshot) -> list[str]:
    """Put every module's attributes back; return the qualified names that forward changed."""
    changed = []
    for mod, attrs, params, buffers, modules in snapshot:
        for saved, now in (
            (attrs, mod.__dict__),
            (params, mod._parameters),
            (buffers, mod._buffers),
            (modules, mod._modules),
        ):
            for key in set(saved) | set(now):
                if key not in saved or key not in now or saved[key] is not now[key]:
                    changed.append(f"{type(mod).__name__}.{key}")
            now.clear()
            now.update(saved)
    return sorted(set(changed))


def _trace(model: nn.Module, leaves: Sequence[str]) -> Graph:
    """Trace `model`, leaving its module attributes exactly as they were (H5: a forward that
    writes ``self.x = ...`` would otherwise leave fx Proxies on the user's model)."""
    snapshot = _snapshot(model)
    try:
        graph = _CacheTracer(leaves).trace(model)
    finally:
        changed = _restore(snapshot)
    if changed:
        raise StatefulForwardError(
            f"the model's forward mutates module state (assigns {', '.join(changed)}); a "
            "torch.fx graph cannot replay that, so ReFrame cannot split it. Implement "
            "forward_split(*inputs, cache, refresh) on the model (it keeps its state there), or "
            "keep the state outside the module"
        )
    return graph


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


_VIEW_METHODS = frozenset(
    {
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "transpose",
        "permute",
        "__getitem__",
        "getitem",
        "narrow",
        "select",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "expand",
        "expand_as",
        "t",
        "T",
        "mT",
        "chunk",
        "split",
        "unbind",
        "as_strided",
        "detach",
        "contiguous",
        "movedim",
        "swapaxes",
        "diagonal",
        "real",
        "imag",
        "unfold",
    }
)


def _name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def _mutates(node: Node, root: nn.Module) -> bool:
    """Whether `node` writes into one of its inputs (``y.clamp_(0, 1)``, ``F.relu(x,
    inplace=True)``, ``nn.ReLU(inplace=True)``, ``out=``, ``x[i] = v``)."""
    if node.op == "call_module":
        return bool(getattr(root.get_submodule(str(node.target)), "inplace", False))
    if node.op not in ("call_method", "call_function"):
        return False
    if node.kwargs.get("inplace") is True or "out" in node.kwargs:
        return True
    name = _name(node.target)
    if name in ("setitem", "__setitem__"):
        return True
    return name.endswith("_") and not name.startswith("_")


def _is_view(node: Node) -> bool:
    return node.op in ("call_method", "call_function") and _name(node.target) in _VIEW_METHODS


def _aliases(node: Node) -> set[Node]:
    """The nodes that may share memory with `node`'s first input: views of it, what it is a
    view of, and in-place ops on them (which return their input)."""
    first = node.args[0] if node.args else None
    if not isinstance(first, Node):
        return set()
    return _alias_closure(first)


def _alias_closure(first: Node) -> set[Node]:

    def aliasing(n: Node) -> bool:
        return _is_view(n) or bool(n.meta.get("reframe_mutates"))

    seen, stack = {first}, [first]
    while stack:
        n = stack.pop()
        related = [u for u in n.users if aliasing(u) and u.args and u.args[0] is n]
        if aliasing(n) and n.args and isinstance(n.args[0], Node):
            related.append(n.args[0])
        for r in related:
            if r not in seen:
                seen.add(r)
                stack.append(r)
    return seen


def _eliminate_dead_code(graph: Graph, root: nn.Module) -> None:
    """``Graph.eliminate_dead_code`` that keeps in-place ops whose result is observed later.

    fx's own pass drops ``y.clamp_(0, 1)`` when its return value is unused (H1). Here a node is
    live if a live node uses it, if it is impure by fx's rules, or if it mutates a tensor that
    an input, a parameter or buffer, or a live later node can see (through views). An in-place
    op whose target only fed the (now cached) deep path stays dead, so hits still skip it.
    """
    nodes = list(graph.nodes)
    for n in nodes:
        n.meta["reframe_mutates"] = _mutates(n, root)
    live: set[Node] = set()
    for n in reversed(nodes):
        if n.op in ("placeholder", "output") or any(u in live for u in n.users):
            live.add(n)
        elif n.meta["reframe_mutates"]:
            aliases = _aliases(n)
            if any(a.op in ("placeholder", "get_attr") for a in aliases) or any(
                u in live for a in aliases for u in a.users if u is not n
            ):
                live.add(n)
        elif n.is_impure():
            live.add(n)
    for n in reversed(nodes):
        if n not in live and not n.users:
            graph.erase_node(n)


def _mutated(graph: Graph, root: nn.Module, targets: Sequence[Node]) -> bool:
    """Whether an in-place op of `graph` may write into one of the `targets` (or a view)."""
    nodes = list(graph.nodes)
    for n in nodes:
        n.meta["reframe_mutates"] = _mutates(n, root)
    wanted = set(targets)
    return any(n.meta["reframe_mutates"] and _aliases(n) & wanted for n in nodes)


def split_graphs(model: nn.Module, names: Sequence[str]) -> tuple[GraphModule, GraphModule]:
    """The full and the hit graph of `model` for the cache points `names` (``torch.fx``).

    Parameters
    ----------
    model : nn.Module
        The network; must be traceable by ``torch.fx.Tracer`` and must not assign module
        attributes in forward.
    names : sequence of str
        Qualified submodule names whose outputs are cached (a list, not a bare string).

    Returns
    -------
    full : GraphModule
        ``full(*inputs, **kw) -> (output, (cached_0, ...))``; each cached tensor is a copy taken
        right after its cache point when the graph has in-place ops (so later in-place ops do
        not reach the cache).
    hit : GraphModule
        ``hit(*cached, *inputs, **kw) -> output``: the cached tensors come *first*, so
        defaulted and keyword inputs bind as in the model's forward. The nodes that only fed
        the cache points are gone; in-place ops whose effect is observed are kept.

    Raises
    ------
    TypeError
        If `names` is a bare string, or the forward assigns module attributes (the model is
        left untouched).
    ValueError
        If a name is not a submodule, is called other than once or does not feed the output.
    torch.fx.proxy.TraceError, TypeError, ...
        What ``torch.fx`` raises on an untraceable model.

    Notes
    -----
    Source: spec §2, "hit graph = forward graph with cached nodes as inputs and dead code removed";
    the official samples hand-write the same split per network (``samples/unet/unet.py``).
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"`names` must be a list of submodule names, got {names!r}")
    _check_names(model, names)
    full_graph = _trace(model, names)
    cached = _cache_nodes(full_graph, names)
    out = _output_node(full_graph)
    feeding = _ancestors(out)
    for name, node in zip(names, cached, strict=True):
        if node not in feeding:
            raise ValueError(f"`cache` {name!r} does not feed the model's output")
    # A later in-place op on a cached activation (``u = up1(m); u.add_(0.5)``) must not reach
    # the stored copy: store a clone taken right after the cache point.
    cached = [
        _clone_after(full_graph, n) if _mutated(full_graph, model, [n]) else n for n in cached
    ]
    (orig,) = out.args
    out.args = ((orig, tuple(cached)),)
    full_graph.lint()
    full = GraphModule(model, full_graph, class_name="ReFrameFull")

    hit_graph = _trace(model, names)
    cached = _cache_nodes(hit_graph, names)
    first = next(n for n in hit_graph.nodes if n.op == "placeholder")
    for i, node in enumerate(cached):
        with hit_graph.inserting_before(first):
            ph = hit_graph.placeholder(f"reframe_cached_{i}")
        ph.meta = dict(node.meta)
        node.replace_all_uses_with(ph)
    hit = GraphModule(model, hit_graph, class_name="ReFrameHit")
    _eliminate_dead_code(hit.graph, model)
    hit.graph.lint()
    hit.recompile()
    return full, hit


def _clone_after(graph: Graph, node: Node) -> Node:
    with graph.inserting_after(node):
        return graph.call_method("clone", (node,))


def hit_returns_cache(hit: GraphModule) -> bool:
    """Whether the hit graph's output may share memory with a cached input."""
    for n in hit.graph.nodes:
        n.meta["reframe_mutates"] = _mutates(n, hit)
    closure: set[Node] = set()
    for n in hit.graph.nodes:
        if n.op == "placeholder" and n.name.startswith("reframe_"):
            closure |= _alias_closure(n)
    returned: list[Node] = []
    torch.fx.node.map_arg(_output_node(hit.graph).args, returned.append)
    return any(n in closure for n in returned)


def hit_mutates_cache(hit: GraphModule) -> bool:
    """Whether the hit graph writes in place into a cached input (the wrapper then passes
    copies, so the cache stays intact)."""
    phs = [n for n in hit.graph.nodes if n.op == "placeholder" and n.name.startswith("reframe_")]
    return _mutated(hit.graph, hit, phs)


def _check_names(model: nn.Module, names: Sequence[str]) -> None:
    valid = [n for n, _ in model.named_modules() if n]
    for name in names:
        if not isinstance(name, str) or name not in valid:
            shown = ", ".join(valid[:40]) + (" ..." if len(valid) > 40 else "")
            raise ValueError(
                f"`cache` {name!r} is not a submodule of the model; valid names: {shown}"
            )


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


_MISSING = object()


def _version(t: torch.Tensor) -> int:
    try:
        return t._version
    except RuntimeError:
        return -1


TriggerSpec = str | int | Sequence[str | int] | Callable[[tuple, dict], torch.Tensor]


class ReFrame(nn.Module):
    r"""Wrap a per-frame network so its deep features are cached and refreshed by a policy.

    Call it once per frame of one stream, like the model (inputs by position or keyword).
    Refresh frames run the full network (bit-identical to the model in eager mode) and store
    the cache point's output; hit frames run only what does not depend on it.

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
        or a :class:`~reframe_cache.Policy` (the official demo's ``delta`` with τ = 0.1). A
        Policy object is deep-copied: each wrapper owns its per-stream state (``.policy``).
    trigger : str, int, sequence or callable, default="input"
        What the delta policies compare: ``"input"`` (the first positional argument), a
        positional index or a parameter name (found whether passed by keyword or position), a
        list of them (flattened and concatenated: one SMAPE over all), or
        ``fn(args, kwargs) -> Tensor`` (e.g. noise-free albedo/normal/depth).
    compat : {None, "official"}, default=None
        ``"official"`` reproduces the SS sample's halved refresh score at a sequence start
        (``delta-in-out`` only, other policies are refused; DECISIONS 7).

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
        an unparseable policy, k < 1, τ < 0 or NaN, ``compat="official"`` with a policy other
        than delta-in-out.
    TypeError
        If `model` is not an nn.Module, `trigger` has an unsupported type, the model cannot be
        traced or its forward assigns module attributes (without ``forward_split``; the model
        is left untouched), or, on the first frame, delta-in-out meets a non-Tensor output.

    Notes
    -----
    Forced refreshes: frame 0, after :meth:`reset`, when any tensor input's shape, dtype or
    device changes (the cache is cleared), and when a parameter or buffer changed since the
    previous frame (storage address or version counter: ``load_state_dict``, optimiser steps).
    Outputs never share memory with the cache, and the policy reads private copies, so
    callers may modify outputs in place. In ``train()`` mode, or when autograd records (grad
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
        # A copy per wrapper: a Policy object holds per-stream references (H4).
        self.policy: Policy = copy.deepcopy(parse_policy(policy, compat=compat))
        if compat == "official":
            if not isinstance(self.policy, DeltaInOut):
                raise ValueError(
                    "`compat`='official' only changes the delta-in-out policy; got policy "
                    f"{self.policy!r}"
                )
            self.policy.compat = "official"
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
        _check_names(model, names)
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
        self._hit_mutates = False
        self._hit_aliases = True  # unknown for forward_split
        if self.cache_names:
            try:
                full, hit = split_graphs(self.model, self.cache_names)
            except TraceError as err:  # a ValueError subclass: handled before our own
                self._untraceable(err)
            except StatefulForwardError as err:
                if not callable(getattr(self.model, "forward_split", None)):
                    raise
                self._split_error = str(err)
            except ValueError:
                raise
            except Exception as err:  # torch.fx cannot trace this model
                self._untraceable(err)
            else:
                object.__setattr__(self, "_full", full)  # not submodules: no duplicate state
                object.__setattr__(self, "_hit", hit)
                self._hit_mutates = hit_mutates_cache(hit)
                self._hit_aliases = hit_returns_cache(hit)
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
        if getattr(self, "_weights", None) is not None:  # same weights at new addresses
            object.__setattr__(self, "_weights", self._weights_version())

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
        """The fx hit graph, ``(*cached, *inputs, **kw) -> output``; None for ``forward_split``."""
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
        self._weights: tuple | None = None
        self._warned_empty = False
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
            if item == "input" and not args and kwargs:  # first input passed by keyword
                value = next(iter(self._bound(args, kwargs).values()))
            elif item == "input" or isinstance(item, int):
                index = 0 if item == "input" else int(item)
                value = args[index] if index < len(args) else self._by_position(index, kwargs)
                if value is _MISSING:
                    raise ValueError(
                        f"`trigger` index {index} is out of range: the call has "
                        f"{len(args)} positional inputs"
                        + (f" and keywords {sorted(kwargs)}" if kwargs else "")
                    )
            elif item in kwargs:
                value = kwargs[item]
            else:
                value = self._bound(args, kwargs).get(item, _MISSING)
                if value is _MISSING:
                    raise ValueError(
                        f"`trigger` keyword {item!r} is not among the call's inputs "
                        f"(keywords {sorted(kwargs)})"
                    )
            if not isinstance(value, torch.Tensor):
                raise ValueError(
                    f"`trigger` {item!r} selects a {type(value).__name__}, not a Tensor"
                )
            parts.append(value.detach())
        return parts[0] if len(parts) == 1 else torch.cat([p.reshape(-1) for p in parts])

    def _bound(self, args: tuple, kwargs: dict) -> dict:
        """The call's inputs by parameter name (positional ones too), or just `kwargs`."""
        try:
            bound = inspect.signature(self.model.forward).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return dict(kwargs)
        return dict(bound.arguments)

    def _by_position(self, index: int, kwargs: dict) -> Any:
        """The keyword input that fills positional slot `index` of the model's forward."""
        try:
            params = list(inspect.signature(self.model.forward).parameters)
        except (TypeError, ValueError):
            return _MISSING
        return kwargs.get(params[index], _MISSING) if index < len(params) else _MISSING

    def _weights_version(self) -> tuple:
        """A cheap fingerprint of the parameters and buffers: storage address and in-place
        version counter of each (M4: ``load_state_dict``, an optimiser step)."""
        owners = self.__dict__.get("_weight_owners")
        if owners is None:
            owners = self.__dict__["_weight_owners"] = list(self.model.modules())
        tensors = [
            t
            for m in owners
            for d in (m._parameters, m._buffers)
            for t in d.values()
            if t is not None
        ]
        try:
            return tuple([(t.data_ptr(), t._version) for t in tensors])
        except RuntimeError:  # inference tensors have no version counter
            return tuple([(t.data_ptr(), _version(t)) for t in tensors])

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
        weights = self._weights_version()
        forced = (
            self.frames == 0
            or not self.cache
            or sig != self.cache.signature
            or weights != self._weights
        )
        trig = None if self._policy_blind() else self.trigger_tensor(args, kwargs)
        if forced:
            if self.cache.signature is not None and sig != self.cache.signature:
                self.policy.reset()
            self.cache.clear()
            refresh = True
        else:
            refresh = self.policy.decide(self.frames, trig, self._prev_output)
        output = self._run(args, kwargs, refresh)
        if isinstance(self.policy, DeltaInOut) and not isinstance(output, torch.Tensor):
            self.cache.clear()
            raise TypeError(
                "the delta-in-out policy scores the model's output, which must be a single "
                f"Tensor; this model returns a {type(output).__name__}. Use 'delta-<tau>' "
                "(input only), or a Policy subclass that picks the output to score"
            )
        if refresh and not self.cache and not self._warned_empty:
            warnings.warn(
                "forward_split stored nothing in `cache` on a refresh frame, so every frame "
                "refreshes; write the cached features into `cache[...]` when refresh=True",
                stacklevel=2,
            )
            self._warned_empty = True
        if refresh or self._hit_aliases:
            output = self._unalias(output)
        self.cache.signature = sig
        self._weights = self._weights_version()  # after the frame: forward's own writes count
        prev = self._prev_output
        # The policy keeps a private copy: the caller may modify the output in place (M1).
        kept = None
        if getattr(self.policy, "uses_output", True) and isinstance(output, torch.Tensor):
            kept = output.detach().clone()
        if refresh:
            self.policy.on_refresh(trig, kept, prev)
        else:
            self.skipped += 1
        self.policy.observe(trig, kept)
        self._prev_output = kept
        self.history.append(refresh)
        self.frames += 1
        return output

    def _unalias(self, output):
        """Never hand out memory the cache holds (M2: the cache point is the output)."""
        if not self.cache:
            return output
        held = {v.untyped_storage().data_ptr() for v in self.cache.values()}

        def fix(value):
            if isinstance(value, torch.Tensor):
                if value.untyped_storage().data_ptr() in held:
                    return value.clone()
                return value
            if isinstance(value, tuple | list):
                fixed = [fix(v) for v in value]
                if type(value) in (tuple, list):
                    return type(value)(fixed)
                try:
                    return type(value)(*fixed)  # namedtuple
                except TypeError:
                    return value
            if isinstance(value, dict):
                return type(value)((k, fix(v)) for k, v in value.items())
            return value

        return fix(output)

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
        if self._hit_mutates:  # the hit graph writes in place: keep the cache intact
            cached = [c.clone() for c in cached]
        return self._hit(*cached, *args, **kwargs)

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
            hit = count_flops(self._hit, *cached, *args, **kwargs)
        return {"full": full, "hit": hit}

    def extra_repr(self) -> str:
        return f"cache={list(self.cache_names)}, policy={self.policy!r}"
