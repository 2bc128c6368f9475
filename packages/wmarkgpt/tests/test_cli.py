"""The console script's own commands and their errors, and a tiny reproduce run. Help, version
and usage errors, the README's blocks and the bare import are checked by the shared contract
(icml25_core.testing)."""

import json

import numpy as np
import pytest
from PIL import Image
from wmarkgpt import reproduce
from wmarkgpt.cli import main


@pytest.fixture
def folders(tmp_path):
    rng = np.random.default_rng(0)
    covers, logos = tmp_path / "covers", tmp_path / "logos"
    covers.mkdir()
    logos.mkdir()
    for i in range(2):
        Image.fromarray(rng.integers(0, 256, (50, 60, 3), dtype=np.uint8)).save(
            covers / f"c{i}.png"
        )
    rgba = np.zeros((20, 30, 4), np.uint8)
    rgba[5:15, 5:25] = (255, 0, 0, 255)
    Image.fromarray(rgba).save(logos / "red.png")
    return covers, logos


def test_make_synthetic_then_eval(folders, tmp_path, run_main):
    covers, logos = folders
    out = tmp_path / "set"
    result = run_main(
        main,
        "make-synthetic",
        "--covers",
        covers,
        "--logos",
        logos,
        "--n",
        "4",
        "--size",
        "32",
        "--out",
        out,
        "--quiet",
    )
    assert result.code == 0, result.err
    index = json.loads((out / "index.json").read_text())
    assert len(index) == 4
    assert all((out / r["image"]).is_file() for r in index)
    gt = out / "index.json"
    ev = run_main(main, "eval", gt, gt)
    assert ev.code == 0, ev.err
    assert "1.0000" in ev.out  # answers scored against themselves


def test_eval_official_compat_prints_the_paper_numbers(run_main):
    result = run_main(main, "eval", "--official", "--compat", "wmarkgpt")
    assert result.code == 0, result.err
    assert "0.4242" in result.out
    assert "0.4180" in result.out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["make-synthetic", "--covers", "{missing}", "--out", "{out}"], "--covers"),
        (["make-synthetic", "--covers", "{empty}", "--out", "{out}"], "no image"),
        (
            ["make-synthetic", "--covers", "{covers}", "--logos", "{empty}", "--out", "{out}"],
            "--logos",
        ),
        (["make-synthetic", "--covers", "{covers}", "--n", "0", "--out", "{out}"], "`n`"),
        (["make-synthetic", "--covers", "{covers}", "--size", "4", "--out", "{out}"], "--size"),
        (["make-position", "--covers", "{covers}", "--out", "{out}", "--size", "32"], "objects"),
        (["eval"], "PRED and GT"),
        (["eval", "{missing}", "{missing}"], "not a file"),
    ],
)
def test_commands_refuse_bad_input(folders, tmp_path, run_main, argv, match):
    covers, _ = folders
    (tmp_path / "empty").mkdir()
    paths = {
        "missing": tmp_path / "missing",
        "out": tmp_path / "o",
        "covers": covers,
        "empty": tmp_path / "empty",
    }
    result = run_main(main, *[a.format(**paths) for a in argv])
    assert result.code == 2
    assert match.lower() in result.err.lower(), result.err
    assert "Traceback" not in result.err


def test_tiny_reproduce_writes_the_report(tmp_path):
    report = reproduce.run(out=tmp_path, progress=False, n_images=160, epochs=1, parts="AB")
    report.write(tmp_path)
    data = json.loads((tmp_path / "wmarkgpt.json").read_text())
    assert len(data["claims"]) == 5
    assert [c["verdict"] for c in data["claims"][:3]] == ["reproduced"] * 3
    assert (tmp_path / "wmarkgpt.png").stat().st_size > 0


def test_eval_official_refuses_files_and_eval_prints_n(tmp_path, run_main):
    result = run_main(main, "eval", "--official", "a.json", "b.json")
    assert result.code == 2
    assert "takes no PRED" in result.err
    gt = [
        {
            "image": "a.png",
            "visibility": "faint",
            "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "faint"}],
        }
    ]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    result = run_main(main, "eval", str(tmp_path / "gt.json"), str(tmp_path / "gt.json"))
    assert result.code == 0, result.err
    header, row = result.out.splitlines()[1:3]
    assert header.split()[1] == "n"
    assert row.split()[1] == "1"


def test_make_invisible_takes_gt_scores(tmp_path, run_main):
    pytest.importorskip("imwatermark")
    from skimage import data

    (tmp_path / "covers").mkdir()
    Image.fromarray(data.astronaut()[:256, :256]).save(tmp_path / "covers" / "astro.png")
    (tmp_path / "scores.json").write_text("[4.2]")
    args = ["make-invisible", "--covers", str(tmp_path / "covers"), "--n", "1", "--quiet"]
    args += ["--methods", "dwtDctSvd", "--out", str(tmp_path / "o")]
    result = run_main(main, *args, "--gt-scores", str(tmp_path / "scores.json"))
    assert result.code == 0, result.err
    (record,) = json.loads((tmp_path / "o" / "index.json").read_text())
    assert record["visibility"] == "invisible"
    assert record["conversations"][0]["from"] == "human"
    result = run_main(main, *args, "--gt-scores", str(tmp_path / "missing.json"))
    assert result.code == 2
    assert "--gt-scores" in result.err
