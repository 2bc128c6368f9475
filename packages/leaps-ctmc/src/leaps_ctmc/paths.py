"""Annealing paths rho_t = exp(-U_t) / Z_t, t in [0, 1], of discrete Boltzmann distributions.

Source: Holderrieth, Albergo, Jaakkola, "LEAPS", ICML 2025, Sec. 2 (the path rho_t and the
proposal moves Swap(x, i, tau)) and Sec. 7 (Ising / Potts targets, linear coupling path).
U_t = beta * H_{J(t)} with J(t) = J_0 + t (J_1 - J_0), so rho_0 is uniform for J_0 = 0 and
dU_t/dt is exact and cheap (the official code's linear temperature path).

Axis letters: B walkers, L rows / columns of the torus, S = site shape ((L, L) or (n,)),
q states per site. Ising states are float {-1, +1} of shape [B, *S]; Potts states are int64 in
{0, ..., q-1} of shape [B, *S].
"""

import math
import numbers
from abc import ABC, abstractmethod

import numpy as np
import torch

from icml25_core import check_scalar, check_tensor

__all__ = ["IsingPath", "PottsPath", "GraphIsingPath", "check_time", "check_generator"]


def _pair(value, name):
    """A (start, end) pair of finite floats, from a pair or one number (constant)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"`{name}` must be a number or a (start, end) pair, got {value!r}")
    out = tuple(float(check_scalar(v, name)) for v in value)
    if not all(math.isfinite(v) for v in out):
        raise ValueError(f"`{name}` must be finite, got {value!r}")
    return out


def _beta(beta):
    beta = float(check_scalar(beta, "beta", low=0.0, inclusive="neither"))
    if not math.isfinite(beta):
        raise ValueError(f"`beta` must be finite, got {beta}")
    return beta


def _lattice(L):
    """(rows, cols) of a torus; both >= 3 (a 2-site ring counts its bond twice)."""
    dims = (L, L) if isinstance(L, numbers.Integral) and not isinstance(L, bool) else L
    if not isinstance(dims, (tuple, list)) or len(dims) != 2:
        raise ValueError(f"`L` must be an int or a (rows, cols) pair, got {L!r}")
    for d in dims:
        check_scalar(d, "L", kind=int, low=3)
    return int(dims[0]), int(dims[1])


def check_generator(generator, name: str = "generator"):
    """Return `generator` if it is None or a ``torch.Generator``; else raise TypeError."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"`{name}` must be a torch.Generator or None, got {type(generator).__name__}"
        )
    return generator


def check_time(t, batch: int, dtype=torch.float32) -> torch.Tensor:
    """Validate a time and broadcast it to shape [batch].

    Parameters
    ----------
    t : float or Tensor, shape [] or [batch], floating
        Time in [0, 1].
    batch : int
        Number of walkers B.
    dtype : torch.dtype
        dtype of the result when `t` is a Python number.

    Returns
    -------
    Tensor, shape [batch]

    Raises
    ------
    ValueError
        If `t` has another shape, is NaN or lies outside [0, 1].
    TypeError
        If `t` is not a number or a floating tensor.
    """
    if isinstance(t, numbers.Real) and not isinstance(t, bool):
        t = torch.full((batch,), float(t), dtype=dtype)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"`t` must be a float or a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"`t` must be a floating tensor, got dtype {t.dtype}")
    if t.ndim == 0:
        t = t.expand(batch)
    check_tensor(t, "t", shape=(batch,))
    if bool(((t < 0) | (t > 1)).any()):
        raise ValueError(f"`t` must lie in [0, 1], got values in [{t.min():.4g}, {t.max():.4g}]")
    return t


def _lattice_coloring(rows: int, cols: int) -> torch.Tensor:
    """A proper coloring of the rows x cols torus: 2 colors when both are even, else 3.

    A proper 3-coloring a(.) of the cycle C_n (alternate 0/1, last site 2 when n is odd) gives
    the product coloring (a(i) + a(j)) mod 3, proper because a neighbour changes exactly one term.
    """

    def cycle(n):
        c = torch.arange(n) % 2
        if n % 2:
            c[-1] = 2
        return c

    if rows % 2 == 0 and cols % 2 == 0:
        return (torch.arange(rows)[:, None] + torch.arange(cols)[None, :]) % 2
    return (cycle(rows)[:, None] + cycle(cols)[None, :]) % 3


