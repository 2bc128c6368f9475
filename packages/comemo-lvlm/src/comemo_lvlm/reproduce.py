"""Reproduce CoMemo's RoPE-DHR claims, small, on real photos (scikit-image's bundled images).

Run by ``comemo-lvlm reproduce [--out reports] [--full]`` or ``nox -s reproduce -- comemo-lvlm``;
writes ``reports/comemo-lvlm.{md,json}`` and ``comemo-lvlm-decay.png``.

Part 1 (exact): position budget, mean distance from the last prompt token to the image tokens,
and RoFormer's decay bound, DHR vs plain RoPE. Part 2 (mechanism): a tiny random Llama with the
memory path and a tiny random CLIP ViT on the same photos: gate 0 is the identity, cached
decoding equals a full recompute (the official decode drifts), packed equals unpacked.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core import Claim, Report, Verdict

# ---- pass rules, fixed before the first run (never moved) ----------------------------------
TOL_EXACT = 1e-3  # spec: the distance/bound values to 1e-3
EXPECTED_GRID = {
    "astronaut": (1, 1),
    "coffee": (3, 2),
    "hubble_deep_field": (2, 2),
    "retina": (3, 3),
    "coins": (4, 3),
}
DHR_VALUES = (148.5, 14.184)  # every grid, exact layout (= a 1x1 image)
PLAIN_VALUES = {
    "astronaut": (148.5, 14.184),
    "coffee": (916.5, 10.498),
    "hubble_deep_field": (660.5, 11.129),
    "retina": (1300.5, 9.879),
    "coins": (1684.5, 9.421),
}
GEN_ATOL = 1e-4  # spec test 8
PACK_ATOL = 1e-5  # spec test 7
DRIFT_MIN = 1e-3  # the official decode is "drifting" when a step's logits differ by more
PRE, POST, T, HEAD_DIM, BASE = 10, 20, 16, 128, 1e6


def _images() -> dict[str, Any]:
    import skimage.data
    from PIL import Image

    out = {}
    for name in EXPECTED_GRID:
        arr = getattr(skimage.data, name)()
        out[name] = Image.fromarray(arr).convert("RGB")  # coins is greyscale (DEPNOTES)
    return out


def part1(images: dict[str, Any]) -> tuple[list[Claim], str, dict[str, Any]]:
    """Budgets, distances and decay bounds for one image per prompt."""
    import torch

    from .positions import build_position_ids
    from .rope import rope_decay_bound
    from .tiling import closest_grid

    rows: list[list[str]] = []
    claims: list[Claim] = []
    data: dict[str, dict[str, Any]] = {}
    ok_grid = ok_dhr = ok_plain = ok_budget = True
    for name, img in images.items():
        grid = closest_grid(*img.size, tile=448, max_num=12)
        n_tok = grid.n_images * T * T
        ids = torch.tensor([[5] * PRE + [1] + [0] * n_tok + [2] + [6] * POST])
        res: dict[str, tuple[float, float, int]] = {}
        for mode in ("dhr", "plain"):
            plan = build_position_ids(ids, [[grid]], img_start_id=1, img_end_id=2, T=T, mode=mode)
            pos = plan.position_ids[0].numpy()
            media = plan.media_position_ids[0].numpy()
            dist = pos[-1] - media
            bound = rope_decay_bound(dist.astype(np.float64), HEAD_DIM, BASE)
            res[mode] = (float(dist.mean()), float(bound.mean()), len(np.unique(media)))
        ok_grid &= tuple(grid) == EXPECTED_GRID[name]
        ok_budget &= res["dhr"][2] == T * T
        ok_dhr &= all(
            abs(a - b) <= TOL_EXACT for a, b in zip(res["dhr"][:2], DHR_VALUES, strict=True)
        )
        ok_plain &= all(
            abs(a - b) <= TOL_EXACT
            for a, b in zip(res["plain"][:2], PLAIN_VALUES[name], strict=True)
        )
        ratio = res["plain"][0] / res["dhr"][0]
        rows.append(
            [
                name,
                f"{img.size[0]}x{img.size[1]}",
                f"{grid.cols}x{grid.rows}",
                str(n_tok),
                str(res["dhr"][2]),
                str(res["plain"][2]),
                f"{res['dhr'][0]:.1f}",
                f"{res['plain'][0]:.1f}",
                f"{ratio:.2f} (tiles+1 = {grid.n_images})",
                f"{res['dhr'][1]:.3f}",
                f"{res['plain'][1]:.3f}",
            ]
        )
        data[name] = {
            "grid": tuple(grid),
            "tokens": n_tok,
            "dhr": res["dhr"],
            "plain": res["plain"],
        }
    header = [
        "image",
        "size",
        "grid XxY",
        "image tokens",
        "ids used (DHR)",
        "ids used (plain)",
        "mean dist DHR",
        "mean dist plain",
        "plain/DHR",
        "bound DHR",
        "bound plain",
    ]
    table = "\n".join("| " + " | ".join(r) + " |" for r in [header, ["---"] * len(header), *rows])
    claims.append(
        Claim.judge(
            "InternVL tiling gives the spec's grids (max_num 12)",
            "astronaut 1x1, coffee 3x2, hubble 2x2, retina 3x3, coins 4x3 (spec §4)",
            ", ".join(f"{k} {v['grid'][0]}x{v['grid'][1]}" for k, v in data.items()),
            bool(ok_grid),
            "all five equal",
        )
    )
    claims.append(
        Claim.judge(
            "RoPE-DHR spends exactly T^2 = 256 position ids per image, any resolution",
            "T^2 ids per image (paper §3.2)",
            ", ".join(f"{k} {v['dhr'][2]}" for k, v in data.items()),
            bool(ok_budget),
            "ids used == 256 for every image",
        )
    )
    claims.append(
        Claim.judge(
            "DHR distance / decay bound equal a 1x1 image's for every grid (exact layout)",
            "148.5 / 14.184 (spec §4, d_h 128, base 1e6)",
            "; ".join(f"{k} {v['dhr'][0]:.3f} / {v['dhr'][1]:.4f}" for k, v in data.items()),
            bool(ok_dhr),
            f"|value - expected| <= {TOL_EXACT}",
        )
    )
    claims.append(
        Claim.judge(
            "Plain RoPE distances grow with the tiles, ~(tiles+1)x the DHR ones",
            "coffee 916.5/10.498, hubble 660.5/11.129, retina 1300.5/9.879, coins 1684.5/9.421",
            "; ".join(f"{k} {v['plain'][0]:.3f} / {v['plain'][1]:.4f}" for k, v in data.items()),
            bool(ok_plain),
            f"|value - expected| <= {TOL_EXACT}",
            note="the strongest baseline here is plain RoPE itself (the context-only LVLM's ids)",
        )
    )
    return claims, table, data


def _pixels(tiles: list[Any]) -> Any:
    import torch

    mean = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
    std = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)
    arr = np.stack([(np.asarray(t, dtype=np.float32) / 255.0 - mean) / std for t in tiles])
    return torch.from_numpy(arr).permute(0, 3, 1, 2).contiguous()


def _tiny_llama_config(**overrides: Any) -> dict[str, Any]:
    """Keyword arguments of the reproduce's tiny random ``LlamaConfig`` (4 layers, width 64, GQA
    4/2 heads, RoPE base `BASE`), with `overrides`."""
    return (
        dict(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            rope_theta=BASE,
            attn_implementation="sdpa",
        )
        | overrides
    )


def _tiny_clip_config(image_size: int, patch_size: int) -> dict[str, Any]:
    """Keyword arguments of the reproduce's tiny random ``CLIPVisionConfig`` (1 layer, width 32)."""
    return dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch_size,
        attn_implementation="sdpa",
    )


