import numbers

import numpy as np
import pytest

from icml25_core import (
    check_array,
    check_choice,
    check_consistent_length,
    check_scalar,
    check_tensor,
)


def test_check_array_converts_nested_lists():
    arr = check_array([[1, 2, 3], [4, 5, 6]], "X", ndim=2, shape=(None, 3))
    assert isinstance(arr, np.ndarray)
    assert arr.shape == (2, 3)


def test_check_array_returns_view_without_copy():
    x = np.arange(6.0).reshape(2, 3)
    assert check_array(x, "X") is x


def test_check_array_casts_when_asked():
    arr = check_array([1, 2, 3], "y", dtype="integer", cast=np.float32)
    assert arr.dtype == np.float32


@pytest.mark.parametrize("dtype", ["numeric", "floating"])
def test_check_array_reads_object_numbers_as_float(dtype):
    arr = check_array(np.array([1, 2.5], dtype=object), "x", dtype=dtype)
    assert arr.dtype == np.float64


def test_check_array_accepts_bool_as_numeric():
    assert check_array([True, False], "mask").dtype == np.bool_


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("floating", np.float32(1.0)),
        ("integer", np.uint8(1)),
        ("bool", np.True_),
        (np.int16, np.int16(1)),
        ((np.float32, np.float64), np.float64(1.0)),
        ("float64", 1.0),
        (None, "text"),
    ],
)
def test_check_array_accepts_matching_dtype(dtype, value):
    check_array([value, value], "x", dtype=dtype)


def test_check_array_allows_nan_when_not_finite():
    assert np.isnan(check_array([1.0, np.nan], "x", finite=False)).any()


def test_check_array_allows_empty_when_asked():
    assert check_array(np.zeros((0, 3)), "X", shape=(None, 3), allow_empty=True).size == 0


def test_check_array_ndim_tuple_accepts_each():
    check_array([1.0], "x", ndim=(1, 2))
    check_array([[1.0]], "x", ndim=(1, 2))


def test_check_array_skips_finite_check_for_integers():
    check_array(np.array([np.iinfo(np.int64).max]), "x")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"x": [1.0, 2.0, 3.0], "ndim": 2}, ValueError, r"^`X` must be 2-D, got shape \(3,\)$"),
        ({"x": 1.0, "ndim": (1, 2)}, ValueError, r"`X` must be 1-D or 2-D, got shape \(\)"),
        (
            {"x": [[1.0, 2.0]], "shape": (None, 3)},
            ValueError,
            r"`X` must have size 3 along axis 1 \(shape \(\*, 3\)\), got shape \(1, 2\)",
        ),
        ({"x": [1.0], "shape": (None, 3)}, ValueError, r"`X` must have shape \(\*, 3\)"),
        (
            {"x": [0.0, 1.0, np.nan]},
            ValueError,
            r"^`X` contains NaN or infinity \(first at index \(2,\)\)$",
        ),
        ({"x": [[0.0], [np.inf]]}, ValueError, r"first at index \(1, 0\)"),
        ({"x": [1 + 0j, np.nan], "dtype": None}, ValueError, "`X` contains NaN"),
        ({"x": np.zeros((0, 3))}, ValueError, r"^`X` is empty \(shape \(0, 3\)\)$"),
        ({"x": []}, ValueError, "`X` is empty"),
        ({"x": ["a", "b"]}, TypeError, "`X` must be numeric, got dtype <U1"),
        ({"x": [1 + 2j]}, TypeError, "`X` must be numeric, got dtype complex128"),
        ({"x": [1, 2], "dtype": "floating"}, TypeError, "`X` must be floating, got dtype int64"),
        ({"x": [1.0], "dtype": "integer"}, TypeError, "`X` must be integer, got dtype float64"),
        ({"x": [1], "dtype": "bool"}, TypeError, "`X` must be bool, got dtype int64"),
        (
            {"x": np.zeros(2), "dtype": (np.float16, np.float32)},
            TypeError,
            "`X` must have dtype float16 or float32, got float64",
        ),
        (
            {"x": np.array([1, {}], dtype=object)},
            TypeError,
            "`X` has dtype object and cannot be read as numbers",
        ),
        ({"x": [1, None]}, ValueError, r"`X` contains NaN or infinity \(first at index \(1,\)\)"),
        ({"x": [[1, 2], [3]]}, TypeError, "`X` cannot be converted to a numpy array"),
        ({"x": [1.0], "dtype": "nummeric"}, TypeError, "data type 'nummeric' not understood"),
        ({"x": None}, TypeError, "^`X` must be array-like, got None$"),
        (
            {"x": [1.0, 1e10], "cast": np.float16},
            ValueError,
            "^`X` overflows float16",
        ),
        (
            {"x": [1, 300], "cast": np.uint8},
            ValueError,
            r"^`X` does not fit in uint8: values span \[1, 300\], uint8 holds \[0, 255\]$",
        ),
        ({"x": [-1.5, 2.0], "cast": np.uint32}, ValueError, "`X` does not fit in uint32"),
    ],
)
def test_check_array_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_array(name="X", **kwargs)


