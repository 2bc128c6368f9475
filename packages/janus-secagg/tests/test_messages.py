"""Spec §5 test 14: serialisation round trip; truncated, wrong version, bad points rejected."""

import numpy as np
import pytest
from janus_secagg import AggA, AggB, ParticipantSet, ToA, ToB
from janus_secagg.testing import random_codes


@pytest.fixture
def round_messages(federation, params):
    fed = federation(4)
    agg_a, agg_b, msgs = fed.run_round(1, random_codes(params, np.random.default_rng(16), 4))
    pset = ParticipantSet.from_bytes(fed.A.participants([]).to_bytes())
    return {ToA: msgs[0][0], ToB: msgs[0][1], AggA: agg_a, AggB: agg_b, ParticipantSet: pset}


@pytest.mark.parametrize("cls", [ToA, ToB, AggA, AggB, ParticipantSet])
def test_round_trip(round_messages, cls):
    msg = round_messages[cls]
    data = msg.to_bytes()
    again = cls.from_bytes(data)
    assert again == msg
    assert again.to_bytes() == data


@pytest.mark.parametrize("cls", [ToA, ToB, AggA, AggB, ParticipantSet])
def test_truncated_wrong_version_wrong_type_trailing_rejected(round_messages, cls):
    data = round_messages[cls].to_bytes()
    with pytest.raises(ValueError, match="truncated"):
        cls.from_bytes(data[:-1])
    with pytest.raises(ValueError, match="version"):
        cls.from_bytes(bytes([1]) + data[1:])  # version 1: U as a digest only
    with pytest.raises(ValueError, match="type"):
        cls.from_bytes(data[:1] + bytes([99]) + data[2:])
    with pytest.raises(ValueError, match="trailing"):
        cls.from_bytes(data + b"\x00")
    with pytest.raises(TypeError, match="data"):
        cls.from_bytes("text")


P = int(
    "1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF"
    "6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB",
    16,
)  # the BLS12-381 base field prime


def _off_curve():
    x = next(x for x in range(1, 100) if pow(x**3 + 4, (P - 1) // 2, P) != 1)
    data = bytearray(x.to_bytes(48, "big"))
    data[0] |= 0x80
    return bytes(data)


def _non_subgroup():
    x = next(x for x in range(1, 100) if pow(x**3 + 4, (P - 1) // 2, P) == 1)
    data = bytearray(x.to_bytes(48, "big"))
    data[0] |= 0x80
    return bytes(data)


@pytest.mark.parametrize("bad", [_off_curve(), _non_subgroup()], ids=["off-curve", "non-subgroup"])
@pytest.mark.parametrize("cls", [ToA, ToB, AggA, AggB])
def test_bad_point_rejected(round_messages, cls, bad):
    msg = round_messages[cls]
    data = msg.to_bytes()
    good = msg.commitment.to_bytes()
    assert data.count(good) == 1
    with pytest.raises(ValueError, match="commitment"):
        cls.from_bytes(data.replace(good, bad))


def test_unreduced_scalar_rejected(round_messages):
    msg = round_messages[ToA]
    data = msg.to_bytes()
    rho = msg.rho_a.to_bytes(32, "little")
    with pytest.raises(ValueError, match="scalar"):
        ToA.from_bytes(data.replace(rho, b"\xff" * 32))