def part2(images: dict[str, Any]) -> tuple[list[Claim], dict[str, Any]]:
    """Mechanism checks on a tiny random Llama + CLIP ViT fed the real photos."""
    import torch
    from transformers import CLIPVisionConfig, CLIPVisionModel, LlamaConfig, LlamaForCausalLM

    from .attach import attach_memory_path
    from .memory import GatedCrossAttentionBlock
    from .model import CoMemoVLM, PixelShuffleProjector
    from .tiling import dynamic_tiles

    torch.manual_seed(0)
    lm_cfg = _tiny_llama_config(vocab_size=128, max_position_embeddings=8192)
    vit_cfg = _tiny_clip_config(image_size=448, patch_size=14)
    lm = LlamaForCausalLM(LlamaConfig(**lm_cfg)).eval()
    vit = CLIPVisionModel(CLIPVisionConfig(**vit_cfg)).eval()
    path = attach_memory_path(lm, every_n=2)
    model = CoMemoVLM(
        vit, PixelShuffleProjector(32, 64), lm, image_token_id=3, img_start_id=1, img_end_id=2, T=T
    ).eval()
    g = torch.Generator().manual_seed(0)

    def sample(name: str) -> tuple[Any, Any, Any]:
        tiles, grid = dynamic_tiles(images[name], tile=448, max_num=12)
        ids = torch.cat(
            [
                torch.randint(10, 128, (PRE,), generator=g),
                torch.tensor([1]),
                torch.full((grid.n_images * T * T,), 3),
                torch.tensor([2]),
                torch.randint(10, 128, (POST,), generator=g),
            ]
        )
        return ids, _pixels(tiles), [grid]

    claims, data = [], {}
    with torch.no_grad():
        # gate 0 == base
        ids, px, grids = sample("coffee")
        wrapped = model(ids[None], px, [grids]).logits
        blocks = path.blocks
        path.detach()
        base = model(ids[None], px, [grids]).logits
        equal = bool(torch.equal(wrapped, base))
        path = attach_memory_path(lm, every_n=2)
        path.blocks.load_state_dict(blocks.state_dict())
        for blk in path.blocks.values():
            assert isinstance(blk, GatedCrossAttentionBlock)
            blk.attn_gate.fill_(0.5)
            blk.ff_gate.fill_(0.5)
        claims.append(
            Claim.judge(
                "Gate 0 (init): the wrapped LLM's logits equal the base model's bit for bit",
                "tanh(0) = 0: the memory path starts as the identity (paper §3.3)",
                f"torch.equal = {equal} (coffee, 3x2 grid, {ids.numel()} tokens)",
                equal,
                "torch.equal",
            )
        )
        # cached generation == recompute; official decode drifts
        a = sample("astronaut")
        b = sample("hubble_deep_field")
        pad = a[0].numel() - b[0].numel()
        if pad < 0:
            a, b, pad = b, a, -pad
        ids = torch.stack([a[0], torch.cat([torch.zeros(pad, dtype=torch.long), b[0]])])
        am = torch.ones_like(ids)
        am[1, :pad] = 0
        px = torch.cat([a[1], b[1]])
        grids = [a[2], b[2]]
        res = model.generate(ids, px, grids, attention_mask=am, max_new_tokens=8)
        off = model.generate(
            ids, px, grids, attention_mask=am, max_new_tokens=8, compat_decode=True
        )
        cur, cur_am, diffs, drift, toks = ids, am, [], [], []
        for step in range(8):
            lg = model(cur, px, grids, attention_mask=cur_am).logits[:, -1].float()
            diffs.append(float((lg - res.scores[step]).abs().max()))
            drift.append(
                float((lg - off.scores[step]).abs().max()) if step < len(off.scores) else 0.0
            )
            nxt = lg.argmax(-1)
            toks.append(nxt)
            cur = torch.cat([cur, nxt[:, None]], 1)
            cur_am = torch.cat([cur_am, torch.ones_like(am[:, :1])], 1)
        same_tokens = bool(torch.equal(torch.stack(toks, 1), res.sequences))
        ok = same_tokens and max(diffs) <= GEN_ATOL
        claims.append(
            Claim.judge(
                "KV-cached decoding keeps RoPE-DHR: equals a full recompute (8 tokens, alpha 0.5)",
                "spec test 8 (regression for the official decode drift)",
                f"max |logit diff| {max(diffs):.2e}, tokens equal = {same_tokens}",
                ok,
                f"tokens equal and max diff <= {GEN_ATOL}",
            )
        )
        claims.append(
            Claim.judge(
                "The official cached decode (memory queries at the uncompressed length) drifts",
                "spec §9 pitfall (official modeling_comemo_chat.py)",
                f"max |logit diff| vs recompute {max(drift):.2e}",
                max(drift) > DRIFT_MIN,
                f"max diff > {DRIFT_MIN}",
                note="compat_decode=True reproduces it; the default does not drift",
            )
        )
        # packed == unpacked
        c, d = sample("astronaut"), sample("coins")
        la = model(c[0][None], c[1], [c[2]]).logits[0]
        ld = model(d[0][None], d[1], [d[2]]).logits[0]
        packed = model(
            torch.cat([c[0], d[0]])[None],
            torch.cat([c[1], d[1]]),
            [c[2] + d[2]],
            sample_lens=[[c[0].numel(), d[0].numel()]],
        ).logits[0]
        n = c[0].numel()
        pack_diff = max(float((packed[:n] - la).abs().max()), float((packed[n:] - ld).abs().max()))
        claims.append(
            Claim.judge(
                "Packed samples (block-diagonal text and media masks) equal separate forwards",
                "spec test 7 (official packed training)",
                f"max |logit diff| {pack_diff:.2e} (astronaut + coins, {packed.shape[0]} tokens)",
                pack_diff <= PACK_ATOL,
                f"max diff <= {PACK_ATOL}",
            )
        )
        data = {"decode_diffs": diffs, "official_drift": drift, "pack_diff": pack_diff}
    return claims, data