@pytest.mark.parametrize(
    ("value", "kwargs"),
    [
        (0.5, {"low": 0, "high": 1, "inclusive": "neither"}),
        (0, {"low": 0, "high": 1}),
        (1, {"low": 0, "high": 1, "inclusive": "right"}),
        (np.float32(0.1), {}),
        (np.int64(3), {"kind": int, "low": 1}),
        (3, {"kind": float}),
        (True, {"kind": bool}),
        (np.False_, {"kind": (bool, str)}),
        (float("inf"), {"low": 0}),
        ("a", {"kind": str}),
        (2 + 1j, {"kind": numbers.Complex}),
    ],
)
def test_check_scalar_returns_valid_value(value, kwargs):
    assert check_scalar(value, "v", **kwargs) is value


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"value": 1.5, "low": 0, "high": 1, "inclusive": "neither"},
            ValueError,
            r"^`alpha` must be in \(0, 1\), got 1.5$",
        ),
        (
            {"value": 0, "low": 0, "high": 1, "inclusive": "right"},
            ValueError,
            r"`alpha` must be in \(0, 1\], got 0",
        ),
        (
            {"value": 1, "low": 0, "high": 1, "inclusive": "left"},
            ValueError,
            r"`alpha` must be in \[0, 1\), got 1",
        ),
        ({"value": -1, "low": 0}, ValueError, "^`alpha` must be >= 0, got -1$"),
        ({"value": 0, "low": 0, "inclusive": "neither"}, ValueError, "`alpha` must be > 0, got 0"),
        ({"value": 2, "high": 1}, ValueError, "`alpha` must be <= 1, got 2"),
        ({"value": 1, "high": 1, "inclusive": "left"}, ValueError, "`alpha` must be < 1, got 1"),
        ({"value": float("nan"), "low": 0}, ValueError, "`alpha` must not be NaN"),
        ({"value": np.float64("nan")}, ValueError, "`alpha` must not be NaN"),
        ({"value": "0.5"}, TypeError, "^`alpha` must be a real number, got str$"),
        ({"value": True}, TypeError, "`alpha` must be a real number, got bool"),
        ({"value": np.True_, "kind": int}, TypeError, "`alpha` must be an int, got bool"),
        ({"value": 1.0, "kind": int}, TypeError, "`alpha` must be an int, got float"),
        ({"value": 1.0, "kind": (int, str)}, TypeError, "`alpha` must be an int or a str"),
        ({"value": 1, "kind": bool}, TypeError, "`alpha` must be a bool, got int"),
        ({"value": 1, "inclusive": "open"}, ValueError, "`inclusive` must be one of 'both'"),
        ({"value": 10**400, "low": 0, "high": 1}, ValueError, r"^`alpha` must be in \[0, 1\]"),
    ],
)
def test_check_scalar_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_scalar(name="alpha", **kwargs)


def test_check_choice_returns_value():
    assert check_choice("r", "risk", ("dr", "r", "tau")) == "r"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"value": "x"}, ValueError, r"^`risk` must be one of 'dr', 'r', 'tau'; got 'x'$"),
        ({"value": None}, ValueError, "got None"),
        ({"value": "DR"}, ValueError, "got 'DR'"),
    ],
)
def test_check_choice_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_choice(name="risk", choices=("dr", "r", "tau"), **kwargs)


def test_check_choice_refuses_a_string_of_choices():
    with pytest.raises(TypeError, match="`choices` must be a sequence of allowed values"):
        check_choice("d", "risk", "dr")


def test_check_array_cast_keeps_values_that_fit():
    out = check_array([1.0, 65504.0], "X", cast=np.float16)
    assert out.dtype == np.float16
    assert out.tolist() == [1.0, 65504.0]
    assert check_array([0, 255], "X", cast=np.uint8).tolist() == [0, 255]
    assert np.isinf(check_array([1e10], "X", cast=np.float16, finite=False)).all()


def test_check_consistent_length_accepts_equal_lengths_and_none():
    check_consistent_length(X=np.zeros((4, 2)), y=[0, 1, 0, 1], sample_weight=None)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"X": np.zeros((10, 2)), "y": np.zeros(9)},
            ValueError,
            r"^`X`, `y` must have the same length; got X: 10, y: 9$",
        ),
        ({"X": [1, 2], "y": [1, 2], "w": [1]}, ValueError, "got X: 2, y: 2, w: 1"),
        ({"X": [1, 2], "y": np.float64(3.0)}, TypeError, "^`y` has no length, got float64$"),
    ],
)
def test_check_consistent_length_raises_on_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_consistent_length(**kwargs)


@pytest.mark.parametrize("value", [np.zeros(3), [1.0, 2.0], None])
def test_check_tensor_rejects_non_tensors(value):
    # Needs no torch: without torch imported nothing can be a tensor.
    with pytest.raises(TypeError, match=r"`q` must be a torch\.Tensor, got"):
        check_tensor(value, "q")
