import importlib.util

import pytest

from icml25_core import progress
from icml25_core.progress import _TextProgress

HAS_TQDM = importlib.util.find_spec("tqdm") is not None
# The package attribute `icml25_core.progress` is the function; this is its module.
progress_module = importlib.import_module("icml25_core.progress")


@pytest.fixture
def no_tqdm(monkeypatch):
    """Make progress() behave as if tqdm were not installed."""
    monkeypatch.setattr(progress_module, "find_spec", lambda name: None)
    monkeypatch.delenv("ICML25_PROGRESS", raising=False)


@pytest.mark.skipif(not HAS_TQDM, reason="tqdm not installed")
def test_progress_returns_tqdm_when_installed():
    from tqdm import tqdm

    bar = progress(range(3), desc="fit", disable=True)
    assert isinstance(bar, tqdm)
    assert list(bar) == [0, 1, 2]


@pytest.mark.skipif(not HAS_TQDM, reason="tqdm not installed")
def test_progress_env_disables_tqdm(monkeypatch):
    monkeypatch.setenv("ICML25_PROGRESS", "0")
    with progress(total=2) as bar:
        assert bar.disable


def test_progress_falls_back_without_tqdm(no_tqdm):
    assert isinstance(progress(range(2)), _TextProgress)


def test_progress_fallback_iterates_and_prints_final_line(no_tqdm, capsys):
    assert list(progress(range(4), desc="fit", unit="batch")) == [0, 1, 2, 3]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("fit: 4/4 batch [")


def test_progress_fallback_counts_by_hand_in_with_block(no_tqdm, capsys):
    with progress(total=10, desc="eval") as bar:
        bar.update(3)
        bar.update()
        bar.set_postfix(loss=0.5, acc="90%")
    err = capsys.readouterr().err
    assert err.startswith("eval: 4/10 it [")
    assert err.rstrip().endswith("s, loss=0.5, acc=90%]")


def test_progress_fallback_prints_after_interval_only(no_tqdm, capsys):
    bar = progress(total=3)
    bar.update()
    assert capsys.readouterr().err == ""  # well inside the 2 s interval
    bar.interval = 0.0
    bar.update()
    assert capsys.readouterr().err.startswith("2/3 it [")


def test_progress_fallback_without_total_or_len(no_tqdm, capsys):
    list(progress(iter("ab")))
    assert capsys.readouterr().err.startswith("2 it [")


def test_progress_fallback_closes_once(no_tqdm, capsys):
    bar = progress(total=1)
    bar.close()
    bar.close()
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize(
    ("kwargs", "env"),
    [({"disable": True}, None), ({}, "0"), ({"leave": False}, None)],
    ids=["disable", "env", "no-leave"],
)
def test_progress_fallback_stays_silent_when_off(no_tqdm, monkeypatch, capsys, kwargs, env):
    if env is not None:
        monkeypatch.setenv("ICML25_PROGRESS", env)
    list(progress(range(3), **kwargs))
    assert capsys.readouterr().err == ""


def test_progress_env_other_than_zero_keeps_bar(no_tqdm, monkeypatch, capsys):
    monkeypatch.setenv("ICML25_PROGRESS", "1")
    list(progress(range(1)))
    assert capsys.readouterr().err.startswith("1/1 it")


@pytest.mark.parametrize("fallback", [True, False] if HAS_TQDM else [True])
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"iterable": 5},
            TypeError,
            "^`iterable` must be iterable, got int; for a count, pass total=5$",
        ),
        ({"iterable": object()}, TypeError, "^`iterable` must be iterable, got object$"),
        ({"total": 3}, TypeError, "no iterable|not iterable"),
        ({"iterable": [1], "total": -1}, ValueError, "^`total` must be >= 0, got -1$"),
        ({"iterable": [1], "total": "3"}, TypeError, "^`total` must be a real number, got str$"),
        ({"iterable": [1], "desc": 3}, TypeError, "^`desc` must be a str, got int$"),
        ({"iterable": [1], "unit": None}, TypeError, "^`unit` must be a str, got NoneType$"),
    ],
)
def test_progress_raises_on_bad_input(monkeypatch, fallback, kwargs, error, match):
    if fallback:
        monkeypatch.setattr(progress_module, "find_spec", lambda name: None)
    with pytest.raises(error, match=match):
        list(progress(disable=True, **kwargs))