NEEDLE_PHOTOS = ("astronaut", "coffee", "hubble_deep_field", "retina", "coins", "chelsea")


def part3_needle(steps: int = 150, k_images: int = 4, seed: int = 0) -> tuple[str, dict[str, Any]]:
    """Exploratory (``--full``): toy needle retrieval, context path vs context + memory.

    Each sample shows ``k_images`` random crops of real photos (class = which photo), then asks
    "which photo was image j?"; a tiny random Llama + CLIP ViT is trained on the answer token
    only, once with the memory path frozen at gate 0 (context only) and once with it trained.
    Accuracy by the image's depth j is reported, never asserted.
    """
    import skimage.data
    import torch
    from PIL import Image
    from transformers import CLIPVisionConfig, CLIPVisionModel, LlamaConfig, LlamaForCausalLM

    from .attach import attach_memory_path
    from .model import CoMemoVLM, PixelShuffleProjector
    from .tiling import TileGrid

    photos = [
        np.asarray(Image.fromarray(getattr(skimage.data, n)()).convert("RGB"))
        for n in NEEDLE_PHOTOS
    ]
    n_cls, tile, t_side = len(photos), 32, 4
    q0, a0, f0 = 4, 16, 30  # question tokens, answer tokens, filler tokens

    def batch(n: int, rng: np.random.Generator) -> tuple[Any, Any, Any, Any, Any]:
        ids: list[list[int]] = []
        px: list[np.ndarray] = []
        depth: list[int] = []
        for _ in range(n):
            cls = rng.integers(0, n_cls, k_images)
            seq: list[int] = []
            for c in cls:
                ph = photos[int(c)]
                y = int(rng.integers(0, ph.shape[0] - 96))
                x = int(rng.integers(0, ph.shape[1] - 96))
                crop = Image.fromarray(ph[y : y + 96, x : x + 96]).resize((tile, tile))
                px.append(np.asarray(crop, np.float32) / 255.0 - 0.5)
                seq += [int(f0 + rng.integers(0, 30)), 1] + [3] * (t_side * t_side) + [2]
            j = int(rng.integers(0, k_images))
            seq += [int(f0 + rng.integers(0, 30)), q0 + j, a0 + int(cls[j])]
            ids.append(seq)
            depth.append(j)
        ids_t = torch.tensor(ids)
        lab = torch.full_like(ids_t, -100)
        lab[:, -1] = ids_t[:, -1]
        pix = torch.from_numpy(np.stack(px)).permute(0, 3, 1, 2).contiguous()
        return ids_t, pix, lab, np.array(depth), ids_t[:, -1] - a0

    grids = [[TileGrid(1, 1)] * k_images]
    results: dict[str, Any] = {}
    for variant in ("context", "context+memory"):
        torch.manual_seed(seed)
        lm_cfg = _tiny_llama_config(vocab_size=64)
        vit_cfg = _tiny_clip_config(image_size=tile, patch_size=4)
        lm = LlamaForCausalLM(LlamaConfig(**lm_cfg))
        path = attach_memory_path(lm, every_n=2)
        if variant == "context":
            path.blocks.requires_grad_(False)  # gates stay 0: the context path alone
        model = CoMemoVLM(
            CLIPVisionModel(CLIPVisionConfig(**vit_cfg)),
            PixelShuffleProjector(32, 64),
            lm,
            image_token_id=3,
            img_start_id=1,
            img_end_id=2,
            T=t_side,
        )
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            ids, pix, lab, _, _ = batch(16, rng)
            loss = model(ids, pix, grids * 16, labels=lab).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        ids, pix, lab, depth, truth = batch(256, np.random.default_rng(seed + 1))
        with torch.no_grad():
            pred = model(ids, pix, grids * 256).logits[:, -2, a0 : a0 + n_cls].argmax(-1)
        correct = (pred == truth).numpy()
        results[variant] = [float(correct[depth == j].mean()) for j in range(k_images)]
    header = "| variant | " + " | ".join(f"image {j + 1}" for j in range(k_images)) + " |"
    sep = "| --- " * (k_images + 1) + "|"
    lines = [header, sep] + [
        f"| {v} | " + " | ".join(f"{a:.2f}" for a in accs) + " |" for v, accs in results.items()
    ]
    return "\n".join(lines), results


