"""Pipeline throughput with a no-op captioner (target >= 500 img/s per core, PIL-decode bound)
and overhead with a captioner sleeping 10 ms per image (target < 5 % wall time), in one process.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_pipeline.py [--images 2048]``.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from recap_datacomp.pipeline import recaption_shards
from recap_datacomp.shards import encode_image, write_shard


def noop(images, prompts=None):
    return [""] * len(images)


def sleeper(images, prompts=None):
    time.sleep(0.010 * len(images))
    return ["x"] * len(images)


def make(folder: Path, n: int, per_shard: int = 512) -> list[str]:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    img = np.kron(base, np.ones((4, 4, 1), dtype=np.uint8))  # 256x256, JPEG-compressible
    jpg = encode_image(img)
    paths = []
    for s in range(0, n, per_shard):
        samples = [
            {"__key__": f"{s + i:08d}", "jpg": jpg, "txt": "alt"}
            for i in range(min(per_shard, n - s))
        ]
        path = folder / f"{s // per_shard:05d}.tar"
        write_shard(str(path), samples)
        paths.append(str(path))
    return paths


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=2048)
    ap.add_argument("--sleep-images", type=int, default=512)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shards = make(root / "in", args.images) if (root / "in").mkdir() is None else []
        t0 = time.perf_counter()
        recaption_shards(shards, root / "noop", noop, batch_size=64, show_progress=False)
        noop_s = time.perf_counter() - t0
        small = make(root / "in2", args.sleep_images) if (root / "in2").mkdir() is None else []
        t0 = time.perf_counter()
        recaption_shards(small, root / "sleep", sleeper, batch_size=64, show_progress=False)
        sleep_s = time.perf_counter() - t0
    ideal = 0.010 * args.sleep_images
    out = {
        "noop_img_per_s_one_core": args.images / noop_s,
        "target_noop": ">= 500",
        "sleep_wall_s": sleep_s,
        "sleep_ideal_s": ideal,
        "overhead_ratio": sleep_s / ideal - 1,
        "target_overhead": "< 0.05",
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
