r"""RankNovo: a list-wise axial-attention reranker of de novo peptide candidates.

Qiu et al., "Universal Biological Sequence Reranking for Improved De Novo Peptide Sequencing",
ICML 2025, Sec. 3.2 (official BEAM-Labs/denovo ``RankNovo/``). A spectrum encoder (Casanovo's)
reads the peaks; the candidates of the spectrum form a (rows R × columns C) block, ``<cls>`` then
tokens, right-padded with the gap; each decoder layer applies, pre-LN and residual, tied row
attention, column attention across candidates, cross-attention to the spectrum and a GELU FFN.
The ``<cls>`` head predicts each candidate's PMD against the (unknown) true peptide; the
candidate with the lowest predicted PMD is selected:

$$
\hat r = \arg\min_{r \le R} \widehat{\mathrm{PMD}}_r,\qquad
\widehat{\mathrm{PMD}}_r = w^\top \mathrm{LN}(h^{(L)}_{r,0}) + b
$$

Token embedding (column c of row r, D = `dim`): $[E_{aa}(t_{r,c}),\ \mathrm{Sin}_{D/4}(m(t_{r,c})),\
\mathrm{Sin}_{D/4}(M - \sum_{k\le c} m(t_{r,k}))]$, column 0 also
$+[\mathrm{Sin}_{D/2}(M) + E_z(z-1),\ \mathrm{Sin}_{D/4}(0),\ \mathrm{Sin}_{D/4}(0)]$, then learned
padding-aware column positions, LayerNorm and dropout. No row embedding: the model is
permutation-equivariant over candidates.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from icml25_core import check_scalar, check_tensor

from .kernels.row_attention import row_attention_einsum, row_attention_sdpa
from .vocab import Vocab

__all__ = ["RankNovo", "sinusoid", "mass_inputs"]


def sinusoid(
    x: torch.Tensor, dim: int, min_wavelength: float = 0.001, max_wavelength: float = 10000.0
) -> torch.Tensor:
    r"""Casanovo's ``MassEncoder``: $\lfloor d/2\rfloor$ sines then cosines of $x/\lambda_i$.

    $\lambda_i = \frac{\lambda_{min}}{2\pi}(\lambda_{max}/\lambda_{min})^{i/(n-1)}$ per part
    (n its size), x/λ built in float64.

    Parameters
    ----------
    x : torch.Tensor, float, shape (...)
        Masses or m/z (Da / Th).
    dim : int
        Output size.

    Returns
    -------
    torch.Tensor of float32, shape (..., dim)
    """
    n_sin = dim // 2
    n_cos = dim - n_sin
    base = min_wavelength / (2 * math.pi)
    scale = max_wavelength / min_wavelength
    x64 = x.to(torch.float64)[..., None]

    def terms(n):
        i = torch.arange(n, dtype=torch.float64, device=x.device)
        return base * scale ** (i / max(n - 1, 1))

    return torch.cat([torch.sin(x64 / terms(n_sin)), torch.cos(x64 / terms(n_cos))], dim=-1).float()


def mass_inputs(
    tokens: torch.Tensor, precursor_mass: torch.Tensor, masses: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token mass and remaining (suffix) mass inputs of the embedding, float64.

    Parameters
    ----------
    tokens : torch.Tensor of int64, shape (B, R, C)
    precursor_mass : torch.Tensor, shape (B,)
        Neutral precursor mass M (Da).
    masses : torch.Tensor of float64, shape (V,)
        Mass per id (0 for special tokens and the gap).

    Returns
    -------
    token_mass : torch.Tensor of float64, shape (B, R, C)
        m(t_{r,c}) (the official code's "prefix" block).
    suffix_mass : torch.Tensor of float64, shape (B, R, C)
        M - sum_{k<=c} m(t_{r,k}); at a candidate's last residue it is the water mass 18.0106
        Da when the candidate matches the precursor.
    """
    tm = masses.to(torch.float64)[tokens]
    return tm, precursor_mass.to(torch.float64)[:, None, None] - tm.cumsum(dim=-1)


