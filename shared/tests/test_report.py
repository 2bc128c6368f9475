import json
import subprocess
import sys

import numpy as np
import pytest

from icml25_core import Claim, Report, Verdict, load_reports, summary_table
from icml25_core.report import main


def make_report(library="quest-qat", verdicts=("reproduced",)):
    claims = [
        Claim(f"claim {i}", "1.0 (Tab. 2)", "0.9", v, threshold="within 20%")
        for i, v in enumerate(verdicts)
    ]
    return Report(
        library=library,
        title="QuEST: stable training with 4-bit weights",
        claims=claims,
        setup={"seed": 0, "sizes": [64, 128], "data": "fortunes"},
        tables={"Ablation": "| a | b |\n|---|---|\n| 1 | 2 |"},
        figures=["loss.png"],
        notes=["CPU only."],
        runtime_s=12.34,
        created="2025-07-01T00:00:00+00:00",
    )


def test_claim_converts_verdict_text():
    claim = Claim("c", "p", "m", "partially reproduced")
    assert claim.verdict is Verdict.PARTIAL


@pytest.mark.parametrize(
    ("passed", "verdict"),
    [(True, Verdict.REPRODUCED), (False, Verdict.NOT_REPRODUCED), (np.bool_(True), "reproduced")],
)
def test_claim_judge_sets_verdict_from_pass(passed, verdict):
    claim = Claim.judge("gap closes", "0.1", "0.08", passed, "gap <= 0.15", note="n")
    assert claim.verdict == verdict
    assert (claim.threshold, claim.note) == ("gap <= 0.15", "n")


def test_report_round_trips_through_dict_and_json():
    report = make_report(verdicts=("reproduced", "not reproduced at this scale"))
    assert Report.from_dict(report.to_dict()) == report
    assert Report.from_dict(json.loads(report.to_json())) == report


def test_report_to_dict_makes_numpy_values_plain():
    report = Report("lib", "t", setup={"seed": np.int64(3), "grid": np.arange(2)})
    assert report.to_dict()["setup"] == {"seed": 3, "grid": [0, 1]}
    assert json.loads(report.to_json())["setup"]["seed"] == 3


def test_report_created_defaults_to_utc_now():
    assert Report("lib", "t").created.endswith("+00:00")


def test_report_to_markdown_has_every_section():
    md = make_report().to_markdown()
    assert md.startswith("# QuEST: stable training with 4-bit weights\n")
    for expected in (
        "## Setup\n\n- seed: 0\n- sizes: [64, 128]\n- data: fortunes",
        "| Claim | Paper | Measured | Threshold | Verdict |",
        "| claim 0 | 1.0 (Tab. 2) | 0.9 | within 20% | reproduced |",
        "## Ablation\n\n| a | b |",
        "![loss.png](loss.png)",
        "## Notes\n\n- CPU only.",
        "Runtime: 12.3 s.",
    ):
        assert expected in md


def test_report_to_markdown_escapes_pipes_and_newlines_in_cells():
    report = Report("lib", "t", claims=[Claim("a|b", "x\ny", "|z|", "reproduced", note="why")])
    md = report.to_markdown()
    assert r"| a\|b | x<br>y | \|z\| |  | reproduced |" in md
    assert "- a|b: why" in md


def test_report_write_then_read_round_trips(tmp_path):
    report = make_report()
    md_path, json_path = report.write(tmp_path / "reports")
    assert (md_path.name, json_path.name) == ("quest-qat.md", "quest-qat.json")
    assert md_path.read_text(encoding="utf-8") == report.to_markdown()
    assert Report.read(json_path) == report


def test_summary_table_lists_claims_and_counts():
    reports = [
        make_report("a-lib", ("reproduced", "partially reproduced")),
        make_report("b-lib", ("not reproduced at this scale",)),
    ]
    table = summary_table(reports)
    assert table.splitlines()[0] == "| Library | Claim | Paper | Measured | Verdict |"
    assert "| b-lib | claim 0 | 1.0 (Tab. 2) | 0.9 | not reproduced at this scale |" in table
    assert table.endswith("\n3 claims: 1 reproduced, 1 partially, 1 not reproduced\n")


def test_summary_table_says_claim_for_one():
    assert "\n1 claim: 1 reproduced, 0 partially" in summary_table([make_report()])