class _Path(ABC):
    """Shared validation of states and times (subclasses set q, spin, site_shape)."""

    q: int
    spin: bool
    site_shape: tuple
    beta: float
    J: tuple

    @property
    def n_sites(self) -> int:
        """Number of sites d."""
        return math.prod(self.site_shape)

    def check_state(self, x, name: str = "x") -> torch.Tensor:
        """Validate a batch of states; returns it unchanged.

        Raises
        ------
        TypeError
            Wrong dtype (Ising: floating {-1, +1}; Potts: int64).
        ValueError
            Wrong shape (must be [B, *site_shape]), empty batch, values off the alphabet.
        """
        if self.spin:
            check_tensor(x, name, dtype=(torch.float32, torch.float64))
        else:
            check_tensor(x, name, dtype=torch.int64)
        if tuple(x.shape[1:]) != tuple(self.site_shape) or x.ndim != 1 + len(self.site_shape):
            raise ValueError(
                f"`{name}` must have shape [B, {', '.join(map(str, self.site_shape))}], "
                f"got {tuple(x.shape)}"
            )
        if self.spin:
            if bool((x.abs() != 1).any()):
                raise ValueError(f"`{name}` must hold Ising spins -1 or +1 only")
        elif bool(((x < 0) | (x >= self.q)).any()):
            raise ValueError(f"`{name}` must hold Potts states in [0, {self.q}), got values "
                             f"in [{int(x.min())}, {int(x.max())}]")  # fmt: skip
        return x

    def _inputs(self, x, t):
        x = self.check_state(x)
        if self.spin:
            dtype = x.dtype
        elif isinstance(t, torch.Tensor) and t.is_floating_point():
            dtype = t.dtype
        else:
            dtype = torch.get_default_dtype()
        return x, check_time(t, x.shape[0], dtype).to(dtype=dtype, device=x.device)

    # What every path defines (the sampler and the MCMC sweeps call them on any path).
    @abstractmethod
    def coloring(self) -> torch.Tensor:
        """A proper coloring of the sites, int64 [*S]: same-colored sites share no edge."""

    @abstractmethod
    def dU_dt(self, x, t) -> torch.Tensor:
        """d U_t(x) / dt, shape [B]."""

    @abstractmethod
    def neighbor_delta(self, x, t) -> torch.Tensor:
        """U_t(y) - U_t(x) for each single-site neighbour y of x."""

    def coupling(self, t: torch.Tensor) -> torch.Tensor:
        """J(t) = J_0 + t (J_1 - J_0), shape [B]."""
        return self.J[0] + t * (self.J[1] - self.J[0])

    def sample_base(self, n: int, generator=None, dtype=torch.float32) -> torch.Tensor:
        """n i.i.d. states from the uniform base rho_0 (exact for J_0 = 0, field_0 = 0).

        Returns
        -------
        Tensor, shape [n, *site_shape]: Ising `dtype` in {-1, +1}; Potts int64 in [0, q).
        """
        check_scalar(n, "n", kind=int, low=1)
        check_generator(generator)
        if self.spin:
            bits = torch.randint(0, 2, (n, *self.site_shape), generator=generator)
            return (2 * bits - 1).to(dtype)
        return torch.randint(0, self.q, (n, *self.site_shape), generator=generator)


