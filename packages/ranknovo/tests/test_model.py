"""Spec tests 7-8 and the model's bad input: permutation equivariance, the embedding against a
loop version of the official code, the suffix-mass input on the 128 real spectra."""

import math

import numpy as np
import pytest
import torch
from ranknovo.data import CandidateSet, collate, preprocess
from ranknovo.model import RankNovo, mass_inputs, sinusoid

TINY = dict(dim=32, heads=4, ff=64, enc_layers=1, dec_layers=2, dropout=0.1)


@pytest.fixture(scope="module")
def batch(real_spectra):
    s = real_spectra[:4]
    cands = [[x.peptide, "PEPTIDEK", "NGKSAK", "GGGK"][: 1 + i] for i, x in enumerate(s)]
    ds = CandidateSet([preprocess(x) for x in s], [[x.precursor_mz, x.charge] for x in s], cands)
    return collate([ds[i] for i in range(4)])


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return RankNovo(**TINY).eval()


def test_row_permutation_permutes_pmd_and_keeps_selection(model, batch):
    pmd, _ = model(batch["spectra"], batch["precursors"], batch["tokens"])
    best, _ = model.rerank(batch["spectra"], batch["precursors"], batch["tokens"])
    perm = torch.tensor([2, 0, 3, 1])  # spectrum 3 has 4 real candidates
    tok = batch["tokens"].clone()
    tok[3] = tok[3, perm]
    pmd2, _ = model(batch["spectra"], batch["precursors"], tok)
    torch.testing.assert_close(pmd2[3], pmd[3, perm], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(pmd2[:3], pmd[:3], atol=1e-5, rtol=1e-5, equal_nan=True)
    best2, _ = model.rerank(batch["spectra"], batch["precursors"], tok)
    assert perm[best2[3]] == best[3]


def test_output_of_a_spectrum_does_not_depend_on_batch_padding(model, batch):
    pmd, _ = model(batch["spectra"], batch["precursors"], batch["tokens"])
    s0 = {k: v[:1] for k, v in batch.items()}
    r = int(s0["row_mask"].sum())
    c = int((s0["tokens"][0, 0] != model.vocab.pad_id).sum())
    p = int((s0["spectra"][0].sum(-1) != 0).sum())
    alone, _ = model(s0["spectra"][:, :p], s0["precursors"], s0["tokens"][:, :r, :c])
    torch.testing.assert_close(alone[0], pmd[0, :r], atol=1e-5, rtol=1e-5)


def _loop_embedding(model, tokens, precursors):
    """The official per-element loop (msa embedding): one (row, column) at a time."""
    d = model.dim
    b, r, c = tokens.shape
    out = torch.zeros(b, r, c, d)
    masses = model.vocab.masses
    for i in range(b):
        mass = float(precursors[i, 0])
        z = int(precursors[i, 1])
        for j in range(r):
            pos = 0
            rest = mass
            for k in range(c):
                t = int(tokens[i, j, k])
                m = float(masses[t])
                rest -= m
                e = torch.cat([
                    model.aa_emb.weight[t] if t != model.vocab.pad_id else torch.zeros(d // 2),
                    sinusoid(torch.tensor(m, dtype=torch.float64), d // 4),
                    sinusoid(torch.tensor(rest, dtype=torch.float64), d - d // 2 - d // 4),
                ])  # fmt: skip
                if k == 0:
                    e = e + torch.cat([
                        sinusoid(torch.tensor(mass, dtype=torch.float64), d // 2)
                        + model.charge_emb.weight[z - 1],
                        sinusoid(torch.tensor(0.0), d // 4),
                        sinusoid(torch.tensor(0.0), d - d // 2 - d // 4),
                    ])  # fmt: skip
                if t != model.vocab.pad_id:
                    pos += 1
                    e = e + model.pos_emb.weight[pos + model.vocab.pad_id]
                out[i, j, k] = e
    return torch.nn.functional.layer_norm(
        out, (d,), model.emb_ln.weight, model.emb_ln.bias, model.emb_ln.eps
    )


def test_vectorised_embedding_equals_loop_version(model, batch):
    with torch.no_grad():
        fast = model.embed(batch["tokens"], batch["precursors"])
        slow = _loop_embedding(model, batch["tokens"], batch["precursors"])
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)


def test_suffix_mass_at_last_residue_is_water_for_128_real_spectra(real_spectra, vocab):
    for s in real_spectra:
        ids = torch.as_tensor(vocab.encode(s.peptide))[None, None]
        _, suffix = mass_inputs(
            ids, torch.tensor([s.precursor_mass]), torch.as_tensor(vocab.masses.copy())
        )
        assert abs(float(suffix[0, 0, -1]) - 18.0106) < 0.02


def test_sinusoid_matches_casanovo_mass_encoder_formula():
    x = torch.tensor([123.456], dtype=torch.float64)
    enc = sinusoid(x, 6)
    lam = [0.001 / (2 * math.pi) * (1e7) ** (i / 2) for i in range(3)]
    want = [math.sin(123.456 / v) for v in lam] + [math.cos(123.456 / v) for v in lam]
    np.testing.assert_allclose(enc[0].numpy(), want, atol=1e-6)


def test_precursor_filter_skips_mismatched_candidates(model, batch):
    best, _ = model.rerank(batch["spectra"], batch["precursors"], batch["tokens"],
                           precursor_tol_ppm=20)  # fmt: skip
    assert best[3] == 0  # only the true peptide matches its precursor


def test_save_load_round_trip(model, batch, tmp_path):
    model.save(tmp_path / "m.pt")
    again = RankNovo.load(tmp_path / "m.pt").eval()
    a, _ = model(batch["spectra"], batch["precursors"], batch["tokens"])
    b, _ = again(batch["spectra"], batch["precursors"], batch["tokens"])
    torch.testing.assert_close(a, b)


def test_model_bad_input(model, batch):
    s, p, t = batch["spectra"], batch["precursors"], batch["tokens"]
    bad_p = p.clone()
    bad_p[0, 1] = 11
    with pytest.raises(ValueError, match="charge"):
        model(s, bad_p, t)
    bad_s = s.clone()
    bad_s[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="spectra"):
        model(bad_s, p, t)
    with pytest.raises(ValueError, match="batch size"):
        model(s, p[:2], t)
    with pytest.raises(ValueError, match="tokens"):
        model(s, p, t.float())
    with pytest.raises(ValueError, match="empty"):
        model(s, p, t[:, :0])
    with pytest.raises(ValueError, match="max_len"):
        RankNovo(**{**TINY, "max_len": 5})(s, p, t)
    with pytest.raises(ValueError, match="precursors"):
        model(s, p[:, :2], t)
    empty_row = t.clone()
    empty_row[0] = model.vocab.pad_id
    with pytest.raises(ValueError, match="empty candidate"):
        model(s, p, empty_row)
    with pytest.raises(ValueError, match="dim"):
        RankNovo(dim=30, heads=4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible")
def test_runs_on_cuda(model, batch):
    m = RankNovo(**TINY).cuda().eval()
    out, _ = m(*(batch[k].cuda() for k in ("spectra", "precursors", "tokens")))
    assert out.device.type == "cuda"
