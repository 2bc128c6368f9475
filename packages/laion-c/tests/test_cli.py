"""The console script's own commands: distort, tiles, build and eval on real photos (the shared
contract checks help, version and usage errors)."""

import re

import numpy as np
import pytest
from laion_c import load_tiles
from laion_c.cli import main
from PIL import Image


def test_reproduce_help_lists_the_root(run_main):
    result = run_main(main, "reproduce", "--help")
    assert result.code == 0
    assert "--root" in result.out


def test_library_errors_print_one_line_and_exit_1(tmp_path, capsys):
    argv = ["build", str(tmp_path / "missing"), str(tmp_path / "out"), "--distortions", "glitched"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("laion-c build: error:")
    assert "missing" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["build", "a", "b", "--shard", "3/2"], ["eval", "r"]])
def test_bad_arguments_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_tiles_distort_build_eval(photos, tmp_path, capsys):
    src = tmp_path / "photos"
    (src / "cat").mkdir(parents=True)
    Image.fromarray(photos[0]).save(src / "cat" / "chelsea.png")
    Image.fromarray(photos[1]).save(src / "astronaut.png")
    assert main(["tiles", str(src), str(tmp_path / "t.npz"), "--crops-per-image", "5"]) == 0
    tiles = load_tiles(tmp_path / "t.npz")
    assert sorted(tiles) == [4, 6, 8, 16, 28]
    assert len(tiles[16]) == 12

    out = tmp_path / "x.png"
    args = ["distort", str(src / "cat" / "chelsea.png"), str(out), "--distortion", "mosaic"]
    assert main([*args, "--level", "2", "--tiles", str(tmp_path / "t.npz")]) == 0
    assert Image.open(out).size == (224, 224)

    data = tmp_path / "data"
    only_cat = tmp_path / "only_cat"
    (only_cat / "cat").mkdir(parents=True)
    Image.fromarray(photos[0]).save(only_cat / "cat" / "chelsea.png")
    argv = ["build", str(only_cat), str(data), "--distortions", "glitched", "--levels", "1"]
    assert main([*argv, "--seed", "1"]) == 0
    assert "1 written" in capsys.readouterr().out

    csv = tmp_path / "acc.csv"
    argv = ["eval", str(data), "--normalize", "imagenet", "--distortions", "glitched"]
    assert main([*argv, "--levels", "1", "--csv", str(csv)]) == 0
    text = csv.read_text().splitlines()
    assert text[0] == "model,augmentation,intensity_level,accuracy"
    assert text[1].startswith("efficientnet-lite0,glitched,1,")
    assert np.isfinite(float(text[1].split(",")[-1]))


@pytest.mark.parametrize(
    ("command", "defaults"),
    [
        ("build", ["processes (default: 1)", "(default: 0)", "(default: 0/1)"]),
        ("eval", ["(default: 32)", "(default: cpu)", "(default: efficientnet-lite0)"]),
        ("tiles", ["(default: 4 6 8 16 28", "(default: 0)"]),
        ("distort", ["(default: 0)"]),
    ],
)
def test_subcommand_help_shows_defaults(command, defaults, run_main):
    out = " ".join(run_main(main, command, "--help").out.split())
    for default in defaults:
        assert default in out


def test_eval_checks_the_csv_folder_before_scoring(tmp_path, capsys):
    argv = ["eval", str(tmp_path), "--normalize", "none", "--model", "no.such:model"]
    assert main([*argv, "--csv", str(tmp_path / "missing" / "acc.csv")]) == 1
    err = capsys.readouterr().err
    assert "--csv" in err
    assert len(err.strip().splitlines()) == 1


def test_eval_rejects_an_unusable_device_in_one_line(tmp_path, capsys):
    assert main(["eval", str(tmp_path), "--normalize", "none", "--device", "tpu9"]) == 1
    err = capsys.readouterr().err
    assert "device" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["distort", "eval"])
