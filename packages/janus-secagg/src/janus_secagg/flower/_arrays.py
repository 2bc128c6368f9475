"""Flatten a Flower ``ArrayRecord`` to one float64 vector and back (same keys and shapes), and
digest it for the first-round model pin."""

import hashlib
import json

import numpy as np

from icml25_core.extras import requires_extra

with requires_extra("janus-secagg", "flower"):
    from flwr.app import Array, ArrayRecord


def flatten(record) -> np.ndarray:
    """All arrays of `record`, in key order, as one float64 vector."""
    return np.concatenate([record[k].numpy().astype(np.float64).ravel() for k in record])


def unflatten(vector: np.ndarray, template):
    """An ``ArrayRecord`` with `template`'s keys, shapes and dtypes filled from `vector`."""
    arrays, start = {}, 0
    for key in template:
        like = template[key].numpy()
        arrays[key] = Array(
            vector[start : start + like.size].reshape(like.shape).astype(like.dtype)
        )
        start += like.size
    if start != len(vector):
        raise ValueError(f"`vector` has {len(vector)} values, the model {start}")
    return ArrayRecord(arrays)


def model_digests(record) -> tuple[bytes, bytes]:
    """SHA-256 of `record`'s layout (names, dtypes, shapes, in order) and SHA-256 of the layout
    digest and the values (raw bytes, C order): what ``ModelPin`` pins (issue 16, hole 1)."""
    layout = hashlib.sha256()
    arrays = [(k, np.ascontiguousarray(record[k].numpy())) for k in record]
    for key, array in arrays:
        layout.update(json.dumps([key, array.dtype.str, list(array.shape)]).encode() + b"\n")
    model = hashlib.sha256(layout.digest())
    for _, array in arrays:
        model.update(array.tobytes())
    return layout.digest(), model.digest()
