"""MonoAttn-Transducer: the two-pass training step around an encoder, predictor and joint.

Source: Ma et al., ICML 2025, Sec. 3.3 (Algorithm: prior context -> posterior -> expected
context); official ``monotonic_transducer_chunk_diagonal_prior.py`` (spec section 2).
"""

from dataclasses import dataclass

import torch
from torch import nn

from icml25_core import check_choice, check_scalar, check_tensor

from .alignment import alignment_prior, chunk_synchronize
from .modules import AdditiveJoint, ChunkedStreamingEncoder, MonoAttnPredictor
from .rnnt import _check_targets, emission_posterior, rnnt_loss

__all__ = ["MonoAttnTransducer", "TransducerOutput"]


def _check_alignment(alignment: torch.Tensor, shape: tuple[int, int, int]) -> None:
    check_tensor(
        alignment, "alignment", shape=shape,
        dtype=(torch.float16, torch.bfloat16, torch.float32, torch.float64),
    )  # fmt: skip
    if bool((alignment < 0).any()):
        raise ValueError("`alignment` must be >= 0")
    rows = alignment.detach().double().sum(-1)
    if bool((rows > 1 + 1e-3).any()):
        b, u = (int(i) for i in (rows > 1 + 1e-3).nonzero()[0])
        raise ValueError(
            f"`alignment` rows must be distributions over frames (sum <= 1); row [{b}, {u}] sums "
            f"to {float(rows[b, u]):.4g}"
        )


@dataclass
class TransducerOutput:
    """What :meth:`MonoAttnTransducer.forward` returns.

    Attributes
    ----------
    loss : torch.Tensor
        RNN-T loss of the second (trained) pass, reduced as the model's ``reduction``.
    posterior : torch.Tensor or None
        ``[B, T_dec, U]`` posterior of the first pass (None for a plain Transducer).
    alignment : torch.Tensor or None
        ``[B, U+1, T_enc]`` chunk-synchronised alignment used by the second pass.
    """

    loss: torch.Tensor
    posterior: torch.Tensor | None
    alignment: torch.Tensor | None