def test_load_reports_sorts_by_library(tmp_path):
    for name in ("zeta", "alpha", "mid"):
        make_report(name).write(tmp_path)
    assert [r.library for r in load_reports(tmp_path)] == ["alpha", "mid", "zeta"]


def test_main_prints_summary_table(tmp_path, capsys):
    make_report().write(tmp_path)
    assert main([str(tmp_path)]) == 0
    assert "| quest-qat | claim 0 |" in capsys.readouterr().out


def test_main_fails_clearly_without_reports(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 1
    assert "no reproduce reports (*.json)" in capsys.readouterr().err


def test_module_runs_with_python_m_without_warnings(tmp_path):
    make_report().write(tmp_path)
    cmd = [sys.executable, "-W", "error", "-m", "icml25_core", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert "1 claim: 1 reproduced" in done.stdout


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"verdict": "maybe"},
            ValueError,
            "^`verdict` must be a Verdict or one of 'reproduced', 'partially reproduced', "
            "'not reproduced at this scale'; got 'maybe'$",
        ),
        ({"verdict": None}, ValueError, "`verdict` must be a Verdict .*; got None$"),
    ],
)
def test_claim_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        Claim("c", "p", "m", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"passed": 1.0}, TypeError, "^`passed` must be a bool, got float$"),
        ({"passed": "yes"}, TypeError, "`passed` must be a bool, got str"),
        ({"passed": None}, TypeError, "`passed` must be a bool, got NoneType"),
    ],
)
def test_claim_judge_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        Claim.judge("c", "p", "m", threshold="t", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"library": "../escape"}, ValueError, "`library` must be a distribution name"),
        ({"library": ""}, ValueError, "`library` must be a distribution name"),
        ({"library": "ok", "setup": {"x": object()}}, TypeError, "object is not JSON"),
        ({"library": 3}, TypeError, "^`library` must be a str, got int$"),
        ({"library": "ok", "title": None}, TypeError, "^`title` must be a str, got NoneType$"),
        ({"library": "ok", "claims": Claim("c", "p", "m", "reproduced")}, TypeError, "`claims`"),
        (
            {"library": "ok", "claims": ["c"]},
            TypeError,
            "^`claims` must be a list of Claim, got str at 0$",
        ),
        ({"library": "ok", "setup": [1]}, TypeError, "^`setup` must be a dict, got list$"),
        ({"library": "ok", "runtime_s": -1.0}, ValueError, "^`runtime_s` must be >= 0, got -1.0$"),
        ({"library": "ok", "runtime_s": "1 s"}, TypeError, "`runtime_s` must be a real number"),
    ],
)
def test_report_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        Report(**{"title": "t", **kwargs}).to_dict()


def test_report_checks_claims_appended_after_construction(tmp_path):
    report = make_report()
    report.claims.append("not a claim")
    with pytest.raises(TypeError, match=r"^`claims` must be a list of Claim, got str at 1$"):
        report.write(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("directory", "error", "match"),
    [
        (None, TypeError, "^`directory` must be a str or a path, got NoneType$"),
        ("file", ValueError, "^`directory` must be a folder, got the file"),
    ],
)
def test_report_write_raises_on_bad_directory(tmp_path, directory, error, match):
    if directory == "file":
        directory = tmp_path / "a.md"
        directory.write_text("x")
    with pytest.raises(error, match=match):
        make_report().write(directory)


@pytest.mark.parametrize(
    ("reports", "match"),
    [
        ("reports", "^`reports` must be an iterable of Report .*got str$"),
        (3, "^`reports` must be an iterable of Report .*got int$"),
        (["x"], "^`reports` must hold Report objects, got str$"),
    ],
)
def test_summary_table_raises_on_bad_input(reports, match):
    with pytest.raises(TypeError, match=match):
        summary_table(reports)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{not json", "is not a reproduce report"),
        ("[1, 2]", "is not a reproduce report"),
        ('{"library": "x"}', "is not a reproduce report.*title"),
        ('{"library": "x", "title": "t", "colour": 1}', "unexpected keyword argument 'colour'"),
        ('{"library": "x", "title": "t", "claims": [{"claim": "c"}]}', "is not a reproduce"),
    ],
)
def test_report_read_raises_on_bad_input(tmp_path, text, match):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        Report.read(path)


def test_load_reports_raises_on_bad_input(tmp_path):
    (tmp_path / "broken.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json is not a reproduce report"):
        load_reports(tmp_path)
