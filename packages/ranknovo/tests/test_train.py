"""Spec test 12 (one-batch overfit, exact resume) and the scale-out path (2 gloo processes
under torchrun with a DistributedSampler, rank-0 checkpoint)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from ranknovo.data import CandidateSet, collate, preprocess
from ranknovo.model import RankNovo
from ranknovo.simulate import BaseModelSimulator, synthetic_spectrum
from ranknovo.train import fit, make_loader, ranknovo_loss

from icml25_core.processes import free_port

TINY = dict(dim=32, heads=4, ff=64, enc_layers=1, dec_layers=1, dropout=0.0)


def _dataset(vocab, n=16, seed=0):
    rng = np.random.default_rng(seed)
    sim = BaseModelSimulator(vocab=vocab)
    peps = ["PEPTIDEK", "SAMPLERK", "GGNQDEHWYK", "NNTVTPGGKPNK", "LLDEAGK", "QAGNEVSK"]
    spectra, prec, cands, truths = [], [], [], []
    for i in range(n):
        p = peps[i % len(peps)]
        s = synthetic_spectrum(p, 2, vocab, rng)
        spectra.append(preprocess(s))
        prec.append([s.precursor_mz, 2])
        cands.append(sim.candidates(p, 2, rng)[0])
        truths.append(p)
    return CandidateSet(spectra, prec, cands, truths, vocab)


def test_one_batch_loss_drops_below_10_percent_in_100_steps(vocab):
    torch.manual_seed(0)
    ds = _dataset(vocab, 8)
    batch = collate([ds[i] for i in range(len(ds))])
    model = RankNovo(**TINY)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(100):
        p, r = model(batch["spectra"], batch["precursors"], batch["tokens"])
        loss = ranknovo_loss(p, r, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.1 * losses[0]


def test_fit_resumes_exactly_from_checkpoint(vocab, tmp_path):
    ds = _dataset(vocab, 12)
    torch.manual_seed(1)
    straight = RankNovo(**{**TINY, "dropout": 0.1})
    init = {k: v.clone() for k, v in straight.state_dict().items()}
    torch.manual_seed(5)
    fit(straight, make_loader(ds, 4), epochs=3, ckpt_dir=tmp_path / "a")
    resumed = RankNovo(**{**TINY, "dropout": 0.1})
    resumed.load_state_dict(init)
    torch.manual_seed(5)
    # interrupted after its first epoch (the time budget stops it), checkpoint written
    first = fit(resumed, make_loader(ds, 4), epochs=3, ckpt_dir=tmp_path / "b", time_budget_s=1e-9)
    assert first["epochs_done"] == 1
    # a fresh process would start here: new model object, different RNG state
    again = RankNovo(**{**TINY, "dropout": 0.1})
    torch.manual_seed(123)
    hist = fit(again, make_loader(ds, 4), epochs=3, ckpt_dir=tmp_path / "b")
    assert hist["resumed_from"] == 1
    for k, v in straight.state_dict().items():
        torch.testing.assert_close(again.state_dict()[k], v, atol=0, rtol=0)


def test_fit_bad_input(vocab):
    model = RankNovo(**TINY)
    ds = _dataset(vocab, 2)
    with pytest.raises(ValueError, match="epochs"):
        fit(model, make_loader(ds, 2), epochs=0)
    with pytest.raises(ValueError, match="lr"):
        fit(model, make_loader(ds, 2), lr=-1.0)
    with pytest.raises(ValueError, match="empty"):
        fit(model, [])
    with pytest.raises(ValueError, match="batch"):
        ranknovo_loss(torch.zeros(1, 1), torch.zeros(1, 1, 1), {})


DDP_SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np, torch, torch.distributed as dist
    sys.path.insert(0, sys.argv[2])
    from test_train import _dataset, TINY
    from ranknovo.model import RankNovo
    from ranknovo.train import fit, make_loader
    from ranknovo.vocab import Vocab
    torch.manual_seed(0)
    model = RankNovo(**TINY)
    ds = _dataset(Vocab.massivekb(), 8)
    dist.init_process_group("gloo")
    loader = make_loader(ds, 2)
    assert isinstance(loader.sampler, torch.utils.data.DistributedSampler)
    hist = fit(model, loader, epochs=2, ckpt_dir=sys.argv[1])
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    assert torch.equal(gathered[0], gathered[1]), "ranks diverged"
    assert hist["steps"] == 4 and len(loader) == 2
    print("rank", dist.get_rank(), "ok", flush=True)
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
def test_ddp_two_gloo_processes_under_torchrun(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
        f"--master_port={free_port()}", str(script), str(tmp_path / "ckpt"),
        os.path.dirname(__file__),
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.count("ok") == 2
    assert (tmp_path / "ckpt" / "last.pt").is_file()


def test_fit_rejects_a_checkpoint_of_another_model_or_schedule(vocab, tmp_path):
    ds = _dataset(vocab, 4)
    torch.manual_seed(0)
    fit(RankNovo(**TINY), make_loader(ds, 2), epochs=1, ckpt_dir=tmp_path)
    with pytest.raises(
        ValueError, match=r"`ckpt_dir`: .*last.pt was written for another model: dim=32"
    ):
        fit(RankNovo(**{**TINY, "dim": 64, "ff": 128}), make_loader(ds, 2), epochs=1,
            ckpt_dir=tmp_path)  # fmt: skip
    with pytest.raises(ValueError, match=r"`ckpt_dir`: .*last.pt was written by a run of epochs=1"):
        fit(RankNovo(**TINY), make_loader(ds, 2), epochs=2, ckpt_dir=tmp_path)
    (tmp_path / "last.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match=r"`ckpt_dir`: .*last.pt is not a readable"):
        fit(RankNovo(**TINY), make_loader(ds, 2), epochs=1, ckpt_dir=tmp_path)


def test_fit_logs_resume_and_a_finished_checkpoint(vocab, tmp_path):
    ds = _dataset(vocab, 4)
    torch.manual_seed(0)
    fit(RankNovo(**TINY), make_loader(ds, 2), epochs=2, ckpt_dir=tmp_path, time_budget_s=1e-9)
    lines: list[str] = []
    hist = fit(RankNovo(**TINY), make_loader(ds, 2), epochs=2, ckpt_dir=tmp_path, log=lines.append)
    assert lines[0].startswith("resumed from")
    assert "at epoch 1/2" in lines[0]
    assert hist["resumed_from"] == 1
    lines.clear()
    hist = fit(RankNovo(**TINY), make_loader(ds, 2), epochs=2, ckpt_dir=tmp_path, log=lines.append)
    assert lines == [f"{tmp_path / 'last.pt'} already holds 2/2 epochs: nothing to train (use "
                     "another ckpt_dir to train afresh)"]  # fmt: skip
    assert hist["steps"] == 0


def test_fit_needs_a_module(vocab):
    with pytest.raises(TypeError, match="`model` must be a RankNovo"):
        fit("model", make_loader(_dataset(vocab, 2), 2), epochs=1)
