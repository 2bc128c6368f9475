r"""Three small neural processes as ``flax.nnx`` modules: CNP, LatentNP and AttnCNP.

Model protocol (spec Sec. 3, in JAX: DECISIONS 12): an ``nnx.Module`` with
``task_loss(batch) -> [B]`` (one loss per task, mean over its real target points) and
``predict(batch) -> (mean, std)`` of shape [B, Nt, dy]. Any module with these two methods can be
trained by :class:`~riskaverse_np.MirrorProxCVaR` and :class:`~riskaverse_np.RiskAverseTrainer`.

Axis letters as in :mod:`riskaverse_np.tasks`: B tasks, Nc context and Nt target points, dx / dy
input / output dimensions, H hidden width.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
from flax import nnx

from icml25_core import check_scalar

from .tasks import TaskBatch

__all__ = ["CNP", "AttnCNP", "LatentNP", "gaussian_nll", "sigma_floor"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
SIGMA_MIN = 0.01


def sigma_floor(raw):
    r"""Predictive standard deviation with the usual NP floor, $\sigma = 0.01 + 0.99\,
    \mathrm{softplus}(\mathrm{raw})$ (spec Sec. 2; Le et al. 2018; keeps the NLL bounded,
    deepsensor#10). Shape and dtype follow `raw`."""
    return SIGMA_MIN + (1.0 - SIGMA_MIN) * jax.nn.softplus(raw)


def gaussian_nll(y, mean, std):
    r"""Elementwise $-\log \mathcal N(y; \mu, \sigma^2) = \tfrac12\log 2\pi + \log\sigma +
    \tfrac12 ((y-\mu)/\sigma)^2$ (nats); checked against ``jax.scipy.stats.norm.logpdf``."""
    z = (y - mean) / std
    return _HALF_LOG_2PI + jnp.log(std) + 0.5 * z * z


def _masked_mean(values, mask, axis):
    """Mean of `values` over `axis` where `mask` (broadcast on the trailing axis) is True."""
    m = mask.astype(values.dtype)
    while m.ndim < values.ndim:
        m = m[..., None]
    count = jnp.maximum(jnp.sum(m, axis=axis), 1.0)
    return jnp.sum(values * m, axis=axis) / count


def _target_mean(per_point, mask_t):
    """Mean over the real target points of a per-point loss [B, Nt, dy] -> [B] (sum over dy)."""
    return _masked_mean(jnp.sum(per_point, axis=-1), mask_t, axis=1)


class MLP(nnx.Module):
    """``depth`` Dense layers with ReLU between them (none after the last)."""

    def __init__(self, sizes: list[int], *, rngs: nnx.Rngs) -> None:
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in itertools.pairwise(sizes)])

    def __call__(self, x):
        """Apply the layers to `x` [..., sizes[0]] -> [..., sizes[-1]]."""
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = jax.nn.relu(x)
        return x


def _check_dims(**values: int) -> None:
    for name, value in values.items():
        check_scalar(value, name, kind=int, low=1)


