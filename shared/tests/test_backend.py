"""Backend detection, with installed modules, CUDA and the environment all faked."""

import sys
import types

import pytest

from icml25_core import BACKEND_ENV, BACKENDS, available_backends, select_backend
from icml25_core import backend as backend_module

NATIVE = "demo_kernels._C"


@pytest.fixture
def machine(monkeypatch):
    """Return ``setup(installed, cuda=False, interpret=False)`` that fakes this machine."""

    def setup(installed, *, cuda=False, interpret=False):
        def find_spec(name):
            parent = name.rpartition(".")[0]
            if parent and parent not in installed:
                raise ModuleNotFoundError(f"No module named {parent!r}")
            return object() if name in installed else None

        monkeypatch.setattr(backend_module, "find_spec", find_spec)
        if "torch" in installed:
            fake_cuda = types.SimpleNamespace(is_available=lambda: cuda)
            monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=fake_cuda))
        if interpret:
            monkeypatch.setenv("TRITON_INTERPRET", "1")
        else:
            monkeypatch.delenv("TRITON_INTERPRET", raising=False)

    monkeypatch.delenv(BACKEND_ENV, raising=False)
    return setup


@pytest.mark.parametrize(
    ("installed", "cuda", "interpret", "expected"),
    [
        ({"torch", "triton", "demo_kernels", NATIVE}, True, False, ("native", "triton", "torch")),
        ({"torch", "triton", "demo_kernels", NATIVE}, False, False, ("torch",)),
        ({"torch", "triton"}, True, True, ("triton", "triton-interpret", "torch")),
        ({"torch", "triton"}, False, True, ("triton-interpret", "torch")),
        ({"torch"}, True, True, ("torch",)),
        ({"torch", "demo_kernels"}, True, False, ("torch",)),
        ({"triton", "demo_kernels", NATIVE}, True, True, ()),
        (set(), False, False, ()),
    ],
    ids=[
        "gpu-all",
        "cpu-all",
        "gpu-triton-interpret",
        "cpu-triton-interpret",
        "torch-only",
        "native-module-missing",
        "no-torch",
        "nothing",
    ],
)
def test_available_backends_follows_machine(machine, installed, cuda, interpret, expected):
    machine(installed, cuda=cuda, interpret=interpret)
    assert available_backends(NATIVE) == expected


def test_available_backends_without_native_module_never_lists_native(machine):
    machine({"torch", "triton", "demo_kernels", NATIVE}, cuda=True)
    assert available_backends() == ("triton", "torch")


def test_available_backends_is_a_subsequence_of_backends(machine):
    machine({"torch", "triton", "demo_kernels", NATIVE}, cuda=True, interpret=True)
    assert available_backends(NATIVE) == BACKENDS


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"native_module": 3},
            TypeError,
            "^`native_module` must be a module name or None, got int$",
        ),
        ({"native_module": b"x._C"}, TypeError, "`native_module` must be .* got bytes"),
    ],
)
def test_available_backends_raises_on_bad_input(machine, kwargs, error, match):
    machine({"torch"})
    with pytest.raises(error, match=match):
        available_backends(**kwargs)


def test_available_backends_tolerates_relative_or_odd_names():
    assert "native" not in available_backends(".not_a_module")


def test_select_backend_picks_best_available(machine):
    machine({"torch", "triton"}, cuda=False, interpret=True)
    assert select_backend(NATIVE) == "triton-interpret"


def test_select_backend_env_overrides_best(machine, monkeypatch):
    machine({"torch", "triton"}, cuda=True)
    monkeypatch.setenv(BACKEND_ENV, "torch")
    assert select_backend() == "torch"


def test_select_backend_argument_overrides_env(machine, monkeypatch):
    machine({"torch", "triton"}, cuda=True)
    monkeypatch.setenv(BACKEND_ENV, "triton")
    assert select_backend(override="torch") == "torch"


def test_select_backend_empty_env_means_unset(machine, monkeypatch):
    machine({"torch"})
    monkeypatch.setenv(BACKEND_ENV, "")
    assert select_backend() == "torch"


@pytest.mark.parametrize(
    ("setup", "kwargs", "env", "error", "match"),
    [
        (
            {"torch"},
            {"override": "cuda"},
            None,
            ValueError,
            r"^`override` must be one of 'native', 'triton', 'triton-interpret', 'torch'; "
            r"got 'cuda'$",
        ),
        ({"torch"}, {}, "Triton", ValueError, "^`ICML25_BACKEND` must be one of .*got 'Triton'$"),
        (
            {"torch", "triton"},
            {"override": "triton-interpret"},
            None,
            RuntimeError,
            r"backend 'triton-interpret' is not available: it needs torch installed, "
            r"TRITON_INTERPRET=1, triton installed; missing: TRITON_INTERPRET=1$",
        ),
        ({"torch"}, {}, "triton", RuntimeError, "missing: triton installed, a CUDA GPU"),
        (
            {"torch"},
            {"override": "native"},
            None,
            RuntimeError,
            "missing: a native extension module \\(this library has none\\), a CUDA GPU",
        ),
        (
            {"torch"},
            {"override": "native", "native_module": NATIVE},
            None,
            RuntimeError,
            "missing: the extension module 'demo_kernels._C' installed, a CUDA GPU",
        ),
        ({"triton"}, {"override": "torch"}, None, RuntimeError, "missing: torch installed$"),
        (set(), {}, None, RuntimeError, "no kernel backend is available: install torch"),
    ],
)
def test_select_backend_raises_on_bad_input(machine, monkeypatch, setup, kwargs, env, error, match):
    machine(setup)
    if env is not None:
        monkeypatch.setenv(BACKEND_ENV, env)
    with pytest.raises(error, match=match):
        select_backend(**kwargs)
