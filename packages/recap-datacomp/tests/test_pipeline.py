"""The resumable pipeline: resume after a kill at every phase equals a clean run (spec test 3),
decode errors and numbering gaps (spec test 5), run-config mismatch, bad input."""

import io
import json
import tarfile

import numpy as np
import pyarrow.parquet as pq
import pytest
from _rd_helpers import HashCaptioner, Kill, KillAt, make_shards
from recap_datacomp import pipeline
from recap_datacomp.pipeline import ResumeMismatchError, read_recaptions, recaption_shards
from recap_datacomp.shards import expand_shards

KW = {"batch_size": 3, "checkpoint_every": 6, "show_progress": False}


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return make_shards(tmp_path_factory.mktemp("shards"), n_shards=2, per_shard=10)


@pytest.fixture(scope="module")
def clean(shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("clean")
    recaption_shards(shards, out, HashCaptioner(), **KW)
    return {s: pq.read_table(out / f"{s.split('/')[-1][:-4]}.parquet") for s in shards}


def _check_equal(out, shards, clean):
    for s in shards:
        table = pq.read_table(out / f"{s.split('/')[-1][:-4]}.parquet")
        assert table.equals(clean[s])
        keys = table.column("key").to_pylist()
        assert len(keys) == len(set(keys)) == 10


# Shard 0 is captioned by calls 1-4 (3, 3, 3, 1 rows), shard 1 by calls 5-8; a part is written
# after 6 rows (call 2) and the rest when the shard ends. Kill at call 2: mid-part (one batch
# buffered, lost); call 3: right after part 0; call 5: after shard 0 finished; call 7: after
# shard 1's first part. SAVED = rows on disk at the kill, never captioned again.
SAVED = {1: 0, 2: 0, 3: 6, 5: 10, 7: 16}


@pytest.mark.parametrize("kill_at", sorted(SAVED))
def test_resume_after_kill_equals_clean_run_mid_part_and_after_part(
    shards, clean, tmp_path, kill_at
):
    with pytest.raises(Kill):
        recaption_shards(shards, tmp_path, KillAt(kill_at), **KW)
    again = HashCaptioner()
    stats = recaption_shards(shards, tmp_path, again, **KW)
    _check_equal(tmp_path, shards, clean)
    assert again.images == 20 - SAVED[kill_at]  # finished parts are not redone
    assert sum(stats.counts.values()) == 20 - len(stats.shards_skipped) * 10


def test_resume_after_kill_before_stats_equals_clean_run(shards, clean, tmp_path, monkeypatch):
    real = pipeline._write_stats

    def boom(path, stats):
        raise Kill()

    monkeypatch.setattr(pipeline, "_write_stats", boom)
    with pytest.raises(Kill):
        recaption_shards(shards, tmp_path, HashCaptioner(), **KW)
    assert not list(tmp_path.glob("*_stats.json"))
    monkeypatch.setattr(pipeline, "_write_stats", real)
    again = HashCaptioner()
    recaption_shards(shards, tmp_path, again, **KW)
    _check_equal(tmp_path, shards, clean)
    assert again.images == 10  # shard 0's rows were all in parts: only shard 1 is captioned


def test_finished_shards_are_skipped_on_rerun(shards, tmp_path):
    recaption_shards(shards, tmp_path, HashCaptioner(), **KW)
    again = HashCaptioner()
    stats = recaption_shards(shards, tmp_path, again, **KW)
    assert again.images == 0
    assert len(stats.shards_skipped) == 2


def test_resume_with_other_model_raises_unless_force(shards, tmp_path):
    with pytest.raises(Kill):
        recaption_shards(shards, tmp_path, KillAt(3), **KW)
    other = HashCaptioner()
    other.run_config = {"model_id": "other"}
    with pytest.raises(ResumeMismatchError, match="force=True"):
        recaption_shards(shards, tmp_path, other, **KW)
    stats = recaption_shards(shards, tmp_path, other, force=True, **KW)
    assert stats.counts["ok"] == 20
    meta = json.loads((tmp_path / "00000_stats.json").read_text())
    assert meta["run_config"] == {"model_id": "other"}
    assert meta["success_rate"] == 1.0
    assert len(meta["img_per_s_p5_p50_p95"]) == 3


def test_corrupt_jpeg_and_missing_image_are_decode_error_rows(tmp_path):
    (path,) = make_shards(tmp_path, n_shards=1, per_shard=4)
    # rewrite the tar: corrupt sample 1's JPEG, drop sample 2's image member
    with tarfile.open(path) as src:
        members = [(m, src.extractfile(m).read()) for m in src.getmembers()]
    bad = tmp_path / "bad.tar"
    with tarfile.open(bad, "w") as dst:
        for m, data in members:
            if m.name.startswith("000000001.jpg"):
                data = data[:40] + b"\x00" * 50
            if m.name.startswith("000000002.jpg"):
                continue
            m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    out = tmp_path / "out"
    recaption_shards([str(bad)], out, HashCaptioner(), **KW)
    table = read_recaptions(out).to_pydict()
    assert table["status"] == ["ok", "decode_error", "decode_error", "ok"]
    assert "no image member" in table["error"][2]
    assert table["re_caption"][1] == ""
    assert table["n_chars"][1] == 0


def test_captioner_exception_becomes_caption_error_rows(tmp_path):
    (path,) = make_shards(tmp_path, n_shards=1, per_shard=4)

    def flaky(images, prompts=None):
        if any(im.size[1] == 17 for im in images):  # image 1 has height 17
            raise RuntimeError("model OOM")
        return ["fine"] * len(images)

    recaption_shards([path], tmp_path / "out", flaky, batch_size=4, show_progress=False)
    table = read_recaptions(tmp_path / "out").to_pydict()
    assert table["status"] == ["ok", "caption_error", "ok", "ok"]
    assert "model OOM" in table["error"][1]


def test_shard_numbering_gap_warns_not_crash(tmp_path):
    make_shards(tmp_path, n_shards=3, per_shard=2)
    (tmp_path / "00001.tar").unlink()
    with pytest.warns(UserWarning, match="numbering gap"):
        paths = expand_shards(str(tmp_path / "{00000..00002}.tar"))
    assert [p[-9:] for p in paths] == ["00000.tar", "00002.tar"]
    with pytest.warns(UserWarning, match="numbering gap"):
        stats = recaption_shards(
            str(tmp_path / "{00000..00002}.tar"), tmp_path / "out", HashCaptioner(), **KW
        )
    assert stats.counts["ok"] == 4


def test_recaption_shards_rejects_bad_input(shards, tmp_path):
    with pytest.raises(ValueError, match="shards"):
        recaption_shards([], tmp_path, HashCaptioner())
    with pytest.raises(ValueError, match="image_keys"):
        recaption_shards(shards, tmp_path, HashCaptioner(), image_keys="jpg;mp4")
    with pytest.raises(ValueError, match="batch_size"):
        recaption_shards(shards, tmp_path, HashCaptioner(), batch_size=0)
    with pytest.raises(ValueError, match="checkpoint_every"):
        recaption_shards(shards, tmp_path, HashCaptioner(), checkpoint_every=-1)
    with pytest.raises(TypeError, match="captioner"):
        recaption_shards(shards, tmp_path, "not a model")
    with pytest.raises(ValueError, match="shards"):
        expand_shards(str(tmp_path / "none-{0..3}.tar"))
    with pytest.raises(ValueError, match="rank"):
        recaption_shards(shards, tmp_path, HashCaptioner(), rank=2, world_size=2)


def test_error_column_has_no_memory_address_so_resume_equals_clean(tmp_path):
    """Trial 20, M1: PIL's "cannot identify image file <_io.BytesIO object at 0x...>"."""
    from recap_datacomp.shards import encode_image, write_shard

    rng = np.random.default_rng(0)
    samples = []
    for i in range(8):
        image = (
            b"garbage bytes"
            if i % 3 == 1
            else encode_image(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
        )
        samples.append({"__key__": f"k{i}", "jpg": image, "txt": f"alt {i}"})
    write_shard(str(tmp_path / "web.tar"), samples)
    shard = [str(tmp_path / "web.tar")]
    recaption_shards(shard, tmp_path / "clean", HashCaptioner(), **KW)
    with pytest.raises(Kill):
        recaption_shards(shard, tmp_path / "killed", KillAt(3), **KW)
    recaption_shards(shard, tmp_path / "killed", HashCaptioner(), **KW)
    clean, resumed = read_recaptions(tmp_path / "clean"), read_recaptions(tmp_path / "killed")
    errors = clean.column("error").to_pylist()
    assert errors[1].startswith("UnidentifiedImageError: cannot identify image file")
    assert not any("0x" in e for e in errors)
    assert resumed.equals(clean)


def test_non_tar_missing_shard_and_unmatched_text_key_raise(shards, tmp_path):
    """Trial 20, M2: these finished silently with 0 rows / empty org_caption."""
    (tmp_path / "notes.py").write_text("print('not a shard')\n")
    with pytest.raises(ValueError, match=r"`shards`.*not a tar"):
        recaption_shards([str(tmp_path / "notes.py")], tmp_path / "o1", HashCaptioner(), **KW)
    assert not (tmp_path / "o1" / "notes.py_stats.json").exists()
    with pytest.raises(FileNotFoundError, match=r"`shards`.*does not exist"):
        pipeline.caption_shard(str(tmp_path / "nope.tar"), tmp_path / "o2", HashCaptioner())
    with pytest.raises(ValueError, match=r"`text_key` 'nope'.*jpg, json, txt"):
        recaption_shards(shards, tmp_path / "o3", HashCaptioner(), text_key="nope", **KW)
    with pytest.raises(ValueError, match="`text_key` 'json:org_caption'"):
        recaption_shards(
            shards, tmp_path / "o4", HashCaptioner(), text_key="json:org_caption", **KW
        )
    stats = recaption_shards(shards, tmp_path / "o5", HashCaptioner(), text_key="json:url", **KW)
    assert stats.counts["ok"] == 20


def test_run_with_no_successful_row_warns(shards, tmp_path):
    """Trial 20 note: a captioner failing on every row "succeeded" with ok: 0 and no warning."""

    def broken(images, prompts=None):
        raise RuntimeError("bad processor")

    with pytest.warns(RuntimeWarning, match="none of the 20 rows"):
        stats = recaption_shards(shards, tmp_path, broken, **KW)
    assert stats.counts["caption_error"] == 20
