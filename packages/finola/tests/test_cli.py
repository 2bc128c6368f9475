"""The console script's commands on real photos (train, analyze, reconstruct), their errors,
and a tiny reproduce run. Help, version and usage errors, the README's blocks and the bare import
are checked by the shared contract (icml25_core.testing)."""

import json

import pytest
from finola import reproduce
from finola.cli import main

OPENCV_JPG = "/usr/share/doc/opencv-doc/examples/data/baboon.jpg"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    out = folder / "ae.pt"
    code = main(["train", "--images", "sklearn", "--patches", "128", "--steps", "5",
                 "--channels", "16", "--out", str(out)])  # fmt: skip
    assert code == 0
    return out


def test_train_analyze_reconstruct(trained, run_main, tmp_path):
    assert (trained.parent / "ae.pt.train").exists()  # the resumable checkpoint
    for model_file in (trained, trained.parent / "ae.pt.train"):  # also fit's checkpoints
        analysis = run_main(main, "analyze", model_file)
        assert analysis.code == 0, analysis.err
        assert "cond(A)" in analysis.out
    from PIL import Image
    from skimage import data

    photo = tmp_path / "coffee.png"
    Image.fromarray(data.coffee()).save(photo)
    result = run_main(main, "reconstruct", trained, photo, tmp_path / "out.png")
    assert result.code == 0, result.err
    assert "PSNR" in result.out
    assert Image.open(tmp_path / "out.png").size == (600 // 32 * 32, 400 // 32 * 32)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["analyze", "{missing}"], "not a finola model file"),
        (["analyze", "{text}"], "not a finola model file"),
        (["train", "--out", "{folder}"], "must be a file in an existing folder"),
        (["reconstruct", "{model}", "{missing}", "{out}"], "is not a file"),
        (["train", "--images", "{missing}", "--out", "{out}"], "`--images`"),
        (["train", "--steps", "0", "--out", "{out}"], "steps"),
        (["train", "--grid", "3", "--out", "{out}"], "power of two"),
        (["train", "--out", "{missing}/ae.pt"], "existing folder"),
    ],
)
def test_commands_refuse_bad_input(trained, run_main, tmp_path, argv, match):
    (tmp_path / "text.pt").write_text("not a model")
    paths = {"missing": tmp_path / "missing", "text": tmp_path / "text.pt", "model": trained,
             "out": tmp_path / "o.png", "folder": tmp_path}  # fmt: skip
    result = run_main(main, *[a.format(**paths) for a in argv])
    assert result.code == 2
    assert any(m.lower() in result.err.lower() for m in match.split("|")), result.err
    assert "Traceback" not in result.err


def test_tiny_reproduce_writes_the_report(tmp_path):
    settings = reproduce.Settings(steps=3, train_patches=64, test_patches=32)
    report = reproduce.run(out=tmp_path, settings=settings)
    report.write(tmp_path)
    data = json.loads((tmp_path / "finola.json").read_text())
    assert len(data["claims"]) == 4
    assert (tmp_path / "finola.png").stat().st_size > 0