class CNP(nnx.Module):
    r"""Conditional neural process (Garnelo et al. 2018a, "Conditional Neural Processes", Sec. 2).

    $r = \frac{1}{|C|}\sum_{i \in C} h([x_i, y_i])$; $(\mu, \mathrm{raw}) = g([r, x_t])$;
    $\sigma = 0.01 + 0.99\,\mathrm{softplus}(\mathrm{raw})$. Per-task loss (spec Sec. 2): the mean
    over target points of $-\log \mathcal N(y_t; \mu, \sigma^2)$, summed over output dimensions.

    Parameters
    ----------
    dim_x, dim_y : int >= 1
        Input and output dimensions.
    hidden : int >= 1, default=128
        Width H of every layer (spec Sec. 3).
    depth : int >= 1, default=3
        Dense layers in the encoder h and in the decoder g.
    rngs : nnx.Rngs or int, default=0
        Initialisation randomness.

    Examples
    --------
    >>> import numpy as np
    >>> from riskaverse_np import CNP, make_batch
    >>> x = np.linspace(-1, 1, 10, dtype=np.float32)[None, :, None]
    >>> batch = make_batch(x[:, :4], np.sin(x[:, :4]), x, np.sin(x))
    >>> CNP(1, 1, hidden=16).task_loss(batch).shape
    (1,)
    """

    def __init__(
        self, dim_x: int, dim_y: int, hidden: int = 128, depth: int = 3, *, rngs=0
    ) -> None:
        _check_dims(dim_x=dim_x, dim_y=dim_y, hidden=hidden, depth=depth)
        rngs = rngs if isinstance(rngs, nnx.Rngs) else nnx.Rngs(rngs)
        self.dim_x, self.dim_y = dim_x, dim_y
        self.encoder = MLP([dim_x + dim_y] + [hidden] * depth, rngs=rngs)
        self.decoder = MLP([hidden + dim_x] + [hidden] * (depth - 1) + [2 * dim_y], rngs=rngs)

    def represent(self, batch: TaskBatch):
        """Context representation r [B, H]: masked mean of the encoded context pairs."""
        h = self.encoder(jnp.concatenate([batch.xc, batch.yc], axis=-1))
        return _masked_mean(h, batch.mask_c, axis=1)

    def predict(self, batch: TaskBatch):
        """Predictive ``(mean, std)``, each [B, Nt, dy]; ``std >= 0.01``."""
        r = self.represent(batch)
        nt = batch.xt.shape[1]
        rr = jnp.broadcast_to(r[:, None, :], (r.shape[0], nt, r.shape[-1]))
        out = self.decoder(jnp.concatenate([rr, batch.xt], axis=-1))
        mean, raw = jnp.split(out, 2, axis=-1)
        return mean, sigma_floor(raw)

    def task_loss(self, batch: TaskBatch):
        """Per-task loss [B]: mean over real targets of the Gaussian NLL (nats)."""
        mean, std = self.predict(batch)
        return _target_mean(gaussian_nll(batch.yt, mean, std), batch.mask_t)


class LatentNP(nnx.Module):
    r"""Latent neural process (Garnelo et al. 2018b, "Neural Processes", Sec. 2.2 / Eq. 5).

    Encoder $s_i = h([x_i, y_i])$, mean-pooled, maps a set to
    $q(z) = \mathcal N(\mu_z, \sigma_z^2)$ with $\sigma_z = 0.01 + 0.99\,\mathrm{sigmoid}(\cdot)$;
    the decoder $g([z, x_t])$ gives $(\mu, \sigma)$ with the 0.01 softplus floor. Per-task loss:
    the negative ELBO per target point,
    $$\ell = \frac{1}{|T|}\Big(-\sum_{t \in T}\log\mathcal N(y_t;\mu,\sigma^2) +
    \mathrm{KL}\big(q(z \mid T)\,\|\,q(z \mid C)\big)\Big),$$
    with $z \sim q(z \mid T)$ by reparameterisation when a key is given, its mean otherwise
    (targets include the context, as in the tasks of :mod:`riskaverse_np.tasks`).

    Parameters
    ----------
    dim_x, dim_y : int >= 1
    hidden : int >= 1, default=128
    latent : int >= 1, default=64
        Dimension of z (spec Sec. 3).
    rngs : nnx.Rngs or int, default=0
    """

    def __init__(
        self, dim_x: int, dim_y: int, hidden: int = 128, latent: int = 64, *, rngs=0
    ) -> None:
        _check_dims(dim_x=dim_x, dim_y=dim_y, hidden=hidden, latent=latent)
        rngs = rngs if isinstance(rngs, nnx.Rngs) else nnx.Rngs(rngs)
        self.dim_x, self.dim_y, self.latent = dim_x, dim_y, latent
        self.encoder = MLP([dim_x + dim_y, hidden, hidden, 2 * latent], rngs=rngs)
        self.decoder = MLP([latent + dim_x, hidden, hidden, 2 * dim_y], rngs=rngs)

    def posterior(self, x, y, mask):
        """``(mu_z, sigma_z)`` [B, latent] of q(z | set) for a set x [B, N, dx], y, mask [B, N]."""
        s = self.encoder(jnp.concatenate([x, y], axis=-1))
        mu, raw = jnp.split(_masked_mean(s, mask, axis=1), 2, axis=-1)
        return mu, SIGMA_MIN + (1.0 - SIGMA_MIN) * jax.nn.sigmoid(raw)

    def _decode(self, z, xt):
        nt = xt.shape[1]
        zz = jnp.broadcast_to(z[:, None, :], (z.shape[0], nt, z.shape[-1]))
        mean, raw = jnp.split(self.decoder(jnp.concatenate([zz, xt], axis=-1)), 2, axis=-1)
        return mean, sigma_floor(raw)

    def predict(self, batch: TaskBatch, key=None):
        """``(mean, std)`` [B, Nt, dy] given the context: z = the prior's mean, or a sample of
        q(z | C) when a JAX `key` is given."""
        mu, sig = self.posterior(batch.xc, batch.yc, batch.mask_c)
        z = mu if key is None else mu + sig * jax.random.normal(key, mu.shape, mu.dtype)
        return self._decode(z, batch.xt)

    def kl(self, batch: TaskBatch):
        r"""$\mathrm{KL}(q(z\mid T)\,\|\,q(z\mid C))$ per task [B] (closed form for diagonal
        Gaussians), nats; >= 0."""
        mu_t, sig_t = self.posterior(batch.xt, batch.yt, batch.mask_t)
        mu_c, sig_c = self.posterior(batch.xc, batch.yc, batch.mask_c)
        ratio = (sig_t / sig_c) ** 2
        return 0.5 * jnp.sum(ratio + ((mu_t - mu_c) / sig_c) ** 2 - 1.0 - jnp.log(ratio), axis=-1)

    def task_loss(self, batch: TaskBatch, key=None):
        """Per-task negative ELBO per target point [B] (nats)."""
        mu_t, sig_t = self.posterior(batch.xt, batch.yt, batch.mask_t)
        z = mu_t if key is None else mu_t + sig_t * jax.random.normal(key, mu_t.shape, mu_t.dtype)
        mean, std = self._decode(z, batch.xt)
        nll = jnp.sum(gaussian_nll(batch.yt, mean, std), axis=-1)
        m = batch.mask_t.astype(nll.dtype)
        count = jnp.maximum(jnp.sum(m, axis=1), 1.0)
        return (jnp.sum(nll * m, axis=1) + self.kl(batch)) / count