class IsingPath(_Path):
    """Ising model on an L x L (or rows x cols) torus along a linear coupling path.

    H_J(s) = -J sum_<ij> s_i s_j - mu_B sum_i s_i with each nearest-neighbour bond once, and
    U_t(s) = beta * H_{J(t)}(s), J(t), field(t) linear in t (paper Sec. 7.1; critical
    beta = 0.4407 ~ beta_c = ln(1 + sqrt 2) / 2).

    Parameters
    ----------
    L : int or (int, int)
        Torus side (or rows, cols), each >= 3.
    beta : float
        Inverse temperature, > 0.
    J : float or (float, float), default=(0., 1.)
        Coupling at t = 0 and t = 1.
    field : float or (float, float), default=(0., 0.)
        External field mu_B at t = 0 and t = 1.

    Raises
    ------
    ValueError
        L < 3, beta <= 0, NaN or infinite couplings.
    """

    spin = True
    q = 2

    def __init__(self, L, beta, J=(0.0, 1.0), field=(0.0, 0.0)):
        self.site_shape = _lattice(L)
        self.beta = _beta(beta)
        self.J = _pair(J, "J")
        self.field = _pair(field, "field")
        self.n_bonds = 2 * self.n_sites

    @property
    def log_z0(self) -> float:
        """log Z_0 = d log 2 of the uniform start (J_0 = 0, field_0 = 0), in nats.

        Raises
        ------
        ValueError
            If the path does not start at J = 0 and zero field.
        """
        if self.J[0] != 0.0 or self.field[0] != 0.0:
            raise ValueError("log_z0 = d log 2 only for a path starting at J = 0, field = 0")
        return self.n_sites * math.log(2.0)

    def coloring(self) -> torch.Tensor:
        """Proper coloring of the torus, int64 [*S] (2 colors, or 3 for an odd side)."""
        return _lattice_coloring(*self.site_shape)

    def _bond_sum(self, x):
        return (x * (x.roll(1, -1) + x.roll(1, -2))).sum((-1, -2))

    def _field(self, t):
        return self.field[0] + t * (self.field[1] - self.field[0])

    def U(self, x, t) -> torch.Tensor:
        """U_t(x) = beta (-J(t) sum_<ij> s_i s_j - field(t) sum_i s_i), shape [B], x's dtype."""
        x, t = self._inputs(x, t)
        return self.beta * (
            -self.coupling(t) * self._bond_sum(x) - self._field(t) * x.sum((-1, -2))
        )

    def dU_dt(self, x, t) -> torch.Tensor:
        """Exact d U_t(x) / dt of the linear path, shape [B]."""
        x, t = self._inputs(x, t)
        dj, dh = self.J[1] - self.J[0], self.field[1] - self.field[0]
        return self.beta * (-dj * self._bond_sum(x) - dh * x.sum((-1, -2))) + 0 * t

    def neighbor_delta(self, x, t) -> torch.Tensor:
        """Delta U_i = U_t(flip_i x) - U_t(x) = 2 beta s_i (J(t) sum_{j~i} s_j + field(t)).

        Returns
        -------
        Tensor, shape [B, *S], x's dtype.
        """
        x, t = self._inputs(x, t)
        nbr = x.roll(1, -1) + x.roll(-1, -1) + x.roll(1, -2) + x.roll(-1, -2)
        j, h = self.coupling(t)[:, None, None], self._field(t)[:, None, None]
        return 2.0 * self.beta * x * (j * nbr + h)


class PottsPath(_Path):
    """q-state Potts model on an L x L torus along a linear coupling path.

    H_J(s) = -J sum_<ij> delta(s_i, s_j), U_t = beta H_{J(t)} (paper Sec. 7.2; q = 3 with
    beta = 1.0010, the DISCS value; the exact critical point is ln(1 + sqrt 3) = 1.00505).

    Parameters
    ----------
    L : int or (int, int)
        Torus side (or rows, cols), each >= 3.
    q : int
        States per site, >= 2 (q = 2 equals Ising with beta_Ising = beta / 2).
    beta : float
        Inverse temperature, > 0.
    J : float or (float, float), default=(0., 1.)
        Coupling at t = 0 and t = 1.

    Raises
    ------
    ValueError
        L < 3, q < 2, beta <= 0, NaN or infinite couplings.
    """

    spin = False

    def __init__(self, L, q, beta, J=(0.0, 1.0)):
        self.site_shape = _lattice(L)
        self.q = int(check_scalar(q, "q", kind=int, low=2))
        self.beta = _beta(beta)
        self.J = _pair(J, "J")
        self.n_bonds = 2 * self.n_sites

    @property
    def log_z0(self) -> float:
        """log Z_0 = d log q of the uniform start (J_0 = 0), in nats.

        Raises
        ------
        ValueError
            If the path does not start at J = 0.
        """
        if self.J[0] != 0.0:
            raise ValueError("log_z0 = d log q only for a path starting at J = 0")
        return self.n_sites * math.log(self.q)

    def coloring(self) -> torch.Tensor:
        """Proper coloring of the torus, int64 [*S] (2 colors, or 3 for an odd side)."""
        return _lattice_coloring(*self.site_shape)

    def _same(self, x):
        return ((x == x.roll(1, -1)).sum((-1, -2)) + (x == x.roll(1, -2)).sum((-1, -2))).to(
            torch.get_default_dtype()
        )

    def U(self, x, t) -> torch.Tensor:
        """U_t(x) = -beta J(t) sum_<ij> delta(x_i, x_j), shape [B], t's dtype."""
        x, t = self._inputs(x, t)
        return -self.beta * self.coupling(t) * self._same(x).to(t.dtype)

    def dU_dt(self, x, t) -> torch.Tensor:
        """Exact d U_t(x) / dt = -beta (J_1 - J_0) sum_<ij> delta(x_i, x_j), shape [B]."""
        x, t = self._inputs(x, t)
        return -self.beta * (self.J[1] - self.J[0]) * self._same(x).to(t.dtype) + 0 * t

    def neighbor_delta(self, x, t) -> torch.Tensor:
        """Delta U_{i,tau} = U_t(Swap(x, i, tau)) - U_t(x) = -beta J(t) (n_i(tau) - n_i(x_i)),

        n_i(a) = number of neighbours of i in state a.

        Returns
        -------
        Tensor, shape [B, q, *S], t's dtype; exactly 0 at tau = x_i.
        """
        x, t = self._inputs(x, t)
        onehot = torch.nn.functional.one_hot(x, self.q).movedim(-1, 1).to(t.dtype)
        counts = onehot.roll(1, -1) + onehot.roll(-1, -1) + onehot.roll(1, -2) + onehot.roll(-1, -2)
        own = counts.gather(1, x[:, None])
        return -self.beta * self.coupling(t)[:, None, None, None] * (counts - own)


