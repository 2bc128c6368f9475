"""Wall speed-up of ReFrame policies against the plain model, in one process (spec §6).

Baseline vs ReFrame on 60 frames of Debian opencv-doc's vtest.avi (random frames if it is
missing), demo U-Net widths (16, 32, 64, 128) at 96x128, batch 1, warm-up 5, median of 5,
threads fixed; on CUDA: synchronised, TF32 off. Prints, per policy: skip rate, FLOP cut, Amdahl
bound, wall speed-up; then the hit/full wall ratio against F_hit/F_full and the trigger's cost
against a full frame. "unreliable" when the 1-minute load exceeds the core count.
Gated on correctness: tests/test_wrapper.py (exact refresh frames, exact FLOPs) and
tests/test_kernels_smape.py (the fused trigger).

    python benchmarks/bench_reframe.py [--device cuda] [--frames 60] [--threads 1]
"""

import argparse
import datetime
import platform
import warnings

import torch
from reframe_cache import UNet, bench_run
from reframe_cache.bench import machine_info

POLICIES = ["always", "N-2", "N-4", "N-8", "delta-0.05", "delta-0.1"]


def frames(n: int, device) -> tuple[torch.Tensor, str]:
    try:
        from reframe_cache.data import opencv_sample, video_frames

        return video_frames(opencv_sample("vtest.avi"), (96, 128), n=n).to(device), "vtest.avi"
    except (FileNotFoundError, ImportError):
        return torch.rand(n, 3, 96, 128, generator=torch.Generator().manual_seed(0)), "random"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    net = UNet(3, 3, widths=(16, 32, 64, 128), residual=True).to(device).eval()
    seq, source = frames(args.frames, device)
    info = machine_info(device)
    print(
        f"{datetime.date.today()} | {platform.machine()} {info['device_name']}, "
        f"{info['cores']} cores, {args.threads} thread(s), torch {torch.__version__} | "
        f"{source}, {args.frames} frames 96x128, batch 1 | load {info['load_1min']:.2f}"
        + (" - UNRELIABLE (loaded)" if info["unreliable"] else "")
    )
    print(
        "| policy | skip rate | FLOP cut | Amdahl bound | baseline (ms/frame) | ReFrame "
        "(ms/frame) | wall speed-up |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    last = None
    for policy in POLICIES:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = bench_run(
                net, seq, cache="up1", policy=policy, warmup=5, repeats=5, with_flip=False
            )
        for w in caught:
            print(f"warning: {w.message}")
        print(
            f"| {policy} | {r.skip_rate:.2f} | {100 * r.flops_reduction:.1f} % | "
            f"{r.amdahl_bound:.2f}x | {1e3 * r.wall_baseline_s / r.frames:.2f} | "
            f"{1e3 * r.wall_reframe_s / r.frames:.2f} | {r.speedup:.2f}x |"
        )
        last = r
    assert last is not None
    f_ratio = last.flops_hit / last.flops_full
    w_ratio = last.wall_hit_s / last.wall_full_s
    print(
        f"hit/full: wall {w_ratio:.3f} vs FLOPs {f_ratio:.3f} (ratio {w_ratio / f_ratio:.2f}, "
        "target <= 1.3)"
    )
    print(
        f"trigger (SMAPE of two frames): {1e3 * last.wall_trigger_s:.3f} ms = "
        f"{100 * last.wall_trigger_s / last.wall_full_s:.2f} % of a full frame (target <= 2 %)"
    )


if __name__ == "__main__":
    main()
