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


def _usage_error(args, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    return capsys.readouterr().err


def test_train_with_seed_is_reproducible_and_takes_the_documented_options(
    tmp_path, mgf_path, real_spectra, capsys
):
    _candidates(tmp_path / "c.tsv", real_spectra)
    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.pt"
        args = ["train", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv"), "-o",
                str(out), "--epochs", "1", "--dim", "32", "--layers", "1", "--heads", "4",
                "--seed", "7", "--lr", "1e-3", "--dropout", "0.1", "--ff", "48",
                "--default-charge", "2"]  # fmt: skip
        assert main(args) == 0
        outs.append(torch.load(out, weights_only=True))
    assert outs[0]["config"]["ff"] == 48
    assert outs[0]["config"]["dropout"] == 0.1
    for k, v in outs[0]["state_dict"].items():
        torch.testing.assert_close(outs[1]["state_dict"][k], v, atol=0, rtol=0)
    base = ["train", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv"), "-o", "x"]
    assert "--lr" in _usage_error([*base, "--lr", "0"], capsys)
    assert "--seed" in _usage_error([*base, "--seed", "-1"], capsys)
    assert "--dropout" in _usage_error([*base, "--dropout", "1"], capsys)


def test_train_resume_into_another_model_is_one_line(tmp_path, mgf_path, real_spectra, capsys):
    _candidates(tmp_path / "c.tsv", real_spectra)
    base = ["train", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv"), "-o",
            str(tmp_path / "m.pt"), "--epochs", "1", "--layers", "1", "--heads", "4",
            "--ckpt-dir", str(tmp_path / "ck")]  # fmt: skip
    assert main([*base, "--dim", "32"]) == 0
    err = _usage_error([*base, "--dim", "64"], capsys)
    assert "error: `ckpt_dir`:" in err
    assert "dim=32 (now 64)" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_rerank_precursor_filter_and_default_charge(tmp_path, mgf_path, real_spectra):
    torch.manual_seed(0)
    RankNovo(dim=32, heads=4, ff=64, enc_layers=1, dec_layers=1).save(tmp_path / "m.pt")
    _candidates(tmp_path / "c.tsv", real_spectra)
    out = tmp_path / "o.tsv"
    args = ["rerank", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv"),
            "--model", str(tmp_path / "m.pt"), "-o", str(out), "--precursor-tol-ppm", "20",
            "--default-charge", "2"]  # fmt: skip
    assert main(args) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()[1:]]
    assert [r[1] for r in rows] == ["truth"] * 6  # PEPTIDEK misses every precursor


def test_rerank_file_errors_are_one_line(tmp_path, mgf_path, real_spectra, capsys):
    torch.manual_seed(0)
    RankNovo(dim=32, heads=4, ff=64, enc_layers=1, dec_layers=1).save(tmp_path / "m.pt")
    _candidates(tmp_path / "c.tsv", real_spectra)
    base = ["rerank", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "c.tsv")]
    m = ["--model", str(tmp_path / "m.pt")]
    err = _usage_error([*base, "--model", str(tmp_path / "c.tsv"), "-o", "x.tsv"], capsys)
    assert "is not a ranknovo model file" in err
    err = _usage_error([*base, *m, "-o", str(tmp_path / "no" / "x.tsv")], capsys)
    assert "-o/--out: the folder" in err
    (tmp_path / "e.tsv").write_text("spectrum\tmodel\tpeptide\n")
    err = _usage_error(["rerank", "--mgf", str(mgf_path), "--candidates", str(tmp_path / "e.tsv"),
                        *m, "-o", str(tmp_path / "x.tsv")], capsys)  # fmt: skip
    assert "no candidate rows" in err
    (tmp_path / "u.mgf").write_text("BEGIN IONS\nPEPMASS=500\nCHARGE=2+\n100 1\n")
    out = ["-o", str(tmp_path / "x.tsv")]
    err = _usage_error(["rerank", "--mgf", str(tmp_path / "u.mgf"), "--candidates",
                        str(tmp_path / "c.tsv"), *m, *out], capsys)  # fmt: skip
    assert "u.mgf, spectrum 0: no END IONS" in err
    (tmp_path / "z.mgf").write_text("BEGIN IONS\nPEPMASS=500\nCHARGE=11+\n100 1\nEND IONS\n")
    (tmp_path / "z.tsv").write_text("spectrum\tmodel\tpeptide\n0\tx\tPEPTIDEK\n")
    err = _usage_error(["rerank", "--mgf", str(tmp_path / "z.mgf"), "--candidates",
                        str(tmp_path / "z.tsv"), *m, *out], capsys)  # fmt: skip
    assert "z.mgf, spectrum 0: charge 11 > the model's max_charge=10" in err


def test_report_comparisons_list_each_reference_once():
    rows = reproduce._comparisons("base 3", "majority vote")
    assert [ref for _, ref in rows] == ["base 3", "majority vote"]
    assert "strongest baseline" in rows[1][0]
    rows = reproduce._comparisons("base 3", "base 3")
    assert [ref for _, ref in rows] == ["base 3", "majority vote"]
    assert "strongest baseline" in rows[0][0]
