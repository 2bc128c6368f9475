"""Shared test helpers: small shards of random JPEGs and cheap deterministic captioners."""

import json
import typing

import numpy as np
from recap_datacomp.shards import encode_image, write_shard


def make_shards(folder, n_shards=3, per_shard=10, seed=0, size=16):
    """``n_shards`` shards ``{i:05d}.tar`` with JPEG, txt and json(url) members; returns paths."""
    rng = np.random.default_rng(seed)
    paths = []
    for s in range(n_shards):
        samples = []
        for i in range(per_shard):
            key = f"{s:05d}{i:04d}"
            img = rng.integers(0, 256, (size + i % 3, size, 3), dtype=np.uint8)
            samples.append(
                {
                    "__key__": key,
                    "jpg": encode_image(img),
                    "txt": f"alt text {key}",
                    "json": json.dumps({"url": f"http://example.com/{key}.jpg"}).encode(),
                }
            )
        path = folder / f"{s:05d}.tar"
        write_shard(str(path), samples)
        paths.append(str(path))
    return paths


class HashCaptioner:
    """Deterministic captioner: a caption from the image's pixels; counts calls and images."""

    run_config: typing.ClassVar[dict] = {"model_id": "hash", "prompt_sha256": "0"}

    def __init__(self):
        self.calls = 0
        self.images = 0

    def __call__(self, images, prompts=None):
        self.calls += 1
        self.images += len(images)
        return [f"img {int(np.asarray(im).sum()) % 9973} w{im.size[0]}" for im in images]


class Kill(BaseException):
    """A simulated kill (not an Exception: the pipeline must not swallow it)."""


class KillAt(HashCaptioner):
    """Raises :class:`Kill` on call number `at` (1-based)."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def __call__(self, images, prompts=None):
        if self.calls + 1 == self.at:
            self.calls += 1
            raise Kill()
        return super().__call__(images, prompts)