class AttnCNP(nnx.Module):
    r"""Attentive conditional NP, deterministic path (Kim et al. 2019, "Attentive Neural
    Processes", Sec. 3, multihead cross-attention; no self-attention, no latent path).

    Values $v_i = h([x_i, y_i])$, keys $k_i = e(x_i)$, queries $q_t = e(x_t)$;
    $r_t = \mathrm{MultiHead}(q_t, k, v)$ over the real context points
    (``nnx.MultiHeadAttention``); $(\mu, \mathrm{raw}) = g([r_t, x_t])$, 0.01 softplus floor.

    Parameters
    ----------
    dim_x, dim_y : int >= 1
    hidden : int >= 1, default=128
        Width; a multiple of `heads`.
    heads : int >= 1, default=4
    rngs : nnx.Rngs or int, default=0
    """

    def __init__(
        self, dim_x: int, dim_y: int, hidden: int = 128, heads: int = 4, *, rngs=0
    ) -> None:
        _check_dims(dim_x=dim_x, dim_y=dim_y, hidden=hidden, heads=heads)
        if hidden % heads:
            raise ValueError(f"`hidden` ({hidden}) must be a multiple of `heads` ({heads})")
        rngs = rngs if isinstance(rngs, nnx.Rngs) else nnx.Rngs(rngs)
        self.dim_x, self.dim_y = dim_x, dim_y
        self.values = MLP([dim_x + dim_y, hidden, hidden], rngs=rngs)
        self.embed = MLP([dim_x, hidden, hidden], rngs=rngs)
        self.attention = nnx.MultiHeadAttention(
            num_heads=heads,
            in_features=hidden,
            qkv_features=hidden,
            out_features=hidden,
            decode=False,
            rngs=rngs,
            keep_rngs=False,
        )
        self.decoder = MLP([hidden + dim_x, hidden, hidden, 2 * dim_y], rngs=rngs)

    def predict(self, batch: TaskBatch):
        """Predictive ``(mean, std)``, each [B, Nt, dy]; ``std >= 0.01``."""
        v = self.values(jnp.concatenate([batch.xc, batch.yc], axis=-1))
        k = self.embed(batch.xc)
        q = self.embed(batch.xt)
        mask = batch.mask_c[:, None, None, :]  # [B, heads (broadcast), Nt (broadcast), Nc]
        mask = jnp.broadcast_to(mask, (q.shape[0], 1, q.shape[1], k.shape[1]))
        r = self.attention(q, k, v, mask=mask, deterministic=True)
        mean, raw = jnp.split(self.decoder(jnp.concatenate([r, batch.xt], axis=-1)), 2, axis=-1)
        return mean, sigma_floor(raw)

    def task_loss(self, batch: TaskBatch):
        """Per-task loss [B]: mean over real targets of the Gaussian NLL (nats)."""
        mean, std = self.predict(batch)
        return _target_mean(gaussian_nll(batch.yt, mean, std), batch.mask_t)
