"""Locally equivariant rate networks and the free-energy network of LEAPS.

Source: Holderrieth, Albergo, Jaakkola, "LEAPS", ICML 2025, Sec. 5 (local equivariance,
Prop. 5.1: G_t(Swap(x, i, tau))_{i, x_i} = -G_t(x)_{i, tau}; rates [G]_+ out, [-G]_+ in from one
pass), Sec. 5.1-5.3 (LE-MLP, LEA attention, LEC convolution) and the official code's LEC.

Every net builds features h_i(x) that never read x_i, then
    Ising (q = 2, spins s in {-1, +1}):  G_i = s_i * h_i                     (flip moves)
    Potts (q >= 3, states in 0..q-1):    G_{i, tau} = h_i[tau] - h_i[x_i]    (swap moves)
so local equivariance holds exactly. q = 2 always means the Ising (spin) encoding.

Axis letters: B walkers, S site shape ((rows, cols) or (n,)), N sites, C channels, q states.
Outputs G: Ising [B, *S]; Potts [B, q, *S] (0 at tau = x_i). dtype follows the parameters.
"""

import itertools
import math
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from icml25_core import check_scalar, check_tensor

from .kernels.sdconv import offset_index, sdconv
from .paths import check_time

__all__ = [
    "LocallyEquivariantConv",
    "LocallyEquivariantMLP",
    "LocallyEquivariantAttention",
    "FreeEnergyNet",
    "rates",
    "corrector",
]


def _check_x(x, q: int, site_shape=None, n_sites=None) -> torch.Tensor:
    """Validate a state batch for a net with q states (q = 2: float spins; else int64)."""
    if q == 2:
        check_tensor(x, "x", dtype=(torch.float32, torch.float64))
        if bool((x.abs() != 1).any()):
            raise ValueError("`x` must hold Ising spins -1 or +1 only (q = 2)")
    else:
        check_tensor(x, "x", dtype=torch.int64)
        if bool(((x < 0) | (x >= q)).any()):
            raise ValueError(f"`x` must hold Potts states in [0, {q})")
    if site_shape is not None and (x.ndim != 3 or min(x.shape[1:]) < 3):
        raise ValueError(
            f"`x` must have shape [B, rows, cols] with sides >= 3, got {tuple(x.shape)}"
        )
    if n_sites is not None and (x.ndim < 2 or math.prod(x.shape[1:]) != n_sites):
        raise ValueError(f"`x` must have shape [B, *S] with {n_sites} sites, got {tuple(x.shape)}")
    return x


def _readout(h, x, q: int):
    """G from site-invariant outputs h: Ising h [B, *S] -> s * h; Potts h [B, q, *S] -> h - h[x]."""
    if q == 2:
        return x.to(h.dtype) * h
    return h - h.gather(1, x[:, None])


def check_net_fits(net, path, name: str = "net") -> None:
    """Raise unless `net` is an nn.Module whose states per site (``q``) and site count
    (``n_sites``, where it has one) match `path`'s."""
    if not isinstance(net, nn.Module):
        raise TypeError(f"`{name}` must be a torch.nn.Module, got {type(net).__name__}")
    if getattr(net, "q", path.q) != path.q:
        raise ValueError(f"`{name}` has q = {net.q} but `path` has q = {path.q}")
    if getattr(net, "n_sites", path.n_sites) != path.n_sites:
        raise ValueError(f"`{name}` has n_sites = {net.n_sites} but `path` has {path.n_sites}")


def _uniform_init(module: nn.Module, scale: float) -> None:
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(0.0, scale)


