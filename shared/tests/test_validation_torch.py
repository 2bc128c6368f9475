"""check_tensor on real tensors: runs only where torch is installed (the libraries' venvs).

The core's own test venv has numpy only, so this module is skipped there.
"""

import pytest

torch = pytest.importorskip("torch", reason="check_tensor tests need torch (not a core dependency)")

from icml25_core import check_device, check_tensor  # noqa: E402 - after the importorskip above


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
        (
            {"t": torch.tensor([[0.0, float("nan")], [0.0, 0.0]]).to_sparse()},
            ValueError,
            r"^`q` contains NaN or infinity \(a stored sparse value\)$",
        ),
    ],
)
def test_check_tensor_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_tensor(name="q", **kwargs)


def test_check_tensor_checks_shape_but_not_values_on_the_meta_device():
    t = torch.empty(2, 3, device="meta")
    assert check_tensor(t, "q", shape=(2, 3)) is t
    with pytest.raises(ValueError, match="`q` must be 1-D"):
        check_tensor(t, "q", ndim=1)


def test_check_tensor_accepts_a_finite_sparse_tensor():
    t = torch.eye(3).to_sparse()
    assert check_tensor(t, "q", ndim=2) is t


def test_check_array_names_a_tensor_that_requires_grad():
    from icml25_core import check_array

    with pytest.raises(TypeError, match=r"^`X` cannot be converted to a numpy array"):
        check_array(torch.ones(2, requires_grad=True), "X")


def test_check_device_defaults_to_the_module_then_cpu():
    assert check_device(None) == torch.device("cpu")
    assert check_device(None, module=torch.nn.Linear(2, 2).to("meta")) == torch.device("meta")
    assert check_device(None, module=torch.nn.Flatten()) == torch.device("cpu")  # no tensors
    assert check_device("cuda:1") == torch.device("cuda", 1)  # a name; no CUDA needed
    assert check_device(torch.device("cpu"), module=torch.nn.Linear(1, 1).to("meta")).type == "cpu"


@pytest.mark.parametrize(("device", "error", "match"), [("gpu", ValueError, "`dev` 'gpu'"),
                                                        (0.5, TypeError, "`dev`")])  # fmt: skip
def test_check_device_rejects_what_torch_cannot_name(device, error, match):
    with pytest.raises(error, match=match):
        check_device(device, "dev")
