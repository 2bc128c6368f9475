"""Streaming greedy decoding with a chunked encoder (official SimulEval agent's behaviour).

Chunks of input arrive one at a time; the encoder runs on what has arrived (block-causal, so
earlier frames never change); at each decision frame of the chunk the joint picks the argmax,
emitting at most ``max_symbols_per_frame`` labels. A label's predictor state ``g_u`` is computed
once, when it is emitted, attending all encoder frames received (spec section 2): the training
pass reproduces it exactly with the alignment ``δ`` at the emission chunk's last frame.
"""

from dataclasses import dataclass

import torch

from icml25_core import check_scalar, check_tensor

from .model import MonoAttnTransducer

__all__ = ["StreamResult", "greedy_stream"]


@dataclass
class StreamResult:
    """Result of :func:`greedy_stream`.

    Attributes
    ----------
    tokens : list of int
        Emitted labels.
    emit_frames : list of int
        Decision frame of each emission.
    context_frames : list of int
        Last encoder frame received when each label was emitted (the frame its state attends up
        to); BOS first.
    states : torch.Tensor, ``[len(tokens) + 1, d_model]``
        Predictor states ``g_0 .. g_U`` as computed during streaming.
    """

    tokens: list[int]
    emit_frames: list[int]
    context_frames: list[int]
    states: torch.Tensor


def greedy_stream(
    model: MonoAttnTransducer,
    feats: torch.Tensor,
    *,
    max_symbols_per_frame: int = 5,
) -> StreamResult:
    """Decode one utterance chunk by chunk.

    Parameters
    ----------
    model : MonoAttnTransducer
        Put in eval mode for the call (restored after). Its ``subsampling`` (input frames per
        encoder frame; the constructor's argument or the encoder's attribute) must be set.
    feats : torch.Tensor, float ``[T_in, F]`` or ``[1, T_in, F]``
    max_symbols_per_frame : int, default=5
        Official agent's cap.

    Returns
    -------
    StreamResult

    Raises
    ------
    TypeError, ValueError
        For a non-model, a model without ``subsampling``, wrong shapes, NaN or
        ``max_symbols_per_frame < 1``.
    """
    if not isinstance(model, MonoAttnTransducer):
        raise TypeError(f"`model` must be a MonoAttnTransducer, got {type(model).__name__}")
    check_tensor(feats, "feats", ndim=(2, 3), dtype=(torch.float16, torch.bfloat16, torch.float32,
                                                      torch.float64))  # fmt: skip
    check_scalar(max_symbols_per_frame, "max_symbols_per_frame", kind=int, low=1)
    x = feats if feats.ndim == 3 else feats[None]
    if x.shape[0] != 1:
        raise ValueError(f"`feats` must hold one utterance, got batch {x.shape[0]}")
    enc, ds, cf = model.encoder, model.downsample, model.chunk_frames
    s = model.subsampling
    if s is None:
        raise ValueError(
            "`model` has no `subsampling` (input frames per encoder frame): its encoder has no "
            "`subsampling` attribute; pass MonoAttnTransducer(..., subsampling=N)"
        )
    T_in = x.shape[1]
    T_enc = -(-T_in // s)
    dev = x.device
    was_training = model.training
    model.eval()
    tokens = [model.blank]
    ctx_frames: list[int] = []
    emit_frames: list[int] = []
    try:
        with torch.no_grad():
            g = None
            for c0 in range(0, T_enc, cf):
                end = min(c0 + cf, T_enc)
                n_in = min(end * s, T_in)
                h, _ = enc(x[:, :n_in], torch.tensor([n_in], device=dev))

                def state(h: torch.Tensor = h) -> torch.Tensor:
                    tok = torch.tensor([tokens], device=dev)
                    al = torch.zeros(1, len(tokens), h.shape[1], device=dev)
                    al[0, torch.arange(len(tokens)), torch.tensor(ctx_frames)] = 1.0
                    return model.states(h, torch.tensor([h.shape[1]], device=dev), tok, al)[0]

                if g is None:
                    ctx_frames.append(end - 1)
                    g = state()
                first = -(-c0 // ds)
                for i in range(first, -(-end // ds)):
                    for _ in range(max_symbols_per_frame):
                        logits = model.joint(h[:, i * ds : i * ds + 1], g[None, -1:])
                        k = int(logits[0, 0, 0].argmax())
                        if k == model.blank:
                            break
                        tokens.append(k)
                        emit_frames.append(i)
                        ctx_frames.append(end - 1)
                        g = state()
    finally:
        model.train(was_training)
    assert g is not None
    return StreamResult(tokens[1:], emit_frames, ctx_frames, g)
