import json

import numpy as np
import pytest

from icml25_core import ResultStore, source_fingerprint


def test_put_then_reopen_resumes_results(tmp_path):
    path = tmp_path / "sub" / "run.jsonl"
    store = ResultStore(path, config={"n": 3})
    store.put("a", {"x": np.arange(3), "y": np.float64(0.5)})
    reopened = ResultStore(path, config={"n": 3})
    assert "a" in reopened
    assert len(reopened) == 1
    assert reopened.get("a") == {"x": [0, 1, 2], "y": 0.5}
    assert reopened.get("b", "missing") == "missing"


def test_truncated_last_line_is_ignored_after_a_kill(tmp_path):
    path = tmp_path / "run.jsonl"
    store = ResultStore(path)
    store.put("done", 1)
    with path.open("a") as fh:
        fh.write('{"key": "half", "val')  # killed mid-write
    reopened = ResultStore(path)
    assert ("done" in reopened, "half" in reopened) == (True, False)


def test_other_config_is_refused(tmp_path):
    path = tmp_path / "run.jsonl"
    ResultStore(path, config={"n": 1}).put("a", 1)
    with pytest.raises(ValueError, match="another configuration"):
        ResultStore(path, config={"n": 2})


def test_first_line_is_the_config(tmp_path):
    path = tmp_path / "run.jsonl"
    ResultStore(path, config={"seeds": [0, 1]})
    assert json.loads(path.read_text().splitlines()[0]) == {"config": {"seeds": [0, 1]}}


@pytest.mark.parametrize(
    ("key", "value", "error", "match"),
    [
        (1, 0, TypeError, "`key` must be a str"),
        ("k", object(), TypeError, "not JSON serializable|cannot store"),
        ("k", {1j}, TypeError, "cannot store|not JSON serializable"),
    ],
)
def test_put_rejects_bad_input(tmp_path, key, value, error, match):
    with pytest.raises(error, match=match):
        ResultStore(tmp_path / "run.jsonl").put(key, value)


def test_restart_replaces_results_of_another_config(tmp_path):
    path = tmp_path / "run.jsonl"
    ResultStore(path, config={"n": 1}).put("a", 1)
    with pytest.warns(UserWarning, match="starting over"):
        store = ResultStore(path, config={"n": 2}, restart=True)
    assert len(store) == 0
    store.put("b", 2)
    reopened = ResultStore(path, config={"n": 2}, restart=True)
    assert (reopened.get("a"), reopened.get("b")) == (None, 2)


def test_source_fingerprint_follows_names_and_bytes(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "pkg" / "notes.txt").write_text("ignored")
    first = source_fingerprint(tmp_path / "pkg")
    assert len(first) == 16
    assert int(first, 16) >= 0
    (tmp_path / "pkg" / "notes.txt").write_text("changed")
    assert source_fingerprint(tmp_path / "pkg") == first  # only *.py files count
    (tmp_path / "pkg" / "sub" / "b.py").write_text("y = 3\n")
    second = source_fingerprint(tmp_path / "pkg")
    assert second != first
    (tmp_path / "pkg" / "sub" / "b.py").rename(tmp_path / "pkg" / "sub" / "c.py")
    assert source_fingerprint(tmp_path / "pkg") != second  # a renamed module counts too
    assert source_fingerprint(tmp_path / "pkg" / "a.py") != source_fingerprint(tmp_path / "pkg")


@pytest.mark.parametrize("paths", [(), ("does-not-exist",)])
def test_source_fingerprint_rejects_missing_paths(tmp_path, paths):
    with pytest.raises(ValueError, match="`paths`"):
        source_fingerprint(*(tmp_path / p for p in paths))


def test_put_after_a_kill_mid_write_survives_the_next_resume(tmp_path):
    path = tmp_path / "run.jsonl"
    ResultStore(path, config={"n": 1}).put("done", 1)
    with path.open("a") as fh:
        fh.write('{"key": "half", "val')  # killed mid-write
    resumed = ResultStore(path, config={"n": 1})
    resumed.put("next", 2)
    again = ResultStore(path, config={"n": 1})
    assert (again.get("done"), again.get("next"), "half" in again) == (1, 2, False)
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_kill_while_writing_the_config_starts_over(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"config": {"n"')
    store = ResultStore(path, config={"n": 1})
    store.put("a", 1)
    assert ResultStore(path, config={"n": 1}).get("a") == 1


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("hello\n", "not a ResultStore file"),
        ("hello", "not a ResultStore file"),
        ('{"a": 1}\n', "not a ResultStore file"),
        ('{"config": {}}\n{"a": 1}\n', "not a ResultStore record"),
    ],
)
def test_a_file_of_something_else_is_refused_and_left_alone(tmp_path, text, match):
    path = tmp_path / "notes.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        ResultStore(path)
    assert path.read_text() == text


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"path": None}, TypeError, "`path` must be a str or a path, got NoneType"),
        ({"path": 3}, TypeError, "`path` must be a str or a path, got int"),
        ({"config": [1]}, TypeError, "`config` must be a dict or None, got list"),
        ({"path": "."}, ValueError, "`path` must be a file"),
    ],
)
def test_bad_arguments_name_themselves(tmp_path, kwargs, error, match):
    arguments = {"path": tmp_path / "run.jsonl", **kwargs}
    with pytest.raises(error, match=match):
        ResultStore(arguments.pop("path"), **arguments)