class _RowAttention(nn.Module):
    def __init__(self, dim, heads, impl="sdpa"):
        super().__init__()
        self.heads, self.impl = heads, impl
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, row_mask, col_mask):
        b, r, c, d = x.shape
        q, k, v = self.qkv(x).view(b, r, c, 3, self.heads, d // self.heads).unbind(dim=3)
        fn = row_attention_sdpa if self.impl == "sdpa" else row_attention_einsum
        return self.out(fn(q, k, v, row_mask, col_mask).reshape(b, r, c, d))


class _DecoderLayer(nn.Module):
    def __init__(self, dim, heads, ff, dropout, use_col, row_impl):
        super().__init__()
        self.use_col = use_col
        self.ln_row = nn.LayerNorm(dim)
        self.row = _RowAttention(dim, heads, row_impl)
        if use_col:
            self.ln_col = nn.LayerNorm(dim)
            self.col = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.ln_cross = nn.LayerNorm(dim)
        self.cross = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.ln_ff = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff), nn.GELU(), nn.Linear(ff, dim))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, row_mask, col_mask, memory, mem_pad):
        b, r, c, d = x.shape
        x = x + self.drop(self.row(self.ln_row(x), row_mask, col_mask))
        if self.use_col:
            h = self.ln_col(x).transpose(1, 2).reshape(b * c, r, d)
            pad = (~row_mask)[:, None, :].expand(b, c, r).reshape(b * c, r)
            h, _ = self.col(h, h, h, key_padding_mask=pad, need_weights=False)
            x = x + self.drop(h.reshape(b, c, r, d).transpose(1, 2))
        h = self.ln_cross(x).reshape(b, r * c, d)
        h, _ = self.cross(h, memory, memory, key_padding_mask=mem_pad, need_weights=False)
        x = x + self.drop(h.reshape(b, r, c, d))
        return x + self.drop(self.ff(self.ln_ff(x)))


def _check_isotopes(isotope_errors) -> tuple[int, ...]:
    if isinstance(isotope_errors, str) or not isinstance(
        isotope_errors, tuple | list | range | torch.Tensor
    ):
        raise TypeError(
            f"`isotope_errors` must be a tuple of ints, got {type(isotope_errors).__name__}"
        )
    values = [int(v) if isinstance(v, torch.Tensor) else v for v in isotope_errors]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise TypeError(f"`isotope_errors` must hold ints, got {v!r}")
    if not values:
        raise ValueError("`isotope_errors` is empty: pass (0,) to allow no isotope error")
    return tuple(int(v) for v in values)


