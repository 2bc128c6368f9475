"""Candidate embedding: the official per-element loop vs gather + cumsum, B=256, R=6 (target
>= 100x); plus rerank throughput (spectra/s) of the reproduce-size model on CPU."""

import time

import numpy as np
import torch
from ranknovo.data import CandidateSet, collate
from ranknovo.model import RankNovo, sinusoid
from ranknovo.vocab import AMINO_ACIDS


def loop_embed(model, tokens, precursors):
    """One (row, column) at a time, as the official embedding loop does."""
    d = model.dim
    b, r, c = tokens.shape
    out = torch.zeros(b, r, c, d)
    masses = model.vocab.masses
    for i in range(b):
        mass = float(precursors[i, 0])
        for j in range(r):
            rest, pos = mass, 0
            for k in range(c):
                t = int(tokens[i, j, k])
                rest -= float(masses[t])
                e = torch.cat([
                    model.aa_emb.weight[t],
                    sinusoid(torch.tensor(float(masses[t]), dtype=torch.float64), d // 4),
                    sinusoid(torch.tensor(rest, dtype=torch.float64), d - d // 2 - d // 4),
                ])  # fmt: skip
                if t != model.vocab.pad_id:
                    pos += 1
                    e = e + model.pos_emb.weight[pos + model.vocab.pad_id]
                out[i, j, k] = e
    return out


def main(b=256, r=6, loop_b=8):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = RankNovo(dim=512, heads=8, ff=1024, enc_layers=1, dec_layers=1).eval()
    res = list(AMINO_ACIDS)
    cands = [["".join(res[i] for i in rng.integers(0, 20, rng.integers(6, 21))) for _ in range(r)]
             for _ in range(b)]  # fmt: skip
    spectra = [np.array([[100.0 + i, 1.0] for i in range(50)], np.float32)] * b
    ds = CandidateSet(spectra, [[700.0, 2]] * b, cands, vocab=model.vocab)
    batch = collate([ds[i] for i in range(b)])
    tok, prec = batch["tokens"], batch["precursors"]
    with torch.no_grad():
        t0 = time.perf_counter()
        model.embed(tok, prec)
        fast = time.perf_counter() - t0
        t0 = time.perf_counter()
        loop_embed(model, tok[:loop_b], prec[:loop_b])
        slow = (time.perf_counter() - t0) * b / loop_b
    print(f"embedding, B={b} R={r} D=512 (loop timed on {loop_b} spectra, scaled)")
    print("| implementation | s | speed-up |\n|---|---|---|")
    print(f"| official-style loop | {slow:.2f} | 1x |")
    print(f"| gather + cumsum | {fast:.4f} | {slow / fast:.0f}x |")
    small = RankNovo(dim=64, heads=4, ff=128, enc_layers=2, dec_layers=2, dropout=0.1).eval()
    t0 = time.perf_counter()
    small.rerank(batch["spectra"], prec, tok)
    dt = time.perf_counter() - t0
    print(f"rerank throughput (reproduce model, dim 64, 2+2 layers): {b / dt:.0f} spectra/s")


if __name__ == "__main__":
    main()
