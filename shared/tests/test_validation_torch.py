"""check_tensor on real tensors: runs only where torch is installed (the libraries' venvs).

The core's own test venv has numpy only, so this module is skipped there.
"""

import pytest

torch = pytest.importorskip("torch", reason="check_tensor tests need torch (not a core dependency)")

from icml25_core import check_tensor  # noqa: E402 - after the importorskip above


def test_check_tensor_returns_tensor_unchanged():
    t = torch.zeros(2, 3)
    assert check_tensor(t, "q", ndim=2, shape=(None, 3), dtype=torch.float32, device="cpu") is t


def test_check_tensor_accepts_dtype_tuple_and_empty_when_asked():
    t = torch.zeros(0, 4, dtype=torch.float16)
    check_tensor(t, "q", dtype=(torch.float16, torch.bfloat16), allow_empty=True)


def test_check_tensor_allows_nan_when_not_finite():
    check_tensor(torch.tensor([float("nan")]), "q", finite=False)


def test_check_tensor_skips_finite_check_for_integers():
    check_tensor(torch.tensor([1, 2]), "q")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"t": torch.zeros(3), "ndim": 2}, ValueError, r"^`q` must be 2-D, got shape \(3,\)$"),
        (
            {"t": torch.zeros(2, 5), "shape": (None, 4)},
            ValueError,
            r"`q` must have size 4 along axis 1 \(shape \(\*, 4\)\), got shape \(2, 5\)",
        ),
        (
            {"t": torch.zeros(3), "dtype": (torch.float16, torch.bfloat16)},
            TypeError,
            "`q` must have dtype torch.float16 or torch.bfloat16, got torch.float32",
        ),
        (
            {"t": torch.tensor([0.0, 1.0, float("inf")])},
            ValueError,
            r"^`q` contains NaN or infinity \(first at index \(2,\)\)$",
        ),
        ({"t": torch.zeros(0, 3)}, ValueError, r"^`q` is empty \(shape \(0, 3\)\)$"),
        (
            {"t": torch.zeros(2), "device": "cuda"},
            ValueError,
            "`q` must be on device cuda, got cpu",
        ),
        ({"t": [1.0]}, TypeError, "`q` must be a torch.Tensor, got list"),
    ],
)
def test_check_tensor_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_tensor(name="q", **kwargs)
