"""Peptide vocabulary of RankNovo: tokens, ids and residue masses.

Follows the official ``msa/tokenizer.py`` (BEAM-Labs/denovo ``RankNovo/``): four special tokens,
the 20 amino acids (I and L distinct), four modified residues, four N-terminal modifications
(their own tokens, always at position 0) and the gap ``-`` that right-pads a spectrum's shorter
candidates. MassIVE-KB spellings (``C+57.021``, ``+42.011``) are the canonical tokens; ProForma
spellings (``C[Carbamidomethyl]``, ``[Acetyl]-``, ``[+25.980265]-``) are aliases of the same id.
Masses are monoisotopic residue masses from :data:`pyteomics.mass.std_aa_mass` plus fixed
modification masses (Unimod values, not looked up at run time).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pyteomics import mass as _pmass

__all__ = ["Vocab", "MOD_MASSES", "NTERM_MASS_CORRECT", "NTERM_MASS_LEGACY"]

#: Fixed Unimod monoisotopic modification masses (Da).
MOD_MASSES = {
    "Carbamidomethyl": 57.021464,
    "Oxidation": 15.994915,
    "Deamidated": 0.984016,
    "Acetyl": 42.010565,
    "Carbamyl": 43.005814,
    "Ammonia-loss": -17.026549,
}
#: +43.006-17.027 (carbamylation plus ammonia loss): 43.005814 - 17.026549.
NTERM_MASS_CORRECT = 25.979265
#: The official code's and casanovo 5.2.1's value, 0.001 Da too heavy (casanovo PR #675).
NTERM_MASS_LEGACY = 25.980265

SPECIALS = ("<cls>", "<pad>", "<eos>", "<unk>")
AMINO_ACIDS = tuple("GASPVTCLINDQKEMHFRYW")
_RESIDUE_MODS = {  # canonical token -> (residue, Unimod name)
    "C+57.021": ("C", "Carbamidomethyl"),
    "M+15.995": ("M", "Oxidation"),
    "N+0.984": ("N", "Deamidated"),
    "Q+0.984": ("Q", "Deamidated"),
}
NTERM_MODS = ("+42.011", "+43.006", "-17.027", "+43.006-17.027")
_NTERM_NAMES = {
    "+42.011": "Acetyl",
    "+43.006": "Carbamyl",
    "-17.027": "Ammonia-loss",
    "+43.006-17.027": None,
}
GAP = "-"

_NUM = r"[+-]\d+(?:\.\d*)?"
# N-terminal forms: ProForma "[...]-" or MassIVE-KB "+43.006-17.027" etc.
_NTERM_RE = re.compile(r"\[([^\]]+)\]-|(\+43\.006-17\.027|\+43\.006|\+42\.011|-17\.027)")
_RES_RE = re.compile(r"([A-Z])(\[[^\]]+\]|" + _NUM + r")?")


class Vocab:
    """Token vocabulary with monoisotopic masses (float64, Da).

    Parameters
    ----------
    legacy_nterm_mass : bool, default=False
        Give ``+43.006-17.027`` the official code's 25.980265 Da instead of the correct
        25.979265 Da (DECISIONS 7: paper/clean rule by default, official value behind a flag).

    Attributes
    ----------
    tokens : tuple of str
        Canonical tokens; the id of a token is its position.
    masses : numpy.ndarray of float64, shape (V,)
        Residue (or modification) mass of each id in Da; 0 for special tokens and the gap.
    cls_id, pad_id, eos_id, unk_id, gap_id : int
        Ids of the special tokens and of the gap.
    """

    def __init__(self, legacy_nterm_mass: bool = False):
        if not isinstance(legacy_nterm_mass, bool):
            raise TypeError(
                f"`legacy_nterm_mass` must be a bool, got {type(legacy_nterm_mass).__name__}"
            )
        self.legacy_nterm_mass = legacy_nterm_mass
        self.tokens: tuple[str, ...] = (
            SPECIALS + AMINO_ACIDS + tuple(_RESIDUE_MODS) + NTERM_MODS + (GAP,)
        )
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}
        std = _pmass.std_aa_mass
        masses = np.zeros(len(self.tokens), dtype=np.float64)
        for aa in AMINO_ACIDS:
            masses[self.index[aa]] = std[aa]
        for tok, (res, name) in _RESIDUE_MODS.items():
            masses[self.index[tok]] = std[res] + MOD_MASSES[name]
        masses[self.index["+42.011"]] = MOD_MASSES["Acetyl"]
        masses[self.index["+43.006"]] = MOD_MASSES["Carbamyl"]
        masses[self.index["-17.027"]] = MOD_MASSES["Ammonia-loss"]
        masses[self.index["+43.006-17.027"]] = (
            NTERM_MASS_LEGACY if legacy_nterm_mass else NTERM_MASS_CORRECT
        )
        masses.setflags(write=False)
        self.masses = masses
        self.cls_id = self.index["<cls>"]
        self.pad_id = self.index["<pad>"]
        self.eos_id = self.index["<eos>"]
        self.unk_id = self.index["<unk>"]
        self.gap_id = self.index[GAP]

    @classmethod
    def massivekb(cls, legacy_nterm_mass: bool = False) -> Vocab:
        """The MassIVE-KB vocabulary of RankNovo (``msa/tokenizer.py``).

        Parameters
        ----------
        legacy_nterm_mass : bool, default=False
            See :class:`Vocab`.

        Returns
        -------
        Vocab
        """
        return cls(legacy_nterm_mass=legacy_nterm_mass)

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"Vocab.massivekb(legacy_nterm_mass={self.legacy_nterm_mass})"

    def is_nterm(self, token: str) -> bool:
        """Whether `token` is an N-terminal modification token."""
        return token in NTERM_MODS

    def mass_dict(self) -> dict[str, float]:
        """Token -> mass (Da) of every residue and N-terminal token (:mod:`ranknovo.metrics`)."""
        return {
            t: float(m)
            for t, m in zip(self.tokens, self.masses, strict=True)
            if t not in SPECIALS and t != GAP
        }

    # ------------------------------------------------------------------ parsing
    def _nterm_token(self, body: str, peptide: str) -> str:
        named = {v: k for k, v in _NTERM_NAMES.items() if v is not None}
        if body in named:
            return named[body]
        if body in NTERM_MODS:
            return body
        if body.replace("+", "").replace("-", "").replace(".", "").isdigit() or re.fullmatch(
            _NUM + "(" + _NUM + ")?", body
        ):
            try:
                value = sum(float(x) for x in re.findall(_NUM, body))
            except ValueError:  # pragma: no cover - the regex only yields numbers
                value = float("nan")
            best = min(NTERM_MODS, key=lambda t: abs(self.masses[self.index[t]] - value))
            tol = 0.0015 if best == "+43.006-17.027" else 0.01
            if abs(self.masses[self.index[best]] - value) <= tol or (
                best == "+43.006-17.027" and abs(value - NTERM_MASS_LEGACY) <= 1e-4
            ):
                return best
        raise ValueError(f"unknown token '[{body}]-' in peptide {peptide!r}")

    def _residue_token(self, res: str, mod: str | None, peptide: str) -> str:
        if mod is None:
            if res in self.index:
                return res
            raise ValueError(f"unknown token {res!r} in peptide {peptide!r}")
        body = mod[1:-1] if mod.startswith("[") else mod
        for tok, (r, name) in _RESIDUE_MODS.items():
            if r != res:
                continue
            if body == name or tok == res + body:
                return tok
            if re.fullmatch(_NUM, body) and abs(float(body) - MOD_MASSES[name]) <= 0.01:
                return tok
        if body in NTERM_MODS or body in {"Acetyl", "Carbamyl", "Ammonia-loss"}:
            raise ValueError(
                f"N-terminal modification {body!r} not first in peptide {peptide!r}: "
                "an N-terminal modification may only start the peptide, once"
            )
        raise ValueError(f"unknown token {res + mod!r} in peptide {peptide!r}")

    def tokenize(self, peptide: str) -> list[str]:
        """Split a peptide string into canonical tokens.

        Parameters
        ----------
        peptide : str
            MassIVE-KB (``+43.006-17.027PEPC+57.021K``) or ProForma
            (``[Carbamyl]-PEPC[Carbamidomethyl]K``, ``[+25.980265]-PEPK``) spelling.

        Returns
        -------
        list of str
            Canonical tokens, an N-terminal modification first when present.

        Raises
        ------
        TypeError
            If `peptide` is not a str.
        ValueError
            On an unknown token (the message names it and the peptide) or an N-terminal
            modification that is not first or appears twice.
        """
        if not isinstance(peptide, str):
            raise TypeError(f"`peptide` must be a str, got {type(peptide).__name__}")
        text = peptide.strip()
        toks: list[str] = []
        pos = 0
        m = _NTERM_RE.match(text, pos)
        if m:
            toks.append(self._nterm_token(m.group(1) or m.group(2), peptide))
            pos = m.end()
        while pos < len(text):
            n = _NTERM_RE.match(text, pos)
            if n:
                where = "twice" if toks and self.is_nterm(toks[0]) else "not first"
                raise ValueError(
                    f"N-terminal modification {n.group(0)!r} {where} in peptide {peptide!r}: "
                    "an N-terminal modification may only start the peptide, once"
                )
            r = _RES_RE.match(text, pos)
            if not r:
                raise ValueError(f"unknown token {text[pos]!r} in peptide {peptide!r}")
            toks.append(self._residue_token(r.group(1), r.group(2), peptide))
            pos = r.end()
        return toks

    def check_tokens(self, tokens: Sequence[str], name: str = "tokens") -> list[str]:
        """Validate a token list (known tokens, N-terminal modification first and once).

        Raises
        ------
        TypeError
            If `tokens` is neither a str nor a sequence (e.g. None), naming `name`.
        ValueError
            Naming `name`, the token and the peptide.
        """
        if isinstance(tokens, str):
            return self.tokenize(tokens)
        if not isinstance(tokens, Sequence | np.ndarray):
            raise TypeError(
                f"`{name}` must be a peptide string or a token list, got {type(tokens).__name__}"
            )
        toks = list(tokens)
        joined = "".join(str(t) for t in toks)
        for i, t in enumerate(toks):
            if t not in self.index or t in SPECIALS or t == GAP:
                raise ValueError(f"`{name}`: unknown token {t!r} in peptide {joined!r}")
            if self.is_nterm(t) and i != 0:
                raise ValueError(
                    f"`{name}`: N-terminal modification {t!r} not first in peptide {joined!r}"
                )
        return toks

    def encode(self, tokens: Sequence[str] | str) -> np.ndarray:
        """Ids of `tokens` (a token list or a peptide string), int64 (L,).

        Raises
        ------
        ValueError
            On an unknown token or a misplaced N-terminal modification.
        """
        toks = self.check_tokens(tokens)
        return np.array([self.index[t] for t in toks], dtype=np.int64)

    def decode(self, ids: Sequence[int] | np.ndarray) -> list[str]:
        """Tokens of residue ids (special tokens and gaps are dropped)."""
        out = []
        for i in np.asarray(ids, dtype=np.int64).ravel():
            if i < 0 or i >= len(self.tokens):
                raise ValueError(f"`ids`: id {int(i)} outside the vocabulary of {len(self)}")
            t = self.tokens[int(i)]
            if t not in SPECIALS and t != GAP:
                out.append(t)
        return out

    def to_proforma(self, tokens: Sequence[str] | str) -> str:
        """ProForma spelling of a peptide (``[Acetyl]-PEPC[Carbamidomethyl]K``).

        ``+43.006-17.027`` is written as a mass, ``[+25.979265]-`` (``[+25.980265]-`` with
        ``legacy_nterm_mass=True``).
        """
        out = []
        for t in self.check_tokens(tokens):
            if self.is_nterm(t):
                name = _NTERM_NAMES[t]
                out.append(f"[{name}]-" if name else f"[+{self.masses[self.index[t]]:.6f}]-")
            elif t in _RESIDUE_MODS:
                res, name = _RESIDUE_MODS[t]
                out.append(f"{res}[{name}]")
            else:
                out.append(t)
        return "".join(out)

    def to_massivekb(self, tokens: Sequence[str] | str) -> str:
        """MassIVE-KB spelling (the canonical tokens joined)."""
        return "".join(self.check_tokens(tokens))

    def peptide_mass(self, tokens: Sequence[str] | str) -> float:
        """Neutral monoisotopic peptide mass (Da): residues + N-terminal mod + H2O."""
        ids = self.encode(tokens)
        return float(self.masses[ids].sum() + _pmass.calculate_mass(formula="H2O"))
