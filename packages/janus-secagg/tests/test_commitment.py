"""Spec §5 tests 3 (homomorphism, MSM against a naive sum) and 4 (generators and their cache)."""

import subprocess
import sys

import numpy as np
import pytest
from janus_secagg import Commitment, CommitmentKey, JanusParams, PedersenBLS12381
from janus_secagg.commitment import SeparableCommitment
from janus_secagg.params import GROUP_ORDER
from py_arkworks_bls12381 import G1Point, Scalar

SCHEME = PedersenBLS12381()


def test_scheme_satisfies_protocol():
    assert isinstance(SCHEME, SeparableCommitment)


def test_sum_of_commitments_commits_to_sum(ck, params):
    rng = np.random.default_rng(1)
    xs = rng.integers(0, 2**40, size=(4, params.length))
    rhos = [(int(a), int(b)) for a, b in rng.integers(0, 2**62, size=(4, 2))]
    rhos[0] = (GROUP_ORDER - 1, GROUP_ORDER - 2)  # wraps modulo r
    total = Commitment.zero()
    for x, (a, b) in zip(xs, rhos, strict=True):
        total = total + SCHEME.commit(ck, x, a, b)
    summed = SCHEME.commit(
        ck,
        xs.sum(axis=0),
        sum(a for a, _ in rhos) % GROUP_ORDER,
        sum(b for _, b in rhos) % GROUP_ORDER,
    )
    assert total == summed
    assert SCHEME.check_opening(
        ck, total, xs.sum(axis=0), sum(a + b for a, b in rhos) % GROUP_ORDER
    )
    assert not SCHEME.check_opening(ck, total, xs.sum(axis=0) + 1, 0)


def test_msm_equals_naive_sum_for_l16(ck, params):
    assert params.length == 17  # l = 16 plus the weight coordinate
    rng = np.random.default_rng(2)
    x = rng.integers(0, 2**63, size=params.length, dtype=np.int64)
    x[3] = 0
    rho = 12345678901234567890
    naive = ck.h * Scalar(rho)
    for j, value in enumerate(x):
        naive = naive + ck.generators[j] * Scalar(int(value))
    assert SCHEME.commit(ck, x, rho, 0).point == naive


def test_generators_in_subgroup_and_distinct(ck):
    points = [*ck.generators, ck.h]
    assert all(p.is_in_subgroup() for p in points)
    encoded = {bytes(p.to_compressed_bytes()) for p in points}
    assert len(encoded) == len(points)
    assert G1Point.identity().to_compressed_bytes() not in encoded


def test_generators_same_in_two_processes(ck):
    code = (
        "from janus_secagg import CommitmentKey, JanusParams;"
        "k = CommitmentKey.derive(JanusParams(dim=16));"
        "print(''.join(bytes(p.to_compressed_bytes()).hex() for p in (*k.generators, k.h)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    ours = "".join(bytes(p.to_compressed_bytes()).hex() for p in (*ck.generators, ck.h))
    assert out.stdout.strip() == ours


def test_cache_identical_to_fresh_and_corruption_rejected(tmp_path):
    params = JanusParams(dim=5)
    fresh = CommitmentKey.derive(params)
    written = CommitmentKey.derive(params, cache_dir=tmp_path)
    loaded = CommitmentKey.derive(params, cache_dir=tmp_path)
    for key in (written, loaded):
        assert list(key.generators) == list(fresh.generators)
        assert key.h == fresh.h
    path = tmp_path / CommitmentKey.cache_name(params)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="corrupted"):
        CommitmentKey.derive(params, cache_dir=tmp_path)
    path.write_bytes(bytes(raw[:-96]))
    with pytest.raises(ValueError, match="corrupted"):
        CommitmentKey.derive(params, cache_dir=tmp_path)


def test_cache_with_valid_digest_but_swapped_generator_rejected(tmp_path):
    import hashlib

    params = JanusParams(dim=5)
    CommitmentKey.derive(params, cache_dir=tmp_path)
    path = tmp_path / CommitmentKey.cache_name(params)
    raw = path.read_bytes()
    body = bytearray(raw[40:])
    body[:96], body[96:192] = body[96:192], body[:96]
    path.write_bytes(raw[:8] + hashlib.sha256(bytes(body)).digest() + bytes(body))
    with pytest.raises(ValueError, match="corrupted"):
        CommitmentKey.derive(params, cache_dir=tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"x": np.zeros(3, dtype=np.int64)}, ValueError, "`x`"),
        ({"x": np.full(17, -1, dtype=np.int64)}, ValueError, "`x`"),
        ({"x": np.zeros(17)}, TypeError, "`x`"),
        ({"rho_a": -1}, ValueError, "rho_a"),
        ({"rho_b": GROUP_ORDER}, ValueError, "rho_b"),
    ],
)
def test_commit_rejects_bad_input(ck, kwargs, error, match):
    args = {"x": np.zeros(17, dtype=np.int64), "rho_a": 0, "rho_b": 0, **kwargs}
    with pytest.raises(error, match=match):
        SCHEME.commit(ck, **args)


def test_derive_rejects_bad_params():
    with pytest.raises(TypeError, match="params"):
        CommitmentKey.derive({"dim": 3})


def test_derive_rejects_a_file_as_cache_dir(params, tmp_path):
    # trial finding F13: used to raise FileExistsError from pathlib
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match="cache_dir"):
        CommitmentKey.derive(params, cache_dir=path)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00" * 47,  # truncated
        b"\x80" + b"\xff" * 47,  # x >= p: not a field element
        b"\xa0" + b"\x00" * 47,  # bad flags
    ],
)
def test_commitment_decoding_rejects_invalid_points(data):
    with pytest.raises(ValueError, match="commitment"):
        Commitment.from_bytes(data)


def test_commitment_decoding_rejects_non_subgroup_point():
    # A point on y^2 = x^3 + 4 outside the order-r subgroup (cofactor ~2^126): the first x whose
    # right-hand side is a square mod p (Euler's criterion), compressed with the 0x80 flag.
    p = int(
        "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF"
        "6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
        16,
    )  # the BLS12-381 base field prime
    x = next(x for x in range(1, 100) if pow(x**3 + 4, (p - 1) // 2, p) == 1)
    data = bytearray(x.to_bytes(48, "big"))
    data[0] |= 0x80
    assert G1Point.from_compressed_bytes_unchecked(bytes(data)).is_in_subgroup() is False
    with pytest.raises(ValueError, match="commitment"):
        Commitment.from_bytes(bytes(data))
