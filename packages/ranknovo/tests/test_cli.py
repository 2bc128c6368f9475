"""The console script on real files: pmd, rerank (with shards), eval, train, reproduce wiring.
Its help, version and usage errors are checked by the shared contract (icml25_core.testing)."""

import csv
import math

import pytest
import torch
from ranknovo import reproduce
from ranknovo.cli import main
from ranknovo.model import RankNovo


def _candidates(path, spectra):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t")
        w.writerow(["spectrum", "model", "peptide"])
        for i, s in enumerate(spectra[:6]):
            w.writerow([i, "truth", s.peptide])
            w.writerow([i, "other", "PEPTIDEK"])


def test_pmd_command_prints_spec_value(capsys):
    assert main(["pmd", "NGK", "GGGK"]) == 0
    assert "2.108854" in capsys.readouterr().out


def test_rerank_shards_and_eval(tmp_path, mgf_path, real_spectra, capsys):
    torch.manual_seed(0)
    model = RankNovo(dim=32, heads=4, ff=64, enc_layers=1, dec_layers=1)
    model.save(tmp_path / "m.pt")
    _candidates(tmp_path / "c.tsv", real_spectra)
    outs = []
    for i in range(2):
        out = tmp_path / f"out{i}.tsv"
        args = ["rerank", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv"),
                "--model", str(tmp_path / "m.pt"), "-o", str(out), "--shard", f"{i}/2"]  # fmt: skip
        assert main(args) == 0
        outs.append(out.read_text().splitlines()[1:])
    spectra = sorted(int(line.split("\t")[0]) for o in outs for line in o)
    assert spectra == list(range(6))
    assert main(["eval", "--pred", str(tmp_path / "out0.tsv"), "--mgf", str(mgf_path)]) == 0
    assert "peptide_recall" in capsys.readouterr().out


def test_train_command_writes_model(tmp_path, mgf_path, real_spectra):
    _candidates(tmp_path / "c.tsv", real_spectra)
    out = tmp_path / "m.pt"
    args = ["train", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv"), "-o",
            str(out), "--epochs", "1", "--dim", "32", "--layers", "1", "--heads", "4"]  # fmt: skip
    assert main(args) == 0
    assert RankNovo.load(out).config["dim"] == 32


def test_bad_arguments_are_usage_errors(tmp_path, mgf_path):
    with pytest.raises(SystemExit) as e:
        main(["rerank", "--mgf", str(mgf_path), "--candidates", str(mgf_path), "--model",
              str(mgf_path), "-o", "x", "--shard", "3/2"])  # fmt: skip
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["pmd", "PEPX", "K"])
    assert e.value.code == 2
    bad = tmp_path / "c.tsv"
    bad.write_text("spectrum\tpeptide\nabc\tK\n")
    with pytest.raises(SystemExit) as e:
        main(["eval", "--pred", str(bad), "--mgf", str(mgf_path)])
    assert e.value.code == 2


def test_reproduce_command_wires_run(monkeypatch, tmp_path):
    from icml25_core import Report

    monkeypatch.setattr(reproduce, "run", lambda full=False, out=None: Report("ranknovo", "t"))
    assert main(["reproduce", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "ranknovo.md").is_file()


def test_sign_test_matches_binomial_tail():
    assert reproduce._sign_test(0, 0) == 1.0
    assert reproduce._sign_test(3, 0) == pytest.approx(1 / 8)
    tail = sum(math.comb(10, k) for k in range(5, 11)) / 1024
    assert reproduce._sign_test(5, 5) == pytest.approx(tail)
