"""ms per 224 x 224 image for every distortion x level (one process, one thread), against the
loop references of ``laion_c._reference`` and the peer imagecorruptions-imaug 1.1.5
(``corrupt(severity=3)``, median over its corruptions). Spec §6 targets: each distortion
<= 50 ms; vertical_lines >= 20x its reference. Run: ``python benchmarks/bench_distortions.py``.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import skimage.data
import torch
from laion_c import DISTORTIONS, LEVELS, PARAMS, _reference, build_tiles, distort, preprocess
from PIL import Image

torch.set_num_threads(1)


def timed(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def reference(name, array, level, tiles):
    if name == "vertical_lines":
        return lambda: _reference.vertical_lines(array, level)
    if name == "geometric_shapes":
        return lambda: _reference.geometric_shapes(array, level, np.random.RandomState(0))
    if name == "stickers":
        return lambda: _reference.stickers(array, level, tiles[16].tiles, np.random.RandomState(0))
    if name == "luminance_checkerboard":
        return lambda: _reference.luminance_checkerboard(array, level, np.random.RandomState(0))
    if name == "mosaic":
        t = PARAMS["mosaic"][level]
        return lambda: _reference.mosaic(array, level, tiles[t].tiles)
    return None  # glitched: the peer is glitch-this itself (tested bit-exact)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    photo = Image.fromarray(skimage.data.chelsea())
    sources = [Image.fromarray(skimage.data.astronaut()), Image.fromarray(skimage.data.coffee())]
    tiles = build_tiles(sources, crops_per_image=2500, rng=0)  # 5002 tiles per size
    print(
        f"# bench_distortions — {platform.machine()}, Python {platform.python_version()}, 1 thread"
    )
    print("| distortion | level | ours (ms) | reference (ms) | reference / ours |")
    print("| --- | --- | --- | --- | --- |")
    worst = {}
    for name in DISTORTIONS:
        for level in LEVELS:
            array = np.asarray(preprocess(photo, name, level))

            def ours_fn(array=array, name=name, level=level):
                return distort(array, name, level, rng=0, tiles=tiles)

            ours = timed(ours_fn, args.repeats)
            worst[name] = max(worst.get(name, 0.0), ours)
            ref = reference(name, array, level, tiles)
            if ref is None:
                print(f"| {name} | {level} | {ours:.2f} | — | — |")
                continue
            ref_ms = timed(ref, max(1, args.repeats // 3))
            print(f"| {name} | {level} | {ours:.2f} | {ref_ms:.1f} | {ref_ms / ours:.1f}x |")
    try:
        from imagecorruptions import corrupt, get_corruption_names
    except ImportError:
        print("\nimagecorruptions-imaug not installed (pip install 'laion-c[bench]'): peer skipped")
        return
    array = np.asarray(preprocess(photo, "glitched", 1))
    peer = {
        c: timed(lambda c=c: corrupt(array, corruption_name=c, severity=3), 3)
        for c in get_corruption_names("all")
    }
    median = float(np.median(list(peer.values())))
    print(
        f"\npeer imagecorruptions-imaug corrupt(severity=3): median {median:.1f} ms "
        f"over {len(peer)} corruptions"
    )
    print("| distortion | worst level, ours (ms) | peer median / ours | <= 50 ms |")
    print("| --- | --- | --- | --- |")
    for name, ms in worst.items():
        print(f"| {name} | {ms:.2f} | {median / ms:.1f}x | {'met' if ms <= 50 else 'missed'} |")


if __name__ == "__main__":
    main()