def test_an_unreadable_image_is_one_line_naming_the_file(command, tmp_path, capsys):
    if command == "distort":
        (tmp_path / "broken.jpg").write_bytes(b"not a jpeg")
        argv = ["distort", str(tmp_path / "broken.jpg"), str(tmp_path / "o.png")]
        argv += ["--distortion", "glitched", "--level", "1"]
    else:
        cell = tmp_path / "glitched" / "intensity_level_1" / "cat"
        cell.mkdir(parents=True)
        (cell / "broken.jpg").write_bytes(b"not a jpeg")
        argv = ["eval", str(tmp_path), "--normalize", "none", "--model", "torch.nn:Identity"]
        argv += ["--distortions", "glitched", "--levels", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"laion-c {command}: error:")
    assert "broken.jpg" in err


@pytest.mark.parametrize("command", ["distort", "tiles", "build"])
def test_a_negative_seed_names_the_option(command, capsys):
    argv = {
        "distort": ["distort", "a.jpg", "b.jpg", "--distortion", "glitched", "--level", "1"],
        "tiles": ["tiles", "src", "t.npz"],
        "build": ["build", "src", "out"],
    }[command]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--seed", "-3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --seed: must be an int >= 0, got -3" in err
    assert "rng" not in err


@pytest.mark.parametrize(
    "value", ["1,2:3", "imagnet", "0.5,0.5,0.5", "a,b,c:1,1,1", "0,0,0:1,0,1", "0,0,0:1,1,nan"]
)
def test_a_malformed_normalize_says_what_it_expects(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "root", "--normalize", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --normalize: expects imagenet, none or m1,m2,m3:s1,s2,s3" in err
    assert repr(value) in err


def test_eval_prints_intervals_and_the_published_rows(tmp_path, capsys, monkeypatch):
    (tmp_path / "uniform_model.py").write_text(
        "import torch\n\n\ndef make():\n"
        "    return lambda x: torch.full((len(x), 1000), 1 / 1000)  # probabilities\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cell = tmp_path / "data" / "glitched" / "intensity_level_1" / "cat"
    cell.mkdir(parents=True)
    Image.fromarray(np.full((40, 40, 3), 200, np.uint8)).save(cell / "a.png")
    argv = ["eval", str(tmp_path / "data"), "--normalize", "none", "--outputs", "probs"]
    argv += ["--model", "uniform_model:make", "--distortions", "glitched", "--levels", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # all superclass scores tie -> fish (the first): 0 of 1 right; Wilson upper z^2 / (1 + z^2)
    z2 = 1.959963984540054**2
    assert f"| glitched | 0.0 [0.0, {100 * z2 / (1 + z2):.1f}] |" in out
    assert "| Best Human Observer | human | 55.2 |" in out


def test_eval_refuses_a_csv_that_is_a_directory_before_scoring(tmp_path, capsys):
    """Issue 34.12: checked before the model is even loaded (the model spec does not exist)."""
    argv = ["eval", str(tmp_path), "--normalize", "none", "--model", "no.such:model"]
    assert main([*argv, "--csv", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "--csv" in err
    assert "is a directory" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("laion_c_no_such_module:probs", "no module named 'laion_c_no_such_module'.*PYTHONPATH=."),
        ("laion_c.models:nothere", "module 'laion_c.models' has no factory 'nothere'"),
        ("laion_c.models:IMAGENET_MEAN_NOT_THERE", "no factory"),
        ("nocolon", "'efficientnet-lite0' or 'module:factory'"),
    ],
)
def test_eval_model_errors_are_one_line_naming_the_option(spec, match, tmp_path, capsys):
    """Issue 34.5: a missing module or factory is one line starting with --model."""
    assert main(["eval", str(tmp_path), "--normalize", "none", "--model", spec]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert re.search(f"error: --model .*{match}", err), err


def test_a_truncated_tile_photo_is_named(photos, tmp_path, capsys):
    """Issue 34.6: ``build_tiles`` / ``laion-c tiles`` name the truncated file."""
    from laion_c import build_tiles

    good = tmp_path / "src" / "good.jpg"
    good.parent.mkdir()
    Image.fromarray(photos[0]).save(good)
    bad = tmp_path / "src" / "trunc.jpg"
    bad.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(ValueError, match=r"`images`: .*trunc\.jpg"):
        build_tiles([good, bad], sizes=[4])
    assert main(["tiles", str(tmp_path / "src"), str(tmp_path / "t.npz")]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1
    assert errors[0].startswith("laion-c tiles: error:")
    assert "trunc.jpg" in errors[0]  # (the progress bar's lines come before it)