def _from_networkx(graph, weights, n_nodes):
    """(edge index pairs, weights, node count) of an undirected networkx graph.

    Nodes are numbered in ``list(graph)`` order; each edge's ``weight`` attribute (default 1) is
    its bond weight, so a MultiGraph's parallel edges add up. `weights` and `n_nodes` belong to
    edge arrays: given with a graph they must not contradict it.
    """
    if graph.is_directed():
        raise ValueError(
            "`edges` must be an undirected graph: Ising couplings are symmetric, and a directed "
            "graph's reciprocal edges would count one bond twice (pass graph.to_undirected())"
        )
    if weights is not None:
        raise ValueError(
            "`weights` is for an edge array: a networkx graph's bond weights come from its edge "
            "attribute 'weight' (nx.set_edge_attributes(graph, values, 'weight'))"
        )
    index = {node: k for k, node in enumerate(graph)}
    if n_nodes is not None and n_nodes != len(index):
        raise ValueError(f"`n_nodes` = {n_nodes!r} but the graph has {len(index)} nodes")
    pairs, values = [], []
    for a, b, data in graph.edges(data=True):
        weight = data.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise TypeError(
                f"`edges`: the 'weight' of edge ({a!r}, {b!r}) must be a real number, "
                f"got {weight!r}"
            )
        if not math.isfinite(weight):
            raise ValueError(f"`edges`: the 'weight' of edge ({a!r}, {b!r}) is {weight}")
        pairs.append((index[a], index[b]))
        values.append(float(weight))
    return pairs, values, len(index)


