"""Encoder, predictor and joint of a (MonoAttn-)Transducer.

Official defaults (spec section 2): block-causal Transformer encoder over 4x-subsampled 80-dim
fbank, a Transformer predictor with monotonic cross-attention, and the additive joint
``z = W_out tanh(W_e h_t + W_p g_u)``. Our encoder subsamples by stacking 4 frames (the official
code uses strided convolutions, whose kernels reach across chunk borders).
"""

import math

import torch
from torch import nn

from icml25_core import check_scalar, check_tensor

from .attention import MonotonicCrossAttention

__all__ = ["AdditiveJoint", "ChunkedStreamingEncoder", "MonoAttnPredictor"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _sinusoid(n: int, d: int, device: torch.device) -> torch.Tensor:
    pos = torch.arange(n, device=device, dtype=torch.float32)[:, None]
    div = torch.exp(
        torch.arange(0, d, 2, device=device, dtype=torch.float32) * (-math.log(1e4) / d)
    )
    pe = torch.zeros(n, d, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe


class ChunkedStreamingEncoder(nn.Module):
    """Block-causal Transformer encoder: a frame sees its own chunk and ``left_chunks`` before it.

    Parameters
    ----------
    input_dim : int
        Feature width (80 for the official fbank).
    d_model, num_layers, num_heads : int
        Transformer sizes.
    chunk_frames : int
        Encoder frames per chunk (after the 4x subsampling); official ``main_context`` 64
        fbank frames = 16 encoder frames.
    left_chunks : int, optional
        Chunks of left context (None: all history).
    subsampling : int, default=4
        Input frames stacked per encoder frame.
    dropout : float, default=0.1

    Raises
    ------
    ValueError
        For sizes < 1 or `num_heads` not dividing `d_model`.
    """

    def __init__(
        self,
        input_dim: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        chunk_frames: int,
        left_chunks: int | None = None,
        *,
        subsampling: int = 4,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        for name, v in (("input_dim", input_dim), ("d_model", d_model), ("num_layers", num_layers),
                        ("num_heads", num_heads), ("chunk_frames", chunk_frames),
                        ("subsampling", subsampling)):  # fmt: skip
            check_scalar(v, name, kind=int, low=1)
        if left_chunks is not None:
            check_scalar(left_chunks, "left_chunks", kind=int, low=0)
        if d_model % num_heads:
            raise ValueError(f"`num_heads` ({num_heads}) must divide `d_model` ({d_model})")
        self.input_dim, self.d_model = input_dim, d_model
        self.chunk_frames, self.left_chunks, self.subsampling = (
            chunk_frames,
            left_chunks,
            subsampling,
        )
        self.proj = nn.Linear(input_dim * subsampling, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, num_heads, 4 * d_model, dropout, batch_first=True, norm_first=True
        )
        self.layers = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)

    def chunk_mask(self, T: int, device: torch.device) -> torch.Tensor:
        """Bool ``[T, T]``, True where frame ``i`` may NOT attend frame ``j`` (block-causal)."""
        c = torch.arange(T, device=device) // self.chunk_frames
        allowed = c[None, :] <= c[:, None]
        if self.left_chunks is not None:
            allowed &= c[None, :] >= c[:, None] - self.left_chunks
        return ~allowed

    def forward(
        self, feats: torch.Tensor, feat_lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode.

        Parameters
        ----------
        feats : torch.Tensor, float ``[B, T_in, input_dim]``
            Cast to the dtype of the encoder's parameters.
        feat_lengths : torch.Tensor, int ``[B]``, ``1 <= len <= T_in``

        Returns
        -------
        h : torch.Tensor ``[B, T_enc, d_model]`` with ``T_enc = ceil(T_in / subsampling)``
        enc_lengths : torch.Tensor, int64 ``[B]``, ``ceil(len / subsampling)``

        Raises
        ------
        ValueError, TypeError
            On wrong shapes, dtypes, NaN or lengths out of range.
        """
        check_tensor(feats, "feats", ndim=3, dtype=_FLOATS)
        B, T_in, F = feats.shape
        if self.input_dim != F:
            raise ValueError(f"`feats` must have {self.input_dim} features, got {F}")
        check_tensor(feat_lengths, "feat_lengths", shape=(B,), dtype=(torch.int32, torch.int64))
        if int(feat_lengths.min()) < 1 or int(feat_lengths.max()) > T_in:
            raise ValueError(f"`feat_lengths` must be in [1, {T_in}]")
        s = self.subsampling
        T = -(-T_in // s)
        valid_in = torch.arange(T_in, device=feats.device)[None, :] < feat_lengths[:, None]
        x = feats.masked_fill(~valid_in[:, :, None], 0.0)
        x = nn.functional.pad(x, (0, 0, 0, T * s - T_in)).reshape(B, T, s * F)
        x = x.to(self.proj.weight.dtype)  # fp16/bf16/fp64 feats into an fp32 model (trial 23 L1)
        enc_len = torch.div(feat_lengths.to(torch.int64) + s - 1, s, rounding_mode="floor")
        h = self.proj(x) + _sinusoid(T, self.d_model, feats.device).to(x.dtype)
        pad = torch.arange(T, device=feats.device)[None, :] >= enc_len[:, None]
        h = self.layers(h, mask=self.chunk_mask(T, feats.device), src_key_padding_mask=pad)
        return self.norm(h).masked_fill(pad[:, :, None], 0.0), enc_len


class _PredictorLayer(nn.Module):
    def __init__(self, d: int, h: int, cross: bool, dropout: float) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, h, dropout=dropout, batch_first=True)
        self.cross = MonotonicCrossAttention(d, h, dropout=dropout) if cross else None
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
        self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, enc, causal, alignment, enc_mask):
        y = self.n1(x)
        x = x + self.drop(self.self_attn(y, y, y, attn_mask=causal, need_weights=False)[0])
        if self.cross is not None:
            y = self.n2(x)
            x = x + self.drop(
                self.cross(y, enc, enc, alignment=alignment, key_padding_mask=enc_mask)
            )
        return x + self.drop(self.ff(self.n3(x)))


class MonoAttnPredictor(nn.Module):
    """Transformer predictor; with ``cross_attention`` it attends the encoder monotonically.

    Row ``u`` of the output is ``g_u``, the state after ``y_0 = BOS, y_1 .. y_u`` (causal
    self-attention), whose cross-attention uses alignment row ``u`` (Ma et al. 2025, Sec. 3.1).

    Parameters
    ----------
    vocab_size : int
        V, blank included (the blank id doubles as BOS).
    d_model, num_layers, num_heads : int
    cross_attention : bool, default=True
        False: a plain Transformer-Transducer predictor (no encoder access).
    dropout : float, default=0.1

    Raises
    ------
    ValueError
        For sizes < 1 or `num_heads` not dividing `d_model`.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_layers: int,
        num_heads: int,
        cross_attention: bool = True,
        *,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model),
                        ("num_layers", num_layers), ("num_heads", num_heads)):  # fmt: skip
            check_scalar(v, name, kind=int, low=1)
        if d_model % num_heads:
            raise ValueError(f"`num_heads` ({num_heads}) must divide `d_model` ({d_model})")
        self.vocab_size, self.d_model, self.cross_attention = vocab_size, d_model, cross_attention
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            _PredictorLayer(d_model, num_heads, cross_attention, dropout) for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model)

    def forward(
        self,
        tokens: torch.Tensor,
        enc: torch.Tensor | None = None,
        *,
        alignment: torch.Tensor | None = None,
        enc_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """States ``g`` for a BOS-prefixed token sequence.

        Parameters
        ----------
        tokens : torch.Tensor, int64 ``[B, U+1]``
            ``[BOS, y_1, .., y_U]`` (ids in ``[0, V)``).
        enc : torch.Tensor, float ``[B, T_enc, d_model]``, optional
            Encoder output (required with cross-attention).
        alignment : torch.Tensor, float ``[B, U+1, T_enc]``, optional
            Expected attention alignment; None: softmax over all unmasked frames given.
        enc_padding_mask : torch.Tensor, bool ``[B, T_enc]``, optional

        Returns
        -------
        torch.Tensor, float ``[B, U+1, d_model]``

        Raises
        ------
        ValueError
            For ids out of range, a missing `enc` with cross-attention, shape mismatches.
        """
        check_tensor(tokens, "tokens", ndim=2, dtype=(torch.int32, torch.int64))
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size:
            raise ValueError(f"`tokens` must be in [0, {self.vocab_size})")
        if self.cross_attention and enc is None:
            raise ValueError("`enc` is required by a predictor with cross_attention=True")
        R = tokens.shape[1]
        x = self.embed(tokens) + _sinusoid(R, self.d_model, tokens.device)
        causal = torch.ones(R, R, dtype=torch.bool, device=tokens.device).triu(1)
        for layer in self.layers:
            x = layer(x, enc, causal, alignment, enc_padding_mask)
        return self.norm(x)


class AdditiveJoint(nn.Module):
    r"""Joint network $$z_{t,u}=W_{\mathrm{out}}\tanh(W_e h_t+W_p g_u)$$ (official joint).

    Parameters
    ----------
    enc_dim, pred_dim, joint_dim, vocab_size : int

    Raises
    ------
    ValueError
        For sizes < 1.
    """

    def __init__(self, enc_dim: int, pred_dim: int, joint_dim: int, vocab_size: int) -> None:
        super().__init__()
        for name, v in (("enc_dim", enc_dim), ("pred_dim", pred_dim), ("joint_dim", joint_dim),
                        ("vocab_size", vocab_size)):  # fmt: skip
            check_scalar(v, name, kind=int, low=1)
        self.enc_proj = nn.Linear(enc_dim, joint_dim)
        self.pred_proj = nn.Linear(pred_dim, joint_dim, bias=False)
        self.out = nn.Linear(joint_dim, vocab_size)

    def forward(self, h: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, T, U+1, V]`` from ``h [B, T, enc_dim]`` and ``g [B, U+1, pred_dim]``.

        Raises
        ------
        ValueError
            On mismatched batch sizes or wrong ndim.
        """
        check_tensor(h, "h", ndim=3, dtype=_FLOATS)
        check_tensor(g, "g", ndim=3, dtype=_FLOATS)
        if h.shape[0] != g.shape[0]:
            raise ValueError("`h` and `g` must have the same batch size")
        return self.out(torch.tanh(self.enc_proj(h)[:, :, None] + self.pred_proj(g)[:, None]))
