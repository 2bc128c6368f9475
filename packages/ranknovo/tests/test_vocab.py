"""Spec test 4 (composite masses, aliases) and tokenizer bad input."""

import pytest
from pyteomics import mass as pm
from ranknovo.vocab import MOD_MASSES, Vocab


def test_composite_masses_are_sums_of_parts(vocab):
    std = pm.std_aa_mass
    assert vocab.masses[vocab.index["C+57.021"]] == pytest.approx(160.030649, abs=1e-6)
    assert vocab.masses[vocab.index["M+15.995"]] == pytest.approx(147.035400, abs=1e-6)
    assert vocab.masses[vocab.index["N+0.984"]] == pytest.approx(115.026943, abs=1e-6)
    assert vocab.masses[vocab.index["Q+0.984"]] == pytest.approx(std["Q"] + 0.984016, abs=1e-6)
    assert vocab.masses[vocab.index["+43.006-17.027"]] == pytest.approx(
        vocab.masses[vocab.index["+43.006"]] + vocab.masses[vocab.index["-17.027"]], abs=1e-6
    )
    assert vocab.masses[vocab.index["+43.006-17.027"]] == pytest.approx(25.979265, abs=1e-9)
    legacy = Vocab.massivekb(legacy_nterm_mass=True)
    assert legacy.masses[legacy.index["+43.006-17.027"]] == pytest.approx(25.980265, abs=1e-9)
    assert MOD_MASSES["Carbamidomethyl"] == pytest.approx(57.021464, abs=1e-6)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("C[Carbamidomethyl]", "C+57.021"),
        ("M[Oxidation]", "M+15.995"),
        ("N[Deamidated]", "N+0.984"),
        ("Q[Deamidated]", "Q+0.984"),
        ("[Acetyl]-PEP", "+42.011PEP"),
        ("[Carbamyl]-PEP", "+43.006PEP"),
        ("[Ammonia-loss]-PEP", "-17.027PEP"),
        ("[+25.980265]-PEP", "+43.006-17.027PEP"),
        ("[+25.979265]-PEP", "+43.006-17.027PEP"),
        ("C[+57.021]", "C+57.021"),
    ],
)
def test_aliases_share_one_id(vocab, a, b):
    assert vocab.encode(a).tolist() == vocab.encode(b).tolist()


def test_to_proforma_round_trips(vocab):
    toks = vocab.tokenize("+43.006-17.027PEPC+57.021M+15.995K")
    assert vocab.tokenize(vocab.to_proforma(toks)) == toks
    assert vocab.to_proforma(["C+57.021", "K"]) == "C[Carbamidomethyl]K"


def test_i_and_l_are_distinct_tokens(vocab):
    assert vocab.index["I"] != vocab.index["L"]


@pytest.mark.parametrize(
    ("pep", "match"),
    [
        ("PEPXK", r"unknown token 'X' in peptide 'PEPXK'"),
        ("PEP+42.011K", "not first"),
        ("+42.011+43.006K", "twice"),
        ("PEP[Acetyl]-K", "not first"),
        ("C[Oxidation]K", "unknown token"),
    ],
)
def test_tokenize_bad_input_names_token_and_peptide(vocab, pep, match):
    with pytest.raises(ValueError, match=match):
        vocab.tokenize(pep)


def test_encode_token_list_checks_placement(vocab):
    with pytest.raises(ValueError, match="not first"):
        vocab.encode(["P", "+42.011"])
    with pytest.raises(ValueError, match="unknown token"):
        vocab.encode(["P", "Z"])
    with pytest.raises(TypeError, match="peptide"):
        vocab.tokenize(5)
    with pytest.raises(TypeError, match="legacy_nterm_mass"):
        Vocab(legacy_nterm_mass="yes")
