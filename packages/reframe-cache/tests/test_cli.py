"""The console script's own commands and their errors (help, version and usage errors come from
the shared contract of icml25_core.testing); the reproduce at a tiny size."""

import json

import pytest
from _rc_helpers import hand_unet_flops
from reframe_cache import reproduce
from reframe_cache.cli import main
from reframe_cache.data import opencv_sample


def _vtest():
    try:
        return opencv_sample("vtest.avi")
    except FileNotFoundError as err:
        pytest.skip(str(err))


def test_flops_command_prints_exact_counts(run_main):
    result = run_main(main, "flops", "--size", "16x24", "--widths", "4,8,8,8")
    full, hit = hand_unet_flops((4, 8, 8, 8), 3, 3, 16, 24)
    assert result.code == 0
    assert f"F_full = {full}" in result.out
    assert f"F_hit  = {hit}" in result.out


def test_bench_command_on_a_video(run_main, tmp_path):
    out = tmp_path / "r.json"
    result = run_main(
        main,
        "bench",
        "--video",
        str(_vtest()),
        "--frames",
        "5",
        "--size",
        "16x16",
        "--widths",
        "4,8,8,8",
        "--policy",
        "N-2",
        "--repeats",
        "1",
        "--train-iters",
        "2",
        "--json",
        str(out),
    )
    assert result.code == 0, result.err
    assert "skip rate 0.400" in result.out
    assert json.loads(out.read_text())["skipped"] == 2


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["flops", "--size", "9x9"], "multiples of 8"),
        (["flops", "--widths", "1,2"], "4 positive ints"),
        (["bench", "--video", "x.avi", "--policy", "often"], "not understood"),
        (["bench", "--video", "x.avi", "--frames", "0"], "--frames"),
    ],
)
def test_usage_errors(run_main, args, match):
    result = run_main(main, *args)
    assert result.code == 2
    assert match in result.err


def test_bench_missing_video_is_a_one_line_error(run_main, tmp_path):
    result = run_main(main, "bench", "--video", str(tmp_path / "none.avi"))
    assert result.code == 2
    assert "does not exist" in result.err


@pytest.mark.slow
def test_reproduce_runs_end_to_end_at_a_tiny_size(tmp_path):
    _vtest()
    report = reproduce.run(out=tmp_path, train_iters=3, eval_frames=8, timing_repeats=1)
    claims = {c.claim[:3]: c for c in report.claims}
    assert set(claims) == {f"({x})" for x in "abcdefg"}
    assert claims["(a)"].verdict == "reproduced"  # exact FLOP count, independent of training
    assert claims["(c)"].verdict == "reproduced"
    assert "Per policy and sequence" in report.tables
    md, js = report.write(tmp_path)
    assert md.exists()
    assert js.exists()
