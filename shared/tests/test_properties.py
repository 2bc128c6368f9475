"""Property-based tests of the core: IDX round trips, range checks, seeds, resumable stores."""

import gzip
import json
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from icml25_core import ResultStore, check_array, check_scalar, read_idx, spawn_seeds

# IDX type codes and their big-endian dtypes (LeCun et al., "THE MNIST DATABASE", file formats).
IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    """The IDX encoding written out from the format's definition: two zero bytes, the type code,
    the number of dimensions, each dimension as a big-endian int32, then the data big-endian."""
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">i", n) for n in array.shape)
    return header + array.astype(IDX_TYPES[code]).tobytes()


@st.composite
def idx_arrays(draw):
    code = draw(st.sampled_from(sorted(IDX_TYPES)))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))
    elements = hnp.from_dtype(np.dtype(IDX_TYPES[code]), allow_nan=False)
    return code, draw(hnp.arrays(IDX_TYPES[code], shape, elements=elements))


@given(idx_arrays(), st.booleans())
def test_read_idx_inverts_the_format_any_type_shape_and_compression(tmp_path_factory, item, zip_):
    """read_idx(encode(a)) == a with a's shape, for every IDX type, raw or gzip (detected from
    the content)."""
    code, array = item
    data = idx_bytes(array, code)
    path = tmp_path_factory.mktemp("idx") / "file.idx"
    path.write_bytes(gzip.compress(data) if zip_ else data)
    read = read_idx(path)
    assert read.shape == array.shape
    assert read.dtype == np.dtype(IDX_TYPES[code]).newbyteorder("=")
    np.testing.assert_array_equal(read, array)


@given(idx_arrays(), st.data())
def test_read_idx_refuses_a_truncated_file(tmp_path_factory, item, data):
    """A file cut anywhere before its end is refused (ValueError), never read short."""
    code, array = item
    encoded = idx_bytes(array, code)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    path = tmp_path_factory.mktemp("idx") / "cut.idx"
    path.write_bytes(encoded[:cut])
    with pytest.raises(ValueError, match=r"cut\.idx"):
        read_idx(path)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(finite, finite, finite, st.sampled_from(["both", "left", "right", "neither"]))
def test_check_scalar_accepts_exactly_the_interval(value, a, b, inclusive):
    """check_scalar passes `value` iff it lies in the interval [low, high] with the ends
    `inclusive` names closed (the rule written out here), and raises ValueError otherwise."""
    low, high = min(a, b), max(a, b)
    above = value >= low if inclusive in ("both", "left") else value > low
    below = value <= high if inclusive in ("both", "right") else value < high
    if above and below:
        assert check_scalar(value, "v", low=low, high=high, inclusive=inclusive) == value
    else:
        with pytest.raises(ValueError, match="`v` must be"):
            check_scalar(value, "v", low=low, high=high, inclusive=inclusive)


@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=20))
def test_check_array_cast_to_uint8_keeps_values_or_raises(values):
    """Casting to uint8 returns the same values when all lie in [0, 255]; otherwise it raises
    instead of wrapping around."""
    if all(0 <= v <= 255 for v in values):
        out = check_array(values, "x", cast=np.uint8)
        assert out.dtype == np.uint8
        assert out.tolist() == values
    else:
        with pytest.raises(ValueError, match="`x`"):
            check_array(values, "x", cast=np.uint8)


@given(st.integers(0, 2**32 - 1), st.integers(0, 12))  # seeds are 32-bit (documented)
def test_spawn_seeds_from_an_int_are_numpys_children(seed, n):
    """An int seed gives numpy's own children ``SeedSequence(seed).spawn(n)``: same entropy,
    distinct spawn keys, the same streams on every call."""
    children = spawn_seeds(seed, n)
    expected = np.random.SeedSequence(seed).spawn(n)
    assert [c.entropy for c in children] == [e.entropy for e in expected]
    assert [c.spawn_key for c in children] == [e.spawn_key for e in expected]
    assert len({c.spawn_key for c in children}) == n
    again = spawn_seeds(seed, n)
    for a, b in zip(children, again, strict=True):
        assert np.array_equal(a.generate_state(4), b.generate_state(4))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=6), st.data())
def test_result_store_survives_reopening_and_a_cut_last_line(tmp_path_factory, records, data):
    """Every stored record reads back equal after reopening; a kill that cut the last line
    anywhere loses that record only, and the next put starts on a line of its own."""
    path = tmp_path_factory.mktemp("store") / "run.jsonl"
    store = ResultStore(path, config={"n": 1})
    for key, value in records.items():
        store.put(key, value)
    reopened = ResultStore(path, config={"n": 1})
    assert len(reopened) == len(records)
    assert list(reopened) == list(records)  # iteration: the keys in the order first stored
    for key, value in records.items():
        assert reopened.get(key) == json.loads(json.dumps(value))
    if records:
        text = path.read_bytes()
        last_start = text.rstrip(b"\n").rfind(b"\n") + 1
        cut = data.draw(st.integers(last_start + 1, len(text) - 2), label="cut")
        path.write_bytes(text[:cut])
        after_kill = ResultStore(path, config={"n": 1})
        kept = dict(list(records.items())[:-1])
        assert {k: after_kill.get(k) for k in kept} == {
            k: json.loads(json.dumps(v)) for k, v in kept.items()
        }
        assert len(after_kill) == len(kept)
        after_kill.put("next", 1)
        assert ResultStore(path, config={"n": 1}).get("next") == 1