class MonoAttnTransducer(nn.Module):
    r"""Transducer whose predictor attends the source through learnable monotonic attention.

    Training (Ma et al. 2025, Sec. 3.3): (1) without gradient, contexts from a prior alignment ->
    predictor -> joint -> lattice -> posterior ``P(τ_u = t)``; (2) chunk synchronisation of the
    posterior; (3) with gradient, expected contexts under that constant alignment -> RNN-T loss

    $$\mathcal L=-\log\sum_{\text{paths}}\prod p\bigl(\cdot\mid h_t,\,g_u(c_u)\bigr),\quad
    c_u=\sum_j w_{u,j}v_j$$

    A predictor built with ``cross_attention=False`` gives a plain Transformer-Transducer (one
    pass, same loss).

    Parameters
    ----------
    encoder : ChunkedStreamingEncoder
    predictor : MonoAttnPredictor
    joint : AdditiveJoint
    blank : int, default=0
        Blank index; ``-1`` means ``vocab_size - 1`` (torchaudio's), stored resolved.
    chunk_frames : int
        Encoder frames per chunk (the encoder's); a multiple of `downsample`.
    downsample : int, default=4
        Decision stride over encoder frames (official ``transducer_downsample``).
    subsampling : int, optional
        Input frames per encoder frame, needed by :func:`~monoattn_transducer.greedy_stream` to
        feed the encoder chunk by chunk. Default: the encoder's ``subsampling`` attribute (a
        :class:`ChunkedStreamingEncoder` has one); a bring-your-own encoder without it must pass
        it here to stream (training does not need it).
    prior : {"chunk_diagonal", "diagonal", "uniform"}, default="chunk_diagonal"
    prior_alpha : float, default=1.0
        Official ``--alpha``.
    normalize : {"none", "frames", "tokens"}, default="none"
    reduction : {"mean", "sum", "none"}, default="mean"

    Raises
    ------
    ValueError
        On invalid settings (e.g. ``chunk_frames % downsample != 0``).
    """

    def __init__(
        self,
        encoder: ChunkedStreamingEncoder,
        predictor: MonoAttnPredictor,
        joint: AdditiveJoint,
        *,
        blank: int = 0,
        chunk_frames: int,
        downsample: int = 4,
        subsampling: int | None = None,
        prior: str = "chunk_diagonal",
        prior_alpha: float = 1.0,
        normalize: str = "none",
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        check_scalar(chunk_frames, "chunk_frames", kind=int, low=1)
        check_scalar(downsample, "downsample", kind=int, low=1)
        if chunk_frames % downsample:
            raise ValueError(
                f"`chunk_frames` ({chunk_frames}) must be a multiple of `downsample` ({downsample})"
            )
        check_choice(prior, "prior", ("chunk_diagonal", "diagonal", "uniform"))
        check_choice(normalize, "normalize", ("none", "frames", "tokens"))
        check_choice(reduction, "reduction", ("mean", "sum", "none"))
        check_scalar(prior_alpha, "prior_alpha", low=0)
        vocab = predictor.vocab_size
        if not isinstance(vocab, int) or vocab < 2:
            raise ValueError(
                f"`vocab_size` must be an int >= 2 (blank and at least one label), got {vocab!r}"
            )
        check_scalar(blank, "blank", kind=int, low=-1, high=vocab - 1)
        blank = blank % vocab
        if subsampling is None:
            subsampling = getattr(encoder, "subsampling", None)
        if subsampling is not None:
            check_scalar(subsampling, "subsampling", kind=int, low=1)
        self.subsampling: int | None = subsampling
        self.encoder, self.predictor, self.joint = encoder, predictor, joint
        self.blank, self.chunk_frames, self.downsample = blank, chunk_frames, downsample
        self.prior, self.prior_alpha = prior, prior_alpha
        self.normalize, self.reduction = normalize, reduction

    @property
    def monotonic(self) -> bool:
        """Whether the predictor has monotonic cross-attention (two-pass training)."""
        return bool(self.predictor.cross_attention)

    def predictor_input(self, targets: torch.Tensor, target_lengths: torch.Tensor) -> torch.Tensor:
        """``[B, U+1]`` = ``[BOS(=blank), y_1 .. y_U]``, padding replaced by blank."""
        U = targets.shape[1]
        valid = torch.arange(U, device=targets.device)[None, :] < target_lengths[:, None]
        y = targets.to(torch.int64).masked_fill(~valid, self.blank)
        bos = y.new_full((y.shape[0], 1), self.blank)  # also for U = 0 (trial 23 M2)
        return torch.cat([bos, y], 1)

    def states(
        self,
        h: torch.Tensor,
        enc_lengths: torch.Tensor,
        tokens: torch.Tensor,
        alignment: torch.Tensor | None,
    ) -> torch.Tensor:
        """Predictor states ``g [B, U+1, d]`` under an alignment ``[B, U+1, T_enc]``."""
        pad = torch.arange(h.shape[1], device=h.device)[None, :] >= enc_lengths[:, None]
        if not self.monotonic:
            return self.predictor(tokens)
        return self.predictor(tokens, h, alignment=alignment, enc_padding_mask=pad)

    def forward(
        self,
        feats: torch.Tensor,
        feat_lengths: torch.Tensor,
        targets: torch.Tensor,
        target_lengths: torch.Tensor,
        *,
        alignment: torch.Tensor | None = None,
    ) -> TransducerOutput:
        """One training step's loss (two passes for a monotonic predictor).

        Parameters
        ----------
        feats : torch.Tensor, float ``[B, T_in, F]``
        feat_lengths : torch.Tensor, int ``[B]``
        targets : torch.Tensor, int ``[B, U]`` (no blank within `target_lengths`)
        target_lengths : torch.Tensor, int ``[B]``
        alignment : torch.Tensor, float ``[B, U+1, T_enc]``, keyword-only, optional
            Use this alignment instead of passes 1-2 (oracle alignments, ablations): a
            distribution over frames per row, entries >= 0 and row sums <= 1 (0 for padded
            labels).

        Returns
        -------
        TransducerOutput

        Raises
        ------
        ValueError, TypeError
            From the encoder, predictor and :func:`~monoattn_transducer.rnnt.rnnt_loss` checks.
        """
        check_tensor(targets, "targets", ndim=2, dtype=(torch.int32, torch.int64), allow_empty=True)
        check_tensor(target_lengths, "target_lengths", ndim=1, dtype=(torch.int32, torch.int64))
        h, enc_len = self.encoder(feats, feat_lengths)
        if not bool(torch.isfinite(h).all()):
            raise ValueError(
                "the encoder output is not finite for these `feats` (values too large? "
                f"max |feats| = {float(feats.detach().abs().max()):.3g})"
            )
        hd = h[:, :: self.downsample]
        dec_len = torch.div(enc_len + self.downsample - 1, self.downsample, rounding_mode="floor")
        if int(target_lengths.min()) < 0 or int(target_lengths.max()) > targets.shape[1]:
            raise ValueError(f"`target_lengths` must be in [0, {targets.shape[1]}]")
        if target_lengths.shape != (targets.shape[0],):
            raise ValueError(f"`target_lengths` must have shape ({targets.shape[0]},)")
        _check_targets(
            targets, target_lengths.to(torch.int64), targets.shape[0],
            self.predictor.vocab_size, self.blank,
        )  # fmt: skip
        tokens = self.predictor_input(targets, target_lengths)
        if alignment is not None:
            _check_alignment(alignment, (targets.shape[0], targets.shape[1] + 1, h.shape[1]))
        posterior = None
        if self.monotonic and alignment is None:
            prior = alignment_prior(
                self.prior, enc_len, target_lengths, chunk_frames=self.chunk_frames,
                alpha=self.prior_alpha, enc_frames=h.shape[1],
                max_target_length=targets.shape[1],
            )  # fmt: skip
            with torch.no_grad():
                g0 = self.states(h, enc_len, tokens, prior)
                posterior = emission_posterior(
                    self.joint(hd, g0), targets, dec_len, target_lengths, blank=self.blank
                )
            alignment = chunk_synchronize(
                posterior, enc_len, target_lengths, chunk_frames=self.chunk_frames,
                downsample=self.downsample, enc_frames=h.shape[1],
            )  # fmt: skip
        g = self.states(h, enc_len, tokens, alignment)
        loss = rnnt_loss(
            self.joint(hd, g), targets, dec_len, target_lengths, self.blank,
            reduction=self.reduction, normalize=self.normalize,
        )  # fmt: skip
        return TransducerOutput(loss, posterior, alignment)

    @classmethod
    def build(
        cls,
        input_dim: int,
        vocab_size: int,
        *,
        d_model: int = 144,
        enc_layers: int = 4,
        pred_layers: int = 2,
        num_heads: int = 4,
        chunk_frames: int = 16,
        left_chunks: int | None = None,
        downsample: int = 4,
        monotonic: bool = True,
        dropout: float = 0.1,
        **kwargs,
    ) -> "MonoAttnTransducer":
        """A model from sizes: encoder, predictor (monotonic or plain) and joint of width `d_model`.

        Defaults follow the official README architecture scaled down (chunk 16 encoder frames
        = 640 ms, ``downsample`` 4). Extra keyword arguments go to the constructor.
        """
        enc = ChunkedStreamingEncoder(
            input_dim, d_model, enc_layers, num_heads, chunk_frames, left_chunks, dropout=dropout
        )
        pred = MonoAttnPredictor(
            vocab_size, d_model, pred_layers, num_heads, cross_attention=monotonic, dropout=dropout
        )
        joint = AdditiveJoint(d_model, d_model, d_model, vocab_size)
        return cls(enc, pred, joint, chunk_frames=chunk_frames, downsample=downsample, **kwargs)