def rates(G, x):
    """Out- and in-rates of every move from one pass (paper Sec. 5, Prop. 5.1).

    Q(x, Swap(x, i, tau)) = [G_{i, tau}]_+ and Q(Swap(x, i, tau), x) = [-G_{i, tau}]_+.

    Parameters
    ----------
    G : Tensor, float [B, *S] (Ising) or [B, q, *S] (Potts)
    x : Tensor, [B, *S]
        Current states (Potts: int64; the tau = x_i entries are set to 0).

    Returns
    -------
    (out_rate, in_rate) : two Tensors shaped like G.

    Raises
    ------
    ValueError
        `G` shaped for neither case: Ising needs G of x's shape and float `x`, Potts
        G [B, q, *S] and int64 `x`.
    """
    check_tensor(G, "G", ndim=(x.ndim, x.ndim + 1) if isinstance(x, torch.Tensor) else None)
    check_tensor(x, "x")
    if G.ndim == x.ndim:
        if G.shape != x.shape:
            raise ValueError(f"`G` must have shape {tuple(x.shape)}, got {tuple(G.shape)}")
        if not x.is_floating_point():
            raise ValueError(
                f"`G` of shape {tuple(G.shape)} means Ising, whose `x` holds float spins; got "
                f"{x.dtype} `x` (a Potts `G` has shape [B, q, *S])"
            )
        return G.clamp(min=0), (-G).clamp(min=0)
    if G.shape[:1] + G.shape[2:] != x.shape or x.dtype != torch.int64:
        raise ValueError(f"`G` must have shape [B, q, *S] for int64 `x` of shape {tuple(x.shape)}")
    own = F.one_hot(x, G.shape[1]).movedim(-1, 1).bool()
    G = G.masked_fill(own, 0.0)
    return G.clamp(min=0), (-G).clamp(min=0)


def corrector(G, x, delta):
    """K_t(x) = sum_{y != x} Q(y, x) rho(y)/rho(x) - sum_{y != x} Q(x, y) (paper Eq. for A_t).

    With the one-pass rates: K = sum_{i, tau} ([-G]_+ exp(-Delta U) - [G]_+), which equals
    (Q^T rho)(x) / rho(x) for the generator Q (diagonal = -total out-rate).

    Parameters
    ----------
    G : Tensor, float [B, *S] or [B, q, *S]
    x : Tensor, [B, *S]
    delta : Tensor, float, shape of G
        Delta U_{i, tau} = U_t(Swap(x, i, tau)) - U_t(x) (``path.neighbor_delta``).

    Returns
    -------
    Tensor, float [B]

    Raises
    ------
    ValueError
        Shape mismatch, NaN in `delta`.
    """
    out_rate, in_rate = rates(G, x)
    check_tensor(delta, "delta", shape=tuple(G.shape), finite=False)
    if bool(torch.isnan(delta).any()):
        raise ValueError("`delta` contains NaN")
    ratio = torch.where(in_rate > 0, in_rate * torch.exp(-delta.to(G.dtype)), 0.0)
    return (ratio - out_rate).flatten(1).sum(1)


