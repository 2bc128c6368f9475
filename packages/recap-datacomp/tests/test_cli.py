"""The console script's commands on tiny inputs and the reproduce's part A (real photos; part B
runs in `nox -s reproduce`). Help, version and usage errors are checked by the shared contract."""

import json

import pytest
from _rd_helpers import make_shards
from recap_datacomp import reproduce
from recap_datacomp.cli import main


@pytest.mark.slow
def test_reproduce_part_a_resume_equals_clean_on_real_photos(tmp_path):
    report = reproduce.run(parts="A", out=tmp_path, progress=False)
    (claim,) = report.claims
    assert claim.verdict == "reproduced"
    assert "tables equal: 3/3" in claim.measured_value


def test_caption_merge_stats_commands(tmp_path, capsys):
    from recap_datacomp.tiny import tiny_llava

    make_shards(tmp_path, n_shards=2, per_shard=3)
    model, processor = tiny_llava(seed=0)
    model.save_pretrained(tmp_path / "m")
    processor.save_pretrained(tmp_path / "m")
    pattern = str(tmp_path / "{00000..00001}.tar")
    args = ["caption", pattern, str(tmp_path / "out"), "--model", str(tmp_path / "m")]
    assert main([*args, "--max-new-tokens", "4", "--batch-size", "2"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["counts"]["ok"] == 6
    assert main(["merge", pattern, str(tmp_path / "out"), str(tmp_path / "merged")]) == 0
    assert len(list((tmp_path / "merged").glob("*.tar"))) == 2
    capsys.readouterr()
    assert main(["stats", str(tmp_path / "out")]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["rows"] == 6
    assert stats["org_caption"]["mean_tokens"] == 3.0


def test_cli_rejects_bad_values_with_usage_errors(tmp_path):
    with pytest.raises(SystemExit) as err:
        main(["caption", "x", "y", "--model", "m", "--batch-size", "0"])
    assert err.value.code == 2
    with pytest.raises(SystemExit) as err:
        main(["train-clip", "x", "--model", "m", "--out", "o", "--p", "1.5"])
    assert err.value.code == 2
