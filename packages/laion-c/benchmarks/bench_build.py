"""Builder throughput (images/s of corrupted outputs, JPEG q=100 included) with 1 and 2 worker
processes on 8 real photos x 30 cells. Spec §6 target: 2 workers >= 1.6x one.
Run: ``python benchmarks/bench_build.py``.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path

import skimage.data
from laion_c import build_dataset, build_tiles
from PIL import Image

PHOTOS = ["chelsea", "astronaut", "coffee", "rocket", "immunohistochemistry", "retina",
          "hubble_deep_field", "colorwheel"]  # fmt: skip


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        images = [Image.fromarray(getattr(skimage.data, name)()) for name in PHOTOS]
        for name, image in zip(PHOTOS, images, strict=True):
            image.save(src / f"{name}.png")
        tiles = build_tiles(images, crops_per_image=300, rng=0)
        rates = {}
        for workers in (1, 2):
            start = time.perf_counter()
            stats = build_dataset(src, Path(tmp) / f"out{workers}", tiles=tiles, workers=workers)
            rates[workers] = stats["written"] / (time.perf_counter() - start)
    print(f"# bench_build — {len(PHOTOS)} photos x 30 cells; {platform.machine()}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print("| workers | images/s | speed-up |")
    print("| --- | --- | --- |")
    for workers, rate in rates.items():
        print(f"| {workers} | {rate:.1f} | {rate / rates[1]:.2f}x |")


if __name__ == "__main__":
    main()
