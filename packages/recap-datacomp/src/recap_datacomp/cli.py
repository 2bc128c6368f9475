"""Console script of recap-datacomp, the library for "What If We Recaption Billions of Web Images
with LLaMA-3?" (ICML 2025).

Commands: ``caption`` (recaption shards; run it under ``torchrun`` for one process per GPU),
``merge`` (add ``recap.txt`` members to shards), ``stats`` (caption statistics of a recaption
folder), ``train-clip`` (mixed-caption CLIP training, transformers backend) and
``reproduce [--out DIR] [--full]`` (the paper's claims, small, on real input).
"""

import argparse
import json
import os

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def build_parser():
    """The argument parser of the ``recap-datacomp`` console script."""
    parser, commands = console_parser("recap-datacomp", __version__, __doc__)
    cap = commands.add_parser(
        "caption",
        help="recaption webdataset shards into parquet (resumable; torchrun-aware)",
        description="Recaption shards with a transformers image-text-to-text model. Under "
        "torchrun each rank takes its share of the shards (RANK/WORLD_SIZE).",
    )
    cap.add_argument(
        "shards", help='shard paths or a brace pattern, e.g. "shards/{00000..00099}.tar"'
    )
    cap.add_argument("out", help="output folder (one <stem>.parquet + <stem>_stats.json per shard)")
    cap.add_argument("--model", required=True, help="local path (or hub id) of the captioner")
    cap.add_argument("--prompt", default=None, help="instruction (default: the paper's prompt)")
    cap.add_argument("--max-new-tokens", type=_positive_int, default=128)
    cap.add_argument("--batch-size", type=_positive_int, default=16)
    cap.add_argument("--checkpoint-every", type=_positive_int, default=512)
    cap.add_argument("--image-keys", default="jpg;png;jpeg;webp")
    cap.add_argument("--text-key", default="txt", help='original caption, or "json:org_caption"')
    cap.add_argument("--device", default=None, help="e.g. cuda (default: cuda:LOCAL_RANK if any)")
    cap.add_argument("--force", action="store_true", help="redo finished shards")
    cap.add_argument("--no-resume", action="store_true", help="start partial shards again")
    mer = commands.add_parser("merge", help="add <key>.recap.txt members to shards")
    mer.add_argument("shards")
    mer.add_argument("recaps", help="folder written by `caption`")
    mer.add_argument("out", help="folder for the new shards")
    st = commands.add_parser("stats", help="caption statistics of a recaption folder (JSON)")
    st.add_argument("recaps")
    st.add_argument("--context-length", type=_positive_int, default=77)
    tr = commands.add_parser(
        "train-clip",
        help="train a transformers CLIPModel on mixed captions (torchrun-aware)",
        description="Mixed-caption CLIP training: text = recap.txt with probability p.",
    )
    tr.add_argument("train_data", help="merged shards (brace pattern)")
    tr.add_argument(
        "--model", required=True, help="folder with a CLIPModel, its tokenizer and image processor"
    )
    tr.add_argument("--out", required=True, help="where the trained model is saved")
    tr.add_argument("--p", type=_probability, default=0.8, help="recaption probability (0.8)")
    tr.add_argument("--steps", type=_positive_int, default=1000)
    tr.add_argument("--batch-size", type=_positive_int, default=256)
    tr.add_argument("--lr", type=float, default=5e-4)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--workers", type=int, default=2)
    add_reproduce_command(
        commands,
        description="Measure the paper's claims on real input; write the report "
        "as <out>/recap-datacomp.md and .json.",
    )
    return parser


def _caption(args) -> int:
    from .captioners import RECAP_PROMPT, HFCaptioner
    from .distributed import run_torchrun

    def factory():
        import torch

        device = args.device
        if device is None and torch.cuda.is_available():
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % torch.cuda.device_count()}"
        return HFCaptioner.from_pretrained(
            args.model,
            prompt=args.prompt or RECAP_PROMPT,
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size,
            device=device,
        )

    stats = run_torchrun(
        args.shards,
        args.out,
        factory,
        batch_size=args.batch_size,
        checkpoint_every=args.checkpoint_every,
        resume=not args.no_resume,
        force=args.force,
        image_keys=args.image_keys,
        text_key=args.text_key,
    )
    print(json.dumps({k: v for k, v in stats.items() if k != "ranks"}))
    return 0


def _stats(args) -> int:
    from .metrics import caption_stats
    from .pipeline import read_recaptions

    table = read_recaptions(args.recaps).to_pydict()
    ok = [c for c, s in zip(table["re_caption"], table["status"], strict=True) if s == "ok"]
    out = {
        "rows": len(table["key"]),
        "ok": len(ok),
        "re_caption": caption_stats(ok, context_length=args.context_length) if ok else None,
        "org_caption": caption_stats(table["org_caption"], context_length=args.context_length),
    }
    print(json.dumps(out, indent=1))
    return 0


def _train(args) -> int:
    import torch
    from transformers import AutoImageProcessor, AutoTokenizer, CLIPModel

    from .captioners import check_model_path
    from .clip import HFCLIPBackend, train_clip
    from .mixing import mixed_caption_loader

    check_model_path(args.model, "--model")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    images = AutoImageProcessor.from_pretrained(args.model)
    model = CLIPModel.from_pretrained(args.model)
    pad = tokenizer.pad_token_id or 0
    ctx = int(getattr(model.config.text_config, "max_position_embeddings", 77))

    def tokenize(texts):
        return tokenizer(
            texts, padding="max_length", truncation=True, max_length=ctx, return_tensors="pt"
        )["input_ids"]

    def preprocess(image):
        return images(images=image, return_tensors="pt")["pixel_values"][0]

    loader = mixed_caption_loader(
        args.train_data,
        p=args.p,
        preprocess=preprocess,
        tokenizer=tokenize,
        batch_size=args.batch_size,
        num_workers=args.workers,
        seed=args.seed,
        resampled=True,
        with_keys=True,
    )  # each rank (and worker) reads a disjoint share of every pass over the shards
    first_keys: list[str] = []

    def batches():
        for pixels, tokens, keys, _ in loader:
            if not first_keys:
                first_keys.extend(keys)
            yield pixels, tokens

    losses = train_clip(HFCLIPBackend(model, pad_id=pad), batches(), steps=args.steps, lr=args.lr)
    rank = int(os.environ.get("RANK", "0"))
    if rank == 0:
        model.save_pretrained(args.out)
        tokenizer.save_pretrained(args.out)
        images.save_pretrained(args.out)
    result: dict[str, object] = {"rank": rank, "first_loss": losses[0], "last_loss": losses[-1]}
    mixer = loader.mixer  # counts add up all DataLoader workers (trial 20b M2)
    result["mix"] = {
        "n_total": mixer.n_total,
        "n_recap": mixer.n_recap,
        "n_missing": mixer.n_missing,
    }
    if args.p > 0 and mixer.n_missing > 0.5 * args.p * max(mixer.n_total, 1):
        import sys

        print(
            f"warning: {mixer.n_missing} of {mixer.n_total} draws wanted a recaption that is "
            "missing (the original caption was used); check the merged shards' recap members",
            file=sys.stderr,
        )
    print(json.dumps({**result, "first_batch_keys": first_keys}))
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return 0


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    if args.command == "caption":
        return _caption(args)
    if args.command == "merge":
        from .merge import merge_recaptions

        for path in merge_recaptions(args.shards, args.recaps, args.out):
            print(path)
        return 0
    if args.command == "stats":
        return _stats(args)
    if args.command == "train-clip":
        return _train(args)
    parser.error(f"unknown command {args.command}")  # pragma: no cover
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
