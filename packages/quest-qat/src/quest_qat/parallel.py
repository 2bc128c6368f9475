"""Tensor parallelism of QuEST layers: torch ``ParallelStyle`` s for ``parallelize_module``.

The two splits of Megatron-LM (Shoeybi et al. 2019, §3) that torch's ``ColwiseParallel`` and
``RowwiseParallel`` apply to ``nn.Linear`` (torch refuses other modules), for
:class:`~quest_qat.QuESTLinear`:

- :class:`QuESTColwiseParallel` shards N, the rows of W. QuEST quantizes each row of W on its
  own (its RMS and Hadamard blocks lie along K, QuEST §3), so each rank quantizes its rows exactly
  as one process would; the input is replicated and quantized alike on every rank; the output is
  sharded on its last dimension. Backward sums the input's gradient over the ranks.
- :class:`QuESTRowwiseParallel` shards K on Hadamard-block boundaries (K/world a multiple of the
  block). The block-diagonal rotation is applied per shard, which is the shard of the whole
  rotation; the row RMS σ of both operands spans the whole K, so each quantizer sums the squares
  of its shard and ``all_reduce`` s them (the trust mask and Δ are then those of one process).
  The partial products are summed (``all_reduce``) and the replicated bias added once.

Only the rounding of σ (a sum in another order) differs from one process, so outputs and
gradients agree to float rounding. The weight and bias become ``DTensor`` Parameters (state_dict,
optimizers and ``full_tensor()`` work as with torch's styles); the forward computes on the local
shards and moves data with explicit ``torch.distributed`` collectives. Quantizers: QuEST's
(``QuESTQuantizer``, ``STEQuantizer``, ``TrustQuantizer``) and the full-precision
``RotatedWeight``; parameter-holding baselines (LSQ, PACT) and AbsMax are refused. Row-wise
shards quantize with the PyTorch reference (the Triton kernel computes σ inside itself).

Example::

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import parallelize_module
    from quest_qat.parallel import QuESTColwiseParallel, QuESTRowwiseParallel

    mesh = init_device_mesh("cuda", (world_size,))
    parallelize_module(model, mesh, {"mlp.up": QuESTColwiseParallel(),
                                     "mlp.down": QuESTRowwiseParallel()})
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import DTensor, Placement, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ParallelStyle

from .nn import QuESTLinear, RotatedWeight
from .quantizer import QuESTQuantizer

__all__ = ["QuESTColwiseParallel", "QuESTRowwiseParallel"]


class _CopyToParallel(torch.autograd.Function):
    """Identity forward; backward sums the gradient over the group (Megatron's ``f``)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _ReduceFromParallel(torch.autograd.Function):
    """Forward sums the partial results of the group; identity backward (Megatron's ``g``)."""

    @staticmethod
    def forward(ctx, x, group):
        out = x.contiguous().clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _GatherLastDim(torch.autograd.Function):
    """Forward concatenates the ranks' shards along the last dimension; backward keeps this
    rank's slice of the gradient."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, x.contiguous(), group=group)
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, grad):
        chunks = grad.chunk(dist.get_world_size(ctx.group), dim=-1)
        return chunks[dist.get_rank(ctx.group)].contiguous(), None


def _local(t):
    """The local shard of a DTensor (differentiable), or `t` itself."""
    return t.to_local() if isinstance(t, DTensor) else t


def _local_weight_nk(layer: QuESTLinear) -> torch.Tensor:
    """This rank's shard of the layer's weight as (N, K) (see ``QuESTLinear.weight_nk``)."""
    weight = _local(layer.weight)
    return weight.t().contiguous() if layer.transposed else weight


def _same(a: Placement, b: Placement) -> bool:
    return type(a) is type(b) and getattr(a, "dim", None) == getattr(b, "dim", None)


class _QuESTParallelStyle(ParallelStyle):
    """Shared checks, parameter distribution and output layout of the two styles."""

    inputs: tuple[Placement, ...] = ()
    outputs: tuple[Placement, ...] = ()

    def __init__(self, *, input_layouts=None, output_layouts=None, use_local_output=True):
        super().__init__()
        self.input_layouts = self.inputs[0] if input_layouts is None else input_layouts
        self.output_layouts = self.outputs[0] if output_layouts is None else output_layouts
        for name, value, allowed in (
            ("input_layouts", self.input_layouts, self.inputs),
            ("output_layouts", self.output_layouts, self.outputs),
        ):
            if not any(_same(value, a) for a in allowed):
                raise ValueError(
                    f"`{name}` of {type(self).__name__} must be one of {list(allowed)}, "
                    f"got {value!r}"
                )
        if not isinstance(use_local_output, bool):
            raise TypeError(f"`use_local_output` must be a bool, got {use_local_output!r}")
        self.use_local_output = use_local_output

    def _apply(self, module: nn.Module, device_mesh) -> nn.Module:
        if not isinstance(module, QuESTLinear):
            raise TypeError(
                f"{type(self).__name__} applies to QuESTLinear layers, got "
                f"{type(module).__name__} (torch's ColwiseParallel/RowwiseParallel take nn.Linear)"
            )
        if device_mesh.ndim != 1:
            raise ValueError(f"the device mesh must be 1-D, got {device_mesh.ndim} dimensions")
        for name in ("w_quantizer", "a_quantizer"):
            q = getattr(module, name)
            if q is not None and not isinstance(q, QuESTQuantizer | RotatedWeight):
                raise TypeError(
                    f"`{name}` {type(q).__name__} is not supported by tensor parallelism (only "
                    "QuESTQuantizer, STEQuantizer, TrustQuantizer and full precision)"
                )
        self._check_sizes(module, device_mesh.size())
        n_dim = 1 if module.transposed else 0  # where N lies in the stored weight
        placements = self._placements(n_dim)
        for name, placement in zip(("weight", "bias"), placements, strict=True):
            tensor = getattr(module, name)
            if tensor is not None:
                shard = distribute_tensor(
                    tensor.detach(), device_mesh, [placement], src_data_rank=self.src_data_rank
                )
                setattr(module, name, nn.Parameter(shard, requires_grad=tensor.requires_grad))
        module.tp_style, module.tp_mesh = self, device_mesh
        return module

    def _check_sizes(self, module: QuESTLinear, world: int) -> None:
        raise NotImplementedError

    def _placements(self, n_dim: int) -> tuple[Placement, Placement]:
        raise NotImplementedError

    @staticmethod
    def _check_k(x, k: int, what: str) -> None:
        if x.shape[-1] != k:
            raise ValueError(f"`x` must end in {what} K={k}, got shape {tuple(x.shape)}")

    def _output(self, y, mesh, placement):
        if self.use_local_output:
            return y
        if isinstance(placement, Shard):
            placement = Shard(y.ndim - 1)
        return DTensor.from_local(y, mesh, [placement], run_check=False)


class QuESTColwiseParallel(_QuESTParallelStyle):
    """Shard a :class:`~quest_qat.QuESTLinear` along N (the rows of W), as torch's
    ``ColwiseParallel`` does an ``nn.Linear``.

    Parameters
    ----------
    input_layouts : Placement, default=Replicate()
        The input must be replicated (a DTensor input is redistributed to ``Replicate()``).
    output_layouts : Placement, default=Shard(-1)
        ``Shard(-1)``: each rank keeps its N/world output features (for a following
        :class:`QuESTRowwiseParallel`); ``Replicate()`` gathers them.
    use_local_output : bool, default=True
        Return a plain local tensor (True) or a DTensor.

    Raises
    ------
    ValueError
        For other layouts; in ``parallelize_module``, if N is not a multiple of the mesh size or
        the mesh is not 1-D.
    TypeError
        In ``parallelize_module``, for a module that is not a QuESTLinear or a quantizer outside
        QuEST's (LSQ, PACT, AbsMax).

    Notes
    -----
    Source: Megatron-LM's column-parallel linear (Shoeybi et al. 2019, §3); exact for QuEST since
    its weight statistics are per row of W (QuEST §3).
    """

    inputs = (Replicate(),)
    outputs = (Shard(-1), Replicate())

    def _check_sizes(self, module, world):
        if module.out_features % world:
            raise ValueError(
                f"N={module.out_features} (out_features) must be a multiple of the mesh size "
                f"{world}"
            )

    def _placements(self, n_dim):
        return Shard(n_dim), Shard(0)

    def parallel_forward(self, layer: QuESTLinear, x):
        """The forward of a column-sharded `layer`: (..., K) replicated -> (..., N/world) local
        shard (or (..., N) with ``output_layouts=Replicate()``)."""
        mesh = layer.tp_mesh
        group = mesh.get_group()
        if isinstance(x, DTensor):
            x = x.redistribute(mesh, [Replicate()]).to_local()
        self._check_k(x, layer.in_features, "the replicated")
        x = _CopyToParallel.apply(x, group)
        y = layer.linear(x, _local_weight_nk(layer), _local(layer.bias))
        if isinstance(self.output_layouts, Replicate):
            y = _GatherLastDim.apply(y, group)
        return self._output(y, mesh, self.output_layouts)


class QuESTRowwiseParallel(_QuESTParallelStyle):
    """Shard a :class:`~quest_qat.QuESTLinear` along K on Hadamard-block boundaries, as torch's
    ``RowwiseParallel`` does an ``nn.Linear``.

    Each rank holds W[:, shard] (K/world columns, a multiple of the Hadamard block), rotates its
    shard of the input by the same blocks, quantizes both operands with σ of the whole rows
    (``all_reduce`` of the per-shard sums of squares), and the partial products are summed.

    Parameters
    ----------
    input_layouts : Placement, default=Shard(-1)
        ``Shard(-1)``: the input holds this rank's K/world features (a
        :class:`QuESTColwiseParallel` output); ``Replicate()``: each rank takes its slice.
    output_layouts : Placement, default=Replicate()
        The output is replicated.
    use_local_output : bool, default=True
        Return a plain local tensor (True) or a DTensor.

    Raises
    ------
    ValueError
        For other layouts; in ``parallelize_module``, if K is not a multiple of
        ``world·block`` (the shard boundaries must fall on Hadamard blocks) or the mesh is not
        1-D.
    TypeError
        In ``parallelize_module``, for a module that is not a QuESTLinear or a quantizer outside
        QuEST's (LSQ, PACT, AbsMax).

    Notes
    -----
    Source: Megatron-LM's row-parallel linear (Shoeybi et al. 2019, §3); the block-diagonal
    Hadamard of QuEST §3 acts per block, and σ is the RMS of the whole row (official
    ``HalfHadamardTrustQuantizer``).
    """

    inputs = (Shard(-1), Replicate())
    outputs = (Replicate(),)

    def _check_sizes(self, module, world):
        # the two quantizers share their basis and block (QuESTLinear checks it)
        block = module.w_quantizer.block if module.w_quantizer.rotate else 1
        if module.in_features % (world * block):
            raise ValueError(
                f"K={module.in_features} (in_features) must be a multiple of the mesh size "
                f"{world} times the Hadamard block {block}, so that each shard holds whole blocks"
            )

    def _placements(self, n_dim):
        return Shard(1 - n_dim), Replicate()

    def parallel_forward(self, layer: QuESTLinear, x):
        """The forward of a K-sharded `layer`: (..., K/world) local shard (or (..., K)
        replicated with ``input_layouts=Replicate()``) -> (..., N) replicated."""
        mesh = layer.tp_mesh
        group = mesh.get_group()
        if isinstance(x, DTensor):
            x = x.redistribute(mesh, [Shard(x.ndim - 1)]).to_local()
        elif isinstance(self.input_layouts, Replicate):
            self._check_k(x, layer.in_features, "the replicated")
            x = _CopyToParallel.apply(x, group).chunk(mesh.size(), dim=-1)[mesh.get_local_rank()]
        self._check_k(x, layer.in_features // mesh.size(), "this rank's shard of")
        y = layer.linear(x, _local_weight_nk(layer), None, group=group)
        y = _ReduceFromParallel.apply(y, group)
        if layer.bias is not None:
            y = y + _local(layer.bias).to(y.dtype)
        return self._output(y, mesh, Replicate())
