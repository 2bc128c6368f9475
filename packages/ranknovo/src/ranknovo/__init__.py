"""Universal Biological Sequence Reranking for Improved De Novo Peptide Sequencing.

Qiu et al., "Universal Biological Sequence Reranking for Improved De Novo Peptide Sequencing",
ICML 2025, arXiv:2505.17552 (https://arxiv.org/abs/2505.17552).

RankNovo reranks the candidate peptides several de novo sequencers propose for one MS/MS
spectrum with an axial-attention transformer (:class:`RankNovo`), trained to predict each
candidate's peptide mass deviation (:func:`pmd`) from the true peptide.
"""

from ._version import __version__
from .data import CandidateSet, Spectrum, collate, preprocess, read_mgf
from .mass import pmd, pmd_batch, rmd, rmd_batch
from .metrics import aa_match, evaluate
from .model import RankNovo
from .simulate import BaseModelSimulator, ErrorModel, digest_fasta, synthetic_spectrum
from .train import fit, make_loader, ranknovo_loss
from .vocab import Vocab

__all__ = [
    "__version__",
    # Main API: the paper's function first, then its class (see CONTRIBUTING.md).
    "pmd",
    "rmd",
    "RankNovo",
    "pmd_batch",
    "rmd_batch",
    "Vocab",
    "aa_match",
    "evaluate",
    "read_mgf",
    "preprocess",
    "Spectrum",
    "CandidateSet",
    "collate",
    "fit",
    "make_loader",
    "ranknovo_loss",
    "digest_fasta",
    "synthetic_spectrum",
    "ErrorModel",
    "BaseModelSimulator",
]
