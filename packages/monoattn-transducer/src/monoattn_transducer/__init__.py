"""Overcoming Non-monotonicity in Transducer-based Streaming Generation.

Ma, Feng, Zhang, "Overcoming Non-monotonicity in Transducer-based Streaming Generation", ICML
2025, arXiv:2411.17170 (https://arxiv.org/abs/2411.17170).
"""

from ._version import __version__
from .alignment import alignment_prior, chunk_synchronize
from .attention import MonotonicCrossAttention, expected_monotonic_attention
from .decoding import StreamResult, greedy_stream
from .metrics import average_lagging, corpus_bleu
from .model import MonoAttnTransducer, TransducerOutput
from .modules import AdditiveJoint, ChunkedStreamingEncoder, MonoAttnPredictor
from .rnnt import (
    Lattice,
    RNNTLoss,
    emission_posterior,
    normalization_counts,
    rnnt_lattice,
    rnnt_loss,
)

__all__ = [
    "__version__",
    # Main API: the paper's function first, then its class (see CONTRIBUTING.md).
    "rnnt_loss",
    "MonoAttnTransducer",
    "RNNTLoss",
    "emission_posterior",
    "rnnt_lattice",
    "Lattice",
    "normalization_counts",
    "expected_monotonic_attention",
    "MonotonicCrossAttention",
    "alignment_prior",
    "chunk_synchronize",
    "ChunkedStreamingEncoder",
    "MonoAttnPredictor",
    "AdditiveJoint",
    "TransducerOutput",
    "greedy_stream",
    "StreamResult",
    "average_lagging",
    "corpus_bleu",
]