class _TimeMLP(nn.Sequential):
    """t [B] -> [B, out]: Linear(1, w) SiLU Linear(w, w) SiLU Linear(w, out) (code: 1-64-64-k^2)."""

    def __init__(self, out: int, width: int = 64):
        super().__init__(
            nn.Linear(1, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU(),
            nn.Linear(width, out),
        )  # fmt: skip

    def forward(self, t):
        return super().forward(t[:, None])


class _SDLayer(nn.Module):
    """One hollow state-dependent conv layer (see kernels/sdconv/naive.py)."""

    def __init__(self, channels: int, k: int):
        super().__init__()
        K = k * k
        self.A = nn.Parameter(torch.empty(channels, K, channels))
        self.b1 = nn.Parameter(torch.empty(channels, K))
        self.b2 = nn.Parameter(torch.empty(channels, K))
        self.time = _TimeMLP(K)

    def forward(self, h, e, t):
        return sdconv(h, e, self.A, self.b1, self.b2, self.time(t))


class LocallyEquivariantConv(nn.Module):
    """Deep locally equivariant convolution (LEC) on a torus (paper Sec. 5.3; all results).

    Layer 0: circular conv with the centre tap zeroed, no bias, kernel ``kernel_sizes[0]``, on
    e(x) = (1 + t) s (Ising) or a max-norm-1 embedding (Potts). Layers l >= 1: hollow
    state-dependent convs (weights from site i's invariant features, applied to e(x) of the other
    sites), optional residual. Readout: Ising G_i = sum_c w_c h_i[c] (1 + t) s_i; Potts
    G_{i, tau} = logit_tau - logit_{x_i}. Works on any torus with sides >= 3; offsets that wrap
    onto the site itself (kernel > side) are dropped.

    Parameters
    ----------
    q : int, default=2
        States per site; 2 = Ising spins (float {-1, +1}), >= 3 = Potts (int64).
    kernel_sizes : tuple of odd int, default=(3, 5, 7, 9, 15)
        Layer 0's kernel then one state-dependent layer per entry (official code's LEC).
    channels : int, default=20
        C (official code).
    residual : bool, default=False
        Add each state-dependent layer's input to its output (keeps local equivariance).
    init_scale : float, default=0.002
        Parameters start as init_scale * U[0, 1] (official code).

    Shapes
    ------
    forward(x, t): x [B, rows, cols], t float or [B] in [0, 1] -> G [B, rows, cols] (Ising) or
    [B, q, rows, cols] (Potts), parameter dtype.
    """

    def __init__(self, q=2, kernel_sizes=(3, 5, 7, 9, 15), channels=20, *, residual=False,
                 init_scale=0.002):  # fmt: skip
        super().__init__()
        self.q = int(check_scalar(q, "q", kind=int, low=2))
        channels = int(check_scalar(channels, "channels", kind=int, low=1))
        if not kernel_sizes or any(int(k) < 3 or int(k) % 2 == 0 for k in kernel_sizes):
            raise ValueError(f"`kernel_sizes` must be odd ints >= 3, got {kernel_sizes!r}")
        check_scalar(init_scale, "init_scale", low=0.0)
        self.kernel_sizes = tuple(int(k) for k in kernel_sizes)
        self.residual = bool(residual)
        c_in = 1 if self.q == 2 else channels
        k0 = self.kernel_sizes[0]
        self.embed = None if self.q == 2 else nn.Parameter(torch.empty(self.q, channels))
        self.conv0 = nn.Parameter(torch.empty(channels, c_in, k0 * k0))
        self.layers = nn.ModuleList(_SDLayer(channels, k) for k in self.kernel_sizes[1:])
        self.head = nn.Linear(channels, 1 if self.q == 2 else self.q, bias=self.q != 2)
        _uniform_init(self, init_scale)

    def encode(self, x, t):
        """e(x): Ising (1 + t) s as [B, 1, rows, cols]; Potts embedding rows of norm <= 1
        (functional form of ``nn.Embedding(q, C, max_norm=1)``) as [B, C, rows, cols]."""
        if self.q == 2:
            return ((1.0 + t)[:, None, None] * x.to(t.dtype))[:, None]
        assert self.embed is not None  # q > 2: the Potts embedding exists
        norms = self.embed.norm(dim=1, keepdim=True).clamp(min=1.0)
        return (self.embed / norms)[x].movedim(-1, 1)

    def forward(self, x, t):
        """G_t(x), the learned CTMC's rate field: x [B, *S] (Ising float {-1, +1}; Potts int64),
        t float or [B] -> [B, *S] (Ising: one flip per site) or [B, q, *S] (Potts: one per target
        state, 0 at the current one), in the net's float dtype.

        Raises
        ------
        TypeError, ValueError
            If `x` has the wrong dtype, shape or values, or `t` is not a time in [0, 1] per walker.
        """
        x = _check_x(x, self.q, site_shape=True)
        t = check_time(t, x.shape[0], self.conv0.dtype).to(self.conv0.dtype)
        e = self.encode(x, t)
        B, _, rows, cols = e.shape
        index, keep = offset_index(rows, cols, self.kernel_sizes[0], x.device)
        w0 = self.conv0 * keep.to(self.conv0.dtype)
        neigh = e.reshape(B, e.shape[1], rows * cols)[:, :, index]  # [B, Cin, K, N]
        h = torch.einsum("bkon,cko->bcn", neigh, w0).reshape(B, -1, rows, cols)
        for layer in self.layers:
            out = layer(h, e, t)
            h = h + out if self.residual else out
        logits = self.head(h.movedim(1, -1)).movedim(-1, 1)  # [B, 1|q, rows, cols]
        if self.q == 2:
            return _readout((1.0 + t)[:, None, None] * logits[:, 0], x, 2)
        return _readout(logits, x, self.q)


class LocallyEquivariantMLP(nn.Module):
    """Locally equivariant MLP with hollow masks (paper Sec. 5.1) [reconstruction].

    Layer 1 is dense over all sites with the (i, i) blocks masked out, so site i's hidden units
    never see x_i; later layers act per site (block-diagonal), so they cannot mix x_i back in.
    Time enters every layer as an additive t * c term.

    Parameters
    ----------
    n_sites : int
        Number of sites N (the product of the state's site shape).
    q : int, default=2
        States per site (2 = Ising spins).
    hidden : tuple of int, default=(32, 32)
        Hidden width per site of each layer (chosen here).

    Shapes
    ------
    forward(x, t): x [B, *S] with prod(S) = N, t float or [B] -> G [B, *S] or [B, q, *S].
    """

    hollow: torch.Tensor  # registered buffer: 1 - I, zeroing each site's weight on itself

    def __init__(self, n_sites, q=2, hidden=(32, 32)):
        super().__init__()
        self.n_sites = int(check_scalar(n_sites, "n_sites", kind=int, low=2))
        self.q = int(check_scalar(q, "q", kind=int, low=2))
        if not hidden or any(int(h) < 1 for h in hidden):
            raise ValueError(f"`hidden` must be positive ints, got {hidden!r}")
        self.hidden = tuple(int(h) for h in hidden)
        n, f = self.n_sites, 1 if self.q == 2 else self.q
        H0 = self.hidden[0]
        self.w_in = nn.Parameter(torch.randn(n, H0, n, f) / math.sqrt(n * f))
        self.register_buffer("hollow", 1.0 - torch.eye(n)[:, None, :, None], persistent=False)
        self.b_in = nn.Parameter(torch.zeros(n, H0))
        self.t_in = nn.Parameter(torch.randn(n, H0) * 0.1)
        widths = (*self.hidden, f if self.q != 2 else 1)
        self.w = nn.ParameterList(
            nn.Parameter(torch.randn(n, b, a) / math.sqrt(a)) for a, b in itertools.pairwise(widths)
        )
        self.b = nn.ParameterList(nn.Parameter(torch.zeros(n, b)) for b in widths[1:])
        self.tw = nn.ParameterList(nn.Parameter(torch.randn(n, b) * 0.1) for b in widths[1:])

    def forward(self, x, t):
        """G_t(x): x [B, *S], t float or [B] -> [B, *S] (Ising) or [B, q, *S] (Potts), as
        ``LocallyEquivariantConv.forward`` (same errors)."""
        x = _check_x(x, self.q, n_sites=self.n_sites)
        t = check_time(t, x.shape[0], self.w_in.dtype).to(self.w_in.dtype)
        B, site_shape = x.shape[0], x.shape[1:]
        xf = x.reshape(B, self.n_sites)
        if self.q == 2:
            feats = ((1.0 + t)[:, None] * xf.to(t.dtype))[:, :, None]
        else:
            feats = F.one_hot(xf, self.q).to(t.dtype)
        h = torch.einsum("ihjf,bjf->bih", self.w_in * self.hollow, feats)
        h = F.silu(h + self.b_in + t[:, None, None] * self.t_in)
        for k, (w, b, tw) in enumerate(zip(self.w, self.b, self.tw, strict=True)):
            h = torch.einsum("iba,zia->zib", w, h)
            h = h + b + t[:, None, None] * tw
            if k < len(self.w) - 1:
                h = F.silu(h)
        if self.q == 2:
            return _readout(h[..., 0].reshape(B, *site_shape), x, 2)
        return _readout(h.movedim(-1, 1).reshape(B, self.q, *site_shape), x, self.q)


class LocallyEquivariantAttention(nn.Module):
    """Locally equivariant attention (LEA, paper Sec. 5.2) [reconstruction].

    Site i's query comes from its own invariant state z_i (position + time embedding, then the
    previous layer's output); keys and values come from e(x_j) + pos_j of the OTHER sites
    j != i (diagonal of the attention masked), so z_i never sees x_i.

    Parameters
    ----------
    n_sites : int
        Number of sites N.
    q : int, default=2
        States per site (2 = Ising spins).
    dim : int, default=32
        Embedding width (divisible by `heads`).
    heads : int, default=4
        Attention heads.
    layers : int, default=2
        Attention + MLP blocks.

    Shapes
    ------
    forward(x, t): x [B, *S] with prod(S) = N, t float or [B] -> G [B, *S] or [B, q, *S].
    """

    def __init__(self, n_sites, q=2, dim=32, heads=4, layers=2):
        super().__init__()
        self.n_sites = int(check_scalar(n_sites, "n_sites", kind=int, low=2))
        self.q = int(check_scalar(q, "q", kind=int, low=2))
        self.dim = int(check_scalar(dim, "dim", kind=int, low=1))
        self.heads = int(check_scalar(heads, "heads", kind=int, low=1))
        if self.dim % self.heads:
            raise ValueError(f"`dim` ({dim}) must be divisible by `heads` ({heads})")
        check_scalar(layers, "layers", kind=int, low=1)
        self.pos = nn.Parameter(torch.randn(self.n_sites, self.dim) * 0.5)
        self.value_embed = nn.Linear(1, self.dim) if self.q == 2 else nn.Embedding(self.q, self.dim)
        self.time = _TimeMLP(self.dim, width=self.dim)
        self.query = nn.ModuleList(nn.Linear(self.dim, self.dim) for _ in range(layers))
        self.key_value = nn.ModuleList(nn.Linear(self.dim, 2 * self.dim) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(self.dim, self.dim) for _ in range(layers))
        self.mlp = nn.ModuleList(
            nn.Sequential(
                nn.Linear(self.dim, 2 * self.dim), nn.SiLU(), nn.Linear(2 * self.dim, self.dim)
            )
            for _ in range(layers)
        )
        self.head = nn.Linear(self.dim, 1 if self.q == 2 else self.q)
        self.register_buffer(
            "self_mask", torch.eye(self.n_sites, dtype=torch.bool), persistent=False
        )

    def forward(self, x, t):
        """G_t(x): x [B, *S], t float or [B] -> [B, *S] (Ising) or [B, q, *S] (Potts), as
        ``LocallyEquivariantConv.forward`` (same errors)."""
        x = _check_x(x, self.q, n_sites=self.n_sites)
        t = check_time(t, x.shape[0], self.pos.dtype).to(self.pos.dtype)
        B, site_shape = x.shape[0], x.shape[1:]
        xf = x.reshape(B, self.n_sites)
        if self.q == 2:
            e = self.value_embed(((1.0 + t)[:, None] * xf.to(t.dtype))[..., None])
        else:
            e = self.value_embed(xf)
        e = e + self.pos
        z = self.pos + self.time(t)[:, None]
        nh, dh = self.heads, self.dim // self.heads
        blocks = zip(self.query, self.key_value, self.proj, self.mlp, strict=True)
        for to_query, to_key_value, proj, mlp in blocks:
            query = to_query(z).reshape(B, -1, nh, dh).transpose(1, 2)
            key, value = (
                part.reshape(B, -1, nh, dh).transpose(1, 2) for part in to_key_value(e).chunk(2, -1)
            )
            scores = (query @ key.transpose(-1, -2)) / math.sqrt(dh)
            attn = scores.masked_fill(self.self_mask, float("-inf")).softmax(-1)
            z = z + proj((attn @ value).transpose(1, 2).reshape(B, -1, self.dim))
            z = z + mlp(z)
        out = self.head(z)  # [B, N, 1|q]
        if self.q == 2:
            return _readout(out[..., 0].reshape(B, *site_shape), x, 2)
        return _readout(out.movedim(-1, 1).reshape(B, self.q, *site_shape), x, self.q)


class FreeEnergyNet(nn.Module):
    """F^phi_t: t [B] -> [B], an SiLU MLP (official code: hidden (200,) * 4).

    Its time derivative learns -d/dt log Z_t, the walker-independent part of the weight rate
    g_t, in the PINN loss (paper Sec. 6).

    Parameters
    ----------
    hidden : tuple of int, default=(200, 200, 200, 200)
    """

    def __init__(self, hidden=(200,) * 4):
        super().__init__()
        if not hidden or any(int(h) < 1 for h in hidden):
            raise ValueError(f"`hidden` must be positive ints, got {hidden!r}")
        widths = (1, *(int(h) for h in hidden))
        layers = []
        for a, b in itertools.pairwise(widths):
            layers += [nn.Linear(a, b), nn.SiLU()]
        # no output bias: only d_t F enters the loss, so a bias would be a parameter without a
        # gradient (DistributedDataParallel rejects those); F is defined up to a constant anyway
        self.mlp = nn.Sequential(*layers, nn.Linear(widths[-1], 1, bias=False))

    def forward(self, t):
        """F_t: times t [B] (float) -> the free-energy estimates [B], in the net's dtype.

        Raises
        ------
        TypeError, ValueError
            If `t` is not a 1-D tensor.
        """
        check_tensor(t, "t", ndim=1)
        first = cast(nn.Linear, self.mlp[0])
        # first(t[:, None]) written elementwise (one input feature): the same numbers, but the
        # weight's gradient comes out in its own [width, 1] layout, so DDP's gradient buckets
        # take it without a stride-mismatch warning (the matmul's gradient is laid out transposed)
        h = t[:, None].to(first.weight.dtype) * first.weight[:, 0] + first.bias
        return self.mlp[1:](h)[:, 0]