def _plot(out: Path, data: dict[str, Any]) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return None
    from .rope import rope_decay_bound

    x = np.linspace(0, 2000, 2001)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(x, rope_decay_bound(x, HEAD_DIM, BASE), lw=0.8, color="0.5", label="RoFormer bound")
    for name, v in data.items():
        ax.scatter([v["plain"][0]], [v["plain"][1]], marker="o", label=f"{name} plain")
    ax.scatter([DHR_VALUES[0]], [DHR_VALUES[1]], marker="*", s=150, color="k", label="DHR (all)")
    ax.set_xlabel("relative distance (mean, last token to image tokens)")
    ax.set_ylabel("decay bound (d_h 128, base 1e6)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    name = "comemo-lvlm-decay.png"
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def run(full: bool = False, out: str | Path = "reports") -> Report:
    """Measure the claims and return the report.

    Parameters
    ----------
    full : bool, default=False
        Add the exploratory toy needle-retrieval study (context vs context + memory, accuracy
        by image depth; about a minute on 2 cores), reported and never asserted.
    out : str or Path, default="reports"
        Where the plot goes.

    Returns
    -------
    icml25_core.Report
    """
    from icml25_core import progress

    t0 = time.perf_counter()
    report = Report(
        library="comemo-lvlm",
        title="CoMemo: RoPE-DHR positions and the gated memory path (small scale, real photos)",
        setup={
            "images": "scikit-image 0.2x bundled photos",
            "tile": 448,
            "max_num": 12,
            "T": T,
            "prompt": f"{PRE} text, <img>, image, </img>, {POST} text",
            "head_dim": HEAD_DIM,
            "rope_base": BASE,
            "model": "random Llama 4 layers d 64 + CLIP ViT 1 layer, every_n 2",
            "full": full,
        },
    )
    steps = progress(range(2), desc="comemo-lvlm reproduce", total=2)
    images = _images()
    data1: dict[str, Any] = {}
    for step in steps:
        if step == 0:
            claims, table, data1 = part1(images)
            report.claims.extend(claims)
            report.tables["Positions per image (exact layout vs plain RoPE)"] = table
        else:
            claims, data2 = part2(images)
            report.claims.extend(claims)
            report.setup["part2"] = data2
    if full:
        table3, data3 = part3_needle()
        report.tables[
            "Exploratory (--full): toy needle retrieval accuracy by image depth "
            f"(chance {1 / len(NEEDLE_PHOTOS):.2f}; 150 steps, random init; not asserted)"
        ] = table3
        report.setup["needle"] = data3
    fig = _plot(Path(out), data1)
    if fig:
        report.figures.append(fig)
    report.claims.append(
        Claim(
            "Benchmark gains vs LVLM-S at 2B "
            "(+17.2% caption, +7.0% long generation, +5.6% long context)",
            "paper Tab. 2-4",
            "not measured at this scale (needs the 3-stage training of a 2B model)",
            Verdict.NOT_REPRODUCED,
            "",
            note="no trained CoMemo checkpoint is used here",
        )
    )
    report.notes.append(
        "Part 2 uses random weights: it checks the mechanism (identity at init, decode that keeps "
        "DHR, packing), not accuracy. --full adds an exploratory toy needle study (reported, "
        "never asserted)."
    )
    report.runtime_s = time.perf_counter() - t0
    return report


def main(out: str | Path = "reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write ``<out>/comemo-lvlm.{md,json}`` (+ the decay plot).

    Returns
    -------
    tuple of pathlib.Path
        The markdown report and the JSON one beside it.
    """
    return run(full=full, out=out).write(out)
