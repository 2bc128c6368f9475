"""Spec §5 test 13 (PRG) and 6 (masked bytes uniform): checked against PyCryptodome, a peer
implementation of HKDF-SHA256 and ChaCha20 (RFC 5869, RFC 8439)."""

import numpy as np
import pytest
from Crypto.Cipher import ChaCha20 as PeerChaCha20
from Crypto.Hash import SHA256 as PeerSHA256
from Crypto.Protocol.KDF import HKDF as peer_hkdf
from janus_secagg import mask, quantize
from janus_secagg.client import mask_and_commit
from janus_secagg.commitment import PedersenBLS12381
from scipy.stats import chisquare

SEED = bytes(range(32))
DOMAIN = b"JANUS-SECAGG-v1"


def peer_mask(seed, round_id, length, domain):
    key = peer_hkdf(seed, 32, b"", PeerSHA256, context=domain + round_id.to_bytes(8, "big"))
    stream = PeerChaCha20.new(key=key, nonce=bytes(12)).encrypt(bytes(8 * length))
    return np.frombuffer(stream, dtype="<u8")


@pytest.mark.parametrize("length", [1, 7, 1000])
def test_mask_equals_peer_hkdf_chacha20_keystream(length):
    assert np.array_equal(mask(SEED, 5, length, DOMAIN), peer_mask(SEED, 5, length, DOMAIN))


def test_other_round_or_seed_gives_other_mask():
    base = mask(SEED, 1, 64, DOMAIN)
    assert not np.array_equal(base, mask(SEED, 2, 64, DOMAIN))
    assert not np.array_equal(base, mask(bytes(32), 1, 64, DOMAIN))
    assert not np.array_equal(base, mask(SEED, 1, 64, b"other"))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"seed": b"short"}, ValueError, "seed"),
        ({"round_id": -1}, ValueError, "round_id"),
        ({"length": 0}, ValueError, "length"),
        ({"domain": ""}, TypeError, "domain"),
    ],
)
def test_mask_rejects_bad_input(kwargs, error, match):
    args = {"seed": SEED, "round_id": 1, "length": 4, "domain": DOMAIN, **kwargs}
    with pytest.raises(error, match=match):
        mask(**args)


@pytest.mark.parametrize("extreme", ["zero", "max"])
def test_masked_bytes_are_uniform(extreme, ck, params):
    # x = 0 (u = -C everywhere) and x = max (u = +C): y's bytes must look uniform (chi^2).
    u = np.full(params.dim, -params.clip if extreme == "zero" else params.clip)
    x = quantize(u, params.max_total_weight, params)
    counts = np.zeros(256, dtype=np.int64)
    for k in range(400):
        y, _ = mask_and_commit(params, ck, PedersenBLS12381(), x, k.to_bytes(32, "big"), 1, 1, 1)
        counts += np.bincount(y.astype("<u8").view(np.uint8), minlength=256)
    assert chisquare(counts).pvalue > 1e-3