class GraphIsingPath(_Path):
    """Ising model on an arbitrary graph: U_t = beta (-J(t) sum_e w_e s_a s_b - h(t) sum_i s_i).

    Parameters
    ----------
    edges : networkx.Graph or array_like of int, shape [E, 2]
        The interaction graph; a networkx graph's nodes are numbered in ``list(graph)`` order and
        its edge attribute ``weight`` (default 1) scales each bond.
    beta : float
        Inverse temperature, > 0.
    J : float or (float, float), default=(0., 1.)
        Coupling at t = 0 and t = 1.
    h : float or (float, float), default=(0., 0.)
        External field at t = 0 and t = 1.
    n_nodes : int, optional
        Number of sites when `edges` is an array (default: largest index + 1); with a graph it
        must equal the graph's node count.
    weights : array_like of float, shape [E], optional
        Bond weights for an edge array (default 1); not allowed with a graph (use its edge
        attribute ``weight``).

    Raises
    ------
    ValueError
        Empty edge list, self-loops, indices out of range, NaN weights, beta <= 0, a directed
        graph, `weights` or a contradicting `n_nodes` given with a graph.
    TypeError
        Non-integer edge indices, non-numeric weights.
    """

    spin = True
    q = 2

    def __init__(self, edges, beta, J=(0.0, 1.0), h=(0.0, 0.0), *, n_nodes=None, weights=None):
        if hasattr(edges, "nodes") and hasattr(edges, "edges"):
            edges, weights, n_nodes = _from_networkx(edges, weights, n_nodes)
        arr = np.asarray(edges)
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] == 0:
            raise ValueError(f"`edges` must be a non-empty [E, 2] array, got shape {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise TypeError(f"`edges` must hold integer node indices, got dtype {arr.dtype}")
        if (arr[:, 0] == arr[:, 1]).any():
            raise ValueError("`edges` must not contain self-loops")
        n = (
            int(arr.max()) + 1
            if n_nodes is None
            else int(check_scalar(n_nodes, "n_nodes", kind=int, low=1))
        )
        if arr.min() < 0 or arr.max() >= n:
            raise ValueError(
                f"`edges` indices must lie in [0, {n}), got [{arr.min()}, {arr.max()}]"
            )
        try:
            w = np.ones(len(arr)) if weights is None else np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise TypeError(f"`weights` must be numbers, got {weights!r}") from error
        if w.shape != (len(arr),):
            raise ValueError(f"`weights` must have shape ({len(arr)},) (per edge), got {w.shape}")
        if not np.isfinite(w).all():
            raise ValueError("`weights` must be finite, got NaN or infinity")
        self.site_shape = (n,)
        self.edges = torch.as_tensor(arr, dtype=torch.int64)
        self.weights = torch.as_tensor(w, dtype=torch.float64)
        self.beta = _beta(beta)
        self.J = _pair(J, "J")
        self.field = _pair(h, "h")
        self.n_bonds = len(arr)

    @property
    def log_z0(self) -> float:
        """log Z_0 = n log 2 of the uniform start (J_0 = 0, h_0 = 0), in nats.

        Raises
        ------
        ValueError
            If the path does not start at J = 0 and zero field.
        """
        if self.J[0] != 0.0 or self.field[0] != 0.0:
            raise ValueError("log_z0 = n log 2 only for a path starting at J = 0, h = 0")
        return self.n_sites * math.log(2.0)

    def coloring(self) -> torch.Tensor:
        """Greedy proper coloring of the graph (largest degree first), int64 [n]."""
        n = self.n_sites
        nbrs: list[set[int]] = [set() for _ in range(n)]
        for a, b in self.edges.tolist():
            nbrs[a].add(b)
            nbrs[b].add(a)
        color = [-1] * n
        for v in sorted(range(n), key=lambda v: -len(nbrs[v])):
            used = {color[u] for u in nbrs[v]}
            color[v] = next(c for c in range(n) if c not in used)
        return torch.tensor(color, dtype=torch.int64)

    def _field(self, t):
        return self.field[0] + t * (self.field[1] - self.field[0])

    def _bond_sum(self, x):
        w = self.weights.to(x.dtype)
        return (w * x[:, self.edges[:, 0]] * x[:, self.edges[:, 1]]).sum(-1)

    def U(self, x, t) -> torch.Tensor:
        """U_t(x) = beta (-J(t) sum_e w_e s_a s_b - h(t) sum_i s_i), shape [B]."""
        x, t = self._inputs(x, t)
        return self.beta * (-self.coupling(t) * self._bond_sum(x) - self._field(t) * x.sum(-1))

    def dU_dt(self, x, t) -> torch.Tensor:
        """Exact d U_t(x) / dt of the linear path, shape [B]."""
        x, t = self._inputs(x, t)
        dj, dh = self.J[1] - self.J[0], self.field[1] - self.field[0]
        return self.beta * (-dj * self._bond_sum(x) - dh * x.sum(-1)) + 0 * t

    def neighbor_delta(self, x, t) -> torch.Tensor:
        """Delta U_i = 2 beta s_i (J(t) sum_{e = (i, j)} w_e s_j + h(t)), shape [B, n]."""
        x, t = self._inputs(x, t)
        w = self.weights.to(x.dtype)
        a, b = self.edges[:, 0], self.edges[:, 1]
        local = torch.zeros_like(x)
        local = local.index_add(1, a, w * x[:, b]).index_add(1, b, w * x[:, a])
        return 2.0 * self.beta * x * (self.coupling(t)[:, None] * local + self._field(t)[:, None])