class RankNovo(nn.Module):
    """The RankNovo reranker.

    Parameters
    ----------
    dim : int, default=512
        Model width D (official config.yaml).
    heads : int, default=8
    ff : int, default=1024
        FFN width of encoder and decoder.
    enc_layers, dec_layers : int, default=8
    dropout : float, default=0.3
    max_len : int, default=100
        Longest candidate (tokens); ESM's learned positions.
    max_charge : int, default=10
    use_col : bool, default=True
        Column attention across candidates (the paper's ablation turns it off).
    vocab : Vocab, optional
        Default ``Vocab.massivekb()``.
    row_impl : {"sdpa", "einsum"}, default="sdpa"
        Implementation of the tied row attention (same maths).

    Raises
    ------
    ValueError
        If `dim` is not a multiple of 4·`heads` or another argument is out of range.
    """

    def __init__(
        self,
        dim: int = 512,
        heads: int = 8,
        ff: int = 1024,
        enc_layers: int = 8,
        dec_layers: int = 8,
        dropout: float = 0.3,
        max_len: int = 100,
        max_charge: int = 10,
        use_col: bool = True,
        vocab: Vocab | None = None,
        row_impl: str = "sdpa",
    ):
        super().__init__()
        for name, val in (("dim", dim), ("heads", heads), ("ff", ff), ("max_len", max_len)):
            check_scalar(val, name, kind=int, low=1)
        for name, val in (("enc_layers", enc_layers), ("dec_layers", dec_layers)):
            check_scalar(val, name, kind=int, low=0)
        check_scalar(max_charge, "max_charge", kind=int, low=1)
        check_scalar(dropout, "dropout", low=0, high=1, inclusive="left")
        if dim % 4 or dim % heads:
            raise ValueError(f"`dim`={dim} must be a multiple of 4 and of `heads`={heads}")
        if row_impl not in ("sdpa", "einsum"):
            raise ValueError(f"`row_impl` must be 'sdpa' or 'einsum', got {row_impl!r}")
        self.config = dict(
            dim=dim, heads=heads, ff=ff, enc_layers=enc_layers, dec_layers=dec_layers,
            dropout=dropout, max_len=max_len, max_charge=max_charge, use_col=use_col,
            legacy_nterm_mass=bool(vocab.legacy_nterm_mass) if vocab else False,
            row_impl=row_impl,
        )  # fmt: skip
        self.vocab = vocab if vocab is not None else Vocab.massivekb()
        self.dim, self.max_len, self.max_charge = dim, max_len, max_charge
        self.masses: torch.Tensor
        self.register_buffer(
            "masses",
            torch.as_tensor(self.vocab.masses.copy(), dtype=torch.float64),
            persistent=False,
        )
        # Spectrum encoder (Casanovo 5.2.1 / depthcharge SpectrumEncoder).
        self.peak_int = nn.Linear(1, dim, bias=False)
        self.latent = nn.Parameter(torch.randn(2) * 0.02)  # intensities of (0, I0), (M, I1)
        layer = nn.TransformerEncoderLayer(
            dim, heads, ff, dropout, activation="relu", batch_first=True, norm_first=False
        )
        self.encoder = nn.TransformerEncoder(layer, enc_layers, enable_nested_tensor=False)
        # Candidate embedding.
        v = len(self.vocab)
        self.aa_emb = nn.Embedding(v, dim // 2, padding_idx=self.vocab.pad_id)
        self.charge_emb = nn.Embedding(max_charge, dim // 2)
        self.pos_emb = nn.Embedding(
            max_len + 2 + self.vocab.pad_id, dim, padding_idx=self.vocab.pad_id
        )
        self.emb_ln = nn.LayerNorm(dim)
        self.emb_drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            _DecoderLayer(dim, heads, ff, dropout, use_col, row_impl) for _ in range(dec_layers)
        )
        self.final_ln = nn.LayerNorm(dim)
        self.pmd_head = nn.Linear(dim, 1)
        self.rmd_head = nn.Linear(dim, 1)

    # ---------------------------------------------------------------- checks
    def _check(self, spectra, precursors, tokens):
        check_tensor(spectra, "spectra", ndim=3, allow_empty=True)
        if spectra.shape[-1] != 2 or not spectra.is_floating_point():
            raise ValueError(
                f"`spectra` must be float (B, P, 2) [m/z, intensity], got {spectra.dtype} "
                f"{tuple(spectra.shape)}"
            )
        if not torch.isfinite(spectra).all():
            raise ValueError("`spectra` holds NaN or infinite peaks")
        check_tensor(precursors, "precursors", ndim=2)
        if precursors.shape[-1] != 3 or not precursors.is_floating_point():
            raise ValueError(
                f"`precursors` must be float (B, 3) [mass, charge, m/z], got {precursors.dtype} "
                f"{tuple(precursors.shape)}"
            )
        if precursors.dtype in (torch.float16, torch.bfloat16):
            raise ValueError(
                f"`precursors` must be float32 or float64, got {precursors.dtype}: half precision "
                "rounds a 2000 Da precursor mass by about 1 Da"
            )
        if tokens.dtype != torch.int64 or tokens.dim() != 3:
            raise ValueError(
                f"`tokens` must be int64 (B, R, C), got {tokens.dtype} {tuple(tokens.shape)}"
            )
        b = spectra.shape[0]
        if precursors.shape[0] != b or tokens.shape[0] != b:
            raise ValueError(
                f"`tokens` ({tokens.shape[0]}), `precursors` ({precursors.shape[0]}) and `spectra` "
                f"({b}) must have the same batch size"
            )
        if b == 0 or tokens.shape[1] == 0 or tokens.shape[2] == 0:
            raise ValueError("`tokens` is empty: every spectrum needs at least one candidate")
        if tokens.shape[2] > self.max_len + 1:
            raise ValueError(
                f"`tokens` has {tokens.shape[2] - 1} residue columns > max_len={self.max_len}"
            )
        if (tokens < 0).any() or (tokens >= len(self.vocab)).any():
            raise ValueError("`tokens` holds ids outside the vocabulary")
        if not torch.isfinite(precursors).all():
            raise ValueError("`precursors` holds NaN or infinity")
        z = precursors[:, 1]
        bad = (z < 1) | (z > self.max_charge) | (z != z.round())
        if bad.any():
            raise ValueError(
                f"`precursors` charge {float(z[bad][0]):g} must be an integer in "
                f"[1, max_charge={self.max_charge}]"
            )
        if (tokens[:, 0, 0] != self.vocab.cls_id).any():
            raise ValueError(
                "`tokens`: row 0 of every spectrum must be a real candidate starting with <cls> "
                "(an empty candidate list?)"
            )

    # ---------------------------------------------------------------- parts
    def encode_spectra(self, spectra: torch.Tensor, precursors: torch.Tensor):
        """Spectrum memory (B, P+2, D) and its key padding mask (B, P+2), True = padding.

        m/z values (the precursor mass of the latent peak included) go to the sinusoid in
        float64 and intensities to the model's dtype, whatever the dtype of `spectra`: float16
        peaks are widened, never the precursor mass narrowed.
        """
        b = spectra.shape[0]
        pad = (spectra[..., 0] + spectra[..., 1]) == 0
        first = torch.stack(
            [
                torch.zeros(b, dtype=torch.float64, device=spectra.device),
                precursors[:, 0].to(torch.float64),
            ],
            dim=1,
        )  # (B, 2) m/z of the two latent peaks
        mz = torch.cat([first, spectra[..., 0].to(torch.float64)], dim=1)
        wdtype = self.peak_int.weight.dtype
        inten = torch.cat([self.latent.expand(b, 2).to(wdtype), spectra[..., 1].to(wdtype)], dim=1)
        x = sinusoid(mz, self.dim) + self.peak_int(inten[..., None])
        pad = torch.cat([torch.zeros(b, 2, dtype=torch.bool, device=pad.device), pad], dim=1)
        return self.encoder(x, src_key_padding_mask=pad), pad

    def embed(self, tokens: torch.Tensor, precursors: torch.Tensor) -> torch.Tensor:
        """Candidate embedding (B, R, C, D) (module docstring), before the decoder."""
        d = self.dim
        b, _r, _c = tokens.shape
        mass = precursors[:, 0]
        tm, suffix = mass_inputs(tokens, mass, self.masses)
        x = torch.cat(
            [self.aa_emb(tokens), sinusoid(tm, d // 4), sinusoid(suffix, d - d // 2 - d // 4)],
            dim=-1,
        )
        z = precursors[:, 1].round().long() - 1
        head = sinusoid(mass, d // 2) + self.charge_emb(z)  # (B, D/2)
        zero = sinusoid(torch.zeros(1, device=tokens.device), d // 4)[0]
        zero2 = sinusoid(torch.zeros(1, device=tokens.device), d - d // 2 - d // 4)[0]
        col0 = torch.cat([head, zero.expand(b, -1), zero2.expand(b, -1)], dim=-1)
        x = x.clone()
        x[:, :, 0] = x[:, :, 0] + col0[:, None, :]
        nonpad = tokens.ne(self.vocab.pad_id)
        pos = torch.cumsum(nonpad, dim=-1) * nonpad + self.vocab.pad_id
        x = x + self.pos_emb(pos)
        return self.emb_drop(self.emb_ln(x))

    def forward(
        self, spectra: torch.Tensor, precursors: torch.Tensor, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Predict PMD and RMD of every candidate.

        Parameters
        ----------
        spectra : torch.Tensor of float, shape (B, P, 2)
            Preprocessed peaks [m/z (Th), intensity], zero rows as padding. Any float dtype;
            float16 / bfloat16 peaks are widened (m/z to float64, intensities to float32).
        precursors : torch.Tensor of float32 or float64, shape (B, 3)
            [neutral mass M (Da), charge z, m/z].
        tokens : torch.Tensor of int64, shape (B, R, C)
            Candidate blocks (:func:`ranknovo.data.collate`): ``<cls>`` + tokens + gaps, rows and
            columns past a spectrum's block filled with ``<pad>``.

        Returns
        -------
        pmd_pred : torch.Tensor of float32, shape (B, R)
            Predicted PMD (units of g); padded rows +inf.
        rmd_pred : torch.Tensor of float32, shape (B, R, C)
            Predicted RMD per token (column 0 is ``<cls>``).

        Raises
        ------
        ValueError
            On wrong shapes or dtypes (half-precision `precursors` included), NaN peaks, charges
            that are not integers in [1, max_charge], blocks wider than max_len, an empty
            candidate list or batch sizes that differ.
        """
        self._check(spectra, precursors, tokens)
        memory, mem_pad = self.encode_spectra(spectra, precursors)
        row_mask = tokens[:, :, 0].ne(self.vocab.pad_id)
        col_mask = tokens[:, 0, :].ne(self.vocab.pad_id)
        x = self.embed(tokens, precursors)
        for layer in self.layers:
            x = layer(x, row_mask, col_mask, memory, mem_pad)
        x = self.final_ln(x)
        pmd_pred = self.pmd_head(x[:, :, 0]).squeeze(-1)
        pmd_pred = pmd_pred.masked_fill(~row_mask, float("inf"))
        return pmd_pred, self.rmd_head(x).squeeze(-1)

    @torch.no_grad()
    def rerank(
        self,
        spectra: torch.Tensor,
        precursors: torch.Tensor,
        tokens: torch.Tensor,
        precursor_tol_ppm: float | None = None,
        isotope_errors: tuple[int, ...] = (0, 1),
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Select one candidate per spectrum: argmin of the predicted PMD (ties: the first).

        Parameters
        ----------
        spectra, precursors, tokens
            As in :meth:`forward`.
        precursor_tol_ppm : float, optional
            When given, candidates whose mass misses the precursor by more than this (for every
            isotope in `isotope_errors`) are skipped unless none passes (off by default,
            casanovo #479).
        isotope_errors : tuple of int, default=(0, 1)
            Isotope offsets (in units of 1.00335 Da) tried by the precursor filter; non-empty.

        Returns
        -------
        best : torch.Tensor of int64, shape (B,)
            Row index of the selected candidate.
        scores : torch.Tensor of float32, shape (B, R)
            Predicted PMD (+inf for padded rows).

        Raises
        ------
        TypeError
            If `isotope_errors` is not a sequence of ints.
        ValueError
            As :meth:`forward`; also on an empty `isotope_errors` or a negative
            `precursor_tol_ppm`.
        FloatingPointError
            If a real candidate's predicted PMD is NaN (e.g. intensities far from the
            preprocessed [0, 1] range: use :func:`ranknovo.preprocess`).
        """
        isotopes = _check_isotopes(isotope_errors)
        was = self.training
        self.eval()
        try:
            scores, _ = self(spectra, precursors, tokens)
        finally:
            self.train(was)
        if torch.isnan(scores).any():
            b = int(torch.isnan(scores).any(dim=1).nonzero()[0, 0])
            raise FloatingPointError(
                f"the predicted PMD of spectrum {b} is NaN: are `spectra` preprocessed "
                "(ranknovo.preprocess scales intensities to unit norm)?"
            )
        sel = scores
        if precursor_tol_ppm is not None:
            tol = float(check_scalar(precursor_tol_ppm, "precursor_tol_ppm", low=0))
            water = 18.0105646837
            cand = self.masses[tokens].sum(-1) + water  # (B, R) float64
            prec = precursors[:, 0].to(torch.float64)[:, None]
            ok = torch.zeros_like(cand, dtype=torch.bool)
            for iso in isotopes:
                ok |= ((prec - 1.00335 * iso - cand).abs() / cand * 1e6) <= tol
            ok &= torch.isfinite(scores)
            any_ok = ok.any(dim=1, keepdim=True)
            sel = torch.where(ok | ~any_ok, scores, torch.full_like(scores, float("inf")))
        return sel.argmin(dim=1), scores

    # ---------------------------------------------------------------- io
    def save(self, path) -> None:
        """Write config and weights to `path` (``torch.save``)."""
        torch.save({"config": self.config, "state_dict": self.state_dict()}, Path(path))

    @classmethod
    def load(cls, path, map_location="cpu") -> RankNovo:
        """Load a model written by :meth:`save` (or a ``fit`` checkpoint).

        Raises
        ------
        FileNotFoundError
            If `path` does not exist.
        ValueError
            If the file is not a model written by :meth:`save` or ``fit`` (another kind of
            file, no config, weights that do not match the config).
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"`path`: no model file at {str(path)!r}")
        not_model = f"`path`: {str(path)!r} is not a ranknovo model file"
        try:
            blob = torch.load(path, map_location=map_location, weights_only=True)
        except Exception as exc:  # pickle / zip / unpickler errors of a file of another kind
            raise ValueError(f"{not_model} ({type(exc).__name__}: {exc})") from None
        if not isinstance(blob, dict) or not isinstance(blob.get("config"), dict):
            raise ValueError(not_model)
        state = blob.get("state_dict", blob.get("model"))
        if not isinstance(state, dict):
            raise ValueError(f"{not_model}: it has no weights")
        cfg = dict(blob["config"])
        legacy = cfg.pop("legacy_nterm_mass", False)
        try:
            model = cls(**cfg, vocab=Vocab.massivekb(legacy_nterm_mass=legacy))
            model.load_state_dict(state)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{not_model} of this version: {str(exc).splitlines()[0]}") from None
        return model

    @classmethod
    def from_official_checkpoint(cls, path, **kwargs) -> RankNovo:
        """Best-effort load of an official RankNovo checkpoint (untested: unreachable here).

        Strips ``module.`` / ``model.`` prefixes and loads non-strictly; the official vocabulary
        carries the legacy N-terminal mass, so ``legacy_nterm_mass=True`` is used.

        Raises
        ------
        FileNotFoundError
            If `path` does not exist.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"`path`: no checkpoint at {str(path)!r}")
        blob = torch.load(path, map_location="cpu", weights_only=False)
        state = blob.get("state_dict", blob) if isinstance(blob, dict) else blob
        model = cls(vocab=Vocab.massivekb(legacy_nterm_mass=True), **kwargs)
        clean = {}
        for k, v in state.items():
            for pre in ("module.", "model."):
                if k.startswith(pre):
                    k = k[len(pre) :]
            clean[k] = v
        model.load_state_dict(clean, strict=False)
        return model
