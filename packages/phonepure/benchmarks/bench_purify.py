"""Stage-1 purification of a 10-s utterance: chunks in one batch vs a per-chunk loop (spec
section 6, target >= 3x on CPU), and the real-time factor of each stage.

Run: ``python benchmarks/bench_purify.py [--device cuda] [--paper]``.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from phonepure import DiffWave, DiffWavePurifier, PhonemeGuidedRefiner, ScoreUNet


def _time(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--paper", action="store_true", help="paper-size DiffWave (256 ch, 36 layers)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dev = torch.device(args.device)
    torch.manual_seed(0)
    size = (256, 256, 36, 12) if args.paper else (32, 32, 6, 6)
    dw = DiffWave(*size).to(dev).eval()
    wav = (0.3 * torch.sin(torch.arange(160000, device=dev) / 9.0))[None]
    seconds = wav.shape[-1] / 16000
    with torch.no_grad():
        batched = _time(lambda: DiffWavePurifier(dw, batch_chunks=True)(wav), args.repeat)
        looped = _time(lambda: DiffWavePurifier(dw, batch_chunks=False)(wav), args.repeat)
    print(f"device {dev}, DiffWave {size}, 10-s utterance, t*=3")
    print(f"stage 1 batched: {batched:.3f} s (RTF {batched / seconds:.3f})")
    print(f"stage 1 looped : {looped:.3f} s (RTF {looped / seconds:.3f})")
    print(f"batched speed-up: {looped / batched:.2f}x (target >= 3x)")
    base = 32 if args.paper else 8
    ref = PhonemeGuidedRefiner(ScoreUNet(6, base, 3).to(dev).eval(), N=30)
    short = wav[:, :48000].cpu()
    stage2 = _time(lambda: ref(short), 1)
    print(
        f"stage 2 (U-Net base {base}, N=30, 3-s clip, CPU tensors): {stage2:.2f} s "
        f"(RTF {stage2 / 3:.2f})"
    )


if __name__ == "__main__":
    main()
