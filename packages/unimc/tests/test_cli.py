"""The console script's own commands and their errors, and a tiny reproduce run. Help, version,
usage errors, the README's blocks and the bare import are checked by the shared contract
(icml25_core.testing)."""

import json

import numpy as np
from unimc import reproduce
from unimc.cli import main

from icml25_core import data_path


def _files(tmp_path):
    gt = json.loads(data_path("unimc", "data", "fixtures.json").read_text())
    dets = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "keypoints": a["keypoints"],
            "score": 1.0,
        }
        for a in gt["annotations"]
    ]
    g, p = tmp_path / "gt.json", tmp_path / "pred.json"
    g.write_text(json.dumps(gt))
    p.write_text(json.dumps(dets))
    return g, p


def test_eval_pose_per_class_sigmas(tmp_path, run_main):
    g, p = _files(tmp_path)
    r = run_main(
        main, "eval-pose", "--gt", g, "--pred", p, "--sigmas", "1=coco17", "--sigmas", "2=ap10k17"
    )
    assert r.code == 0, r.err
    assert "category 1: AP=1.0000" in r.out
    assert "category 2: AP=1.0000" in r.out


def test_eval_pose_sigma_file_and_errors(tmp_path, run_main):
    g, p = _files(tmp_path)
    f = tmp_path / "s.json"
    f.write_text(json.dumps([0.05] * 17))
    r = run_main(
        main, "eval-pose", "--gt", g, "--pred", p, "--sigmas", f"1={f}", "--sigmas", f"2={f}"
    )
    assert r.code == 0, r.err
    # one set of sigmas for two classes is refused (never a silent COCO-17 default for animals)
    both = run_main(main, "eval-pose", "--gt", g, "--pred", p, "--sigmas", "coco17")
    assert both.code == 2
    assert "per category" in both.usage_error()
    bad = run_main(main, "eval-pose", "--gt", g, "--pred", p, "--sigmas", "horse")
    assert bad.code == 2
    assert "--sigmas" in bad.usage_error()
    short = tmp_path / "short.json"
    short.write_text(json.dumps([0.05] * 4))
    r = run_main(main, "eval-pose", "--gt", g, "--pred", p, "--sigmas", short)
    assert r.code == 2
    assert "sigmas" in r.usage_error()
    missing = run_main(
        main, "eval-pose", "--gt", tmp_path / "nope.json", "--pred", p, "--sigmas", "coco17"
    )
    assert missing.code == 2
    assert "--gt" in missing.usage_error()


def test_render_writes_one_png_per_image(tmp_path, run_main):
    g, _ = _files(tmp_path)
    out = tmp_path / "img"
    r = run_main(
        main, "render", g, "--out", out, "--skeleton", "1=coco17", "--skeleton", "2=ap10k17"
    )
    assert r.code == 0, r.err
    assert sorted(x.name for x in out.iterdir()) == ["astronaut.png", "chelsea.png"]
    bad = run_main(main, "render", g, "--out", out, "--skeleton", "1=horse")
    assert bad.code == 2
    assert "--skeleton" in bad.usage_error()


def test_tiny_reproduce_writes_report(tmp_path, monkeypatch):
    monkeypatch.setitem(reproduce.QUICK, "steps", 1)
    monkeypatch.setitem(reproduce.QUICK, "n_test", 4)
    monkeypatch.setitem(reproduce.QUICK, "batch", 2)
    monkeypatch.setitem(reproduce.QUICK, "sample_steps", 2)
    md, js = reproduce.main(tmp_path)
    data = json.loads(js.read_text())
    # the cat fixture labels only eyes and nose, where COCO-17 and AP-10K sigmas agree: the
    # note must not claim that the (equal) APs show that per-class sigmas matter
    text = md.read_text()
    assert "cannot show whether the per-class sigmas matter" in text
    assert "left_eye, right_eye, nose" in text
    assert "different keypoints: the per-class sigmas matter" not in text
    assert "Resumed run" not in text
    md2, _ = reproduce.main(tmp_path)  # every unit reused: the runtime says so
    assert "Resumed run" in md2.read_text()
    assert "A-seed0" in md2.read_text()
    assert len(data["claims"]) == 2
    assert data["claims"][1]["verdict"] == "reproduced"  # AP parity with raw pycocotools
    assert (tmp_path / "unimc_samples.png").exists()

    # an interrupted or repeated run resumes: finished (arm, seed) units are not retrained
    def no_training(*args, **kwargs):
        raise AssertionError("retrained a finished unit")

    monkeypatch.setattr(reproduce, "train_arm", no_training)
    _, js2 = reproduce.main(tmp_path)
    again = json.loads(js2.read_text())
    assert again["claims"][0]["measured_value"] == data["claims"][0]["measured_value"]


def test_scene_generator_overlaps_and_masks():
    from unimc.synth import make_scene

    rng = np.random.default_rng(0)
    scenes = [make_scene(rng, overlap_mixed=True) for _ in range(20)]
    assert sum(s.mixed_overlap for s in scenes) >= 10
    s = scenes[0]
    assert s.image.shape == (32, 32, 3)
    assert s.limb_masks.shape[0] == len(s.classes)
    assert (s.image[s.limb_masks.any(0)].max(-1) > 0).all()
    assert (s.keypoints[..., :2] >= 0).all()
    assert (s.keypoints[..., :2] <= 31).all()
