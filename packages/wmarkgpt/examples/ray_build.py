"""Build a WQA-Synthetic-style set on a Ray cluster (spec Sec. 7; extra ``[ray]``).

    pip install "wmarkgpt[ray,images]"
    ray start --head            # or connect to your cluster
    python examples/ray_build.py COVERS_DIR LOGOS_DIR OUT_DIR [N]

Each item is a Ray task seeded by its own ``SeedSequence`` child, so the files equal those of
``workers=1`` or a process pool (tested for the pool in tests/test_dataset.py); a rerun resumes
from ``OUT_DIR/records`` and the index is written atomically by the driver. Not run in CI: Ray is
not installed there (DECISIONS 17: the process pool is the tested engine).
"""

import sys
from pathlib import Path

import numpy as np
from PIL import Image
from wmarkgpt import build_synthetic, prepare_logo


def main(covers_dir: str, logos_dir: str, out_dir: str, n: int = 1000) -> None:
    import ray

    ray.init(address="auto")
    covers = sorted(
        str(p) for p in Path(covers_dir).iterdir() if p.suffix.lower() in {".png", ".jpg", ".jpeg"}
    )
    logos = [
        prepare_logo(np.asarray(Image.open(p).convert("RGBA")), name=p.stem)
        for p in sorted(Path(logos_dir).glob("*.png"))
    ]
    records = build_synthetic(covers, logos, n, out_dir, seed=0, executor="ray")
    print(f"{len(records)} records in {Path(out_dir) / 'index.json'}")


if __name__ == "__main__":
    main(*sys.argv[1:4], *(int(a) for a in sys.argv[4:5]))
