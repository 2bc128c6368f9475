"""Mixed-caption sampling (spec test 2): binomial rate, p=0/1 exact, invariance to worker count
and order, epoch re-draws, shared epoch, missing recaptions, bad input."""

import math
import random

import numpy as np
import pytest
import torch
from _rd_helpers import HashCaptioner, make_shards
from recap_datacomp.merge import merge_recaptions
from recap_datacomp.mixing import MixedCaption, mix_uniform, mixed_caption_loader, use_recaption
from recap_datacomp.pipeline import recaption_shards

KEYS = [f"sample-{i:07d}" for i in range(100_000)]
Z999 = 3.2905  # two-sided 99.9 % normal quantile


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_recap_rate_inside_binomial_interval(p):
    n = len(KEYS)
    hits = sum(mix_uniform(0, 0, k) < p for k in KEYS)
    half = Z999 * math.sqrt(n * p * (1 - p))
    assert abs(hits - n * p) <= half


def test_p_zero_and_one_are_exact():
    mixer0, mixer1 = MixedCaption(0.0), MixedCaption(1.0)
    for k in KEYS[:2000]:
        sample = {"__key__": k, "txt": "org", "recap.txt": "re"}
        assert mixer0(sample)["txt"] == "org"
        assert mixer1(sample)["txt"] == "re"


def test_epoch_change_redraws_about_2p_1_minus_p():
    p, n = 0.8, len(KEYS)
    changed = sum(use_recaption(p, 0, 0, k) != use_recaption(p, 0, 1, k) for k in KEYS)
    assert abs(changed / n - 2 * p * (1 - p)) <= Z999 * math.sqrt(0.32 * 0.68 / n)


def test_choice_independent_of_order_and_seed_matters():
    keys = KEYS[:5000]
    first = {k: use_recaption(0.5, 7, 2, k) for k in keys}
    shuffled = keys[:]
    random.Random(1).shuffle(shuffled)
    assert {k: use_recaption(0.5, 7, 2, k) for k in shuffled} == first
    assert {k: use_recaption(0.5, 8, 2, k) for k in keys} != first


def test_missing_recaption_falls_back_and_is_counted():
    mixer = MixedCaption(1.0)
    out = mixer({"__key__": "a", "txt": b"org", "recap.txt": b"  "})
    out2 = mixer({"__key__": "b", "txt": b"org"})
    assert out["txt"] == out2["txt"] == "org"
    assert mixer.n_missing == 2


def test_json_org_key_reads_recap_datacomp_layout():
    mixer = MixedCaption(0.0, org_key="json:org_caption", recap_key="txt")
    sample = {"__key__": "a", "txt": b"long recaption", "json": b'{"org_caption": "alt"}'}
    assert mixer(sample)["txt"] == "alt"


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mix")
    shards = make_shards(folder, n_shards=4, per_shard=8)
    recaption_shards(shards, folder / "recaps", HashCaptioner(), show_progress=False)
    return merge_recaptions(shards, folder / "recaps", folder / "merged")


def _choices(urls, workers, epoch=0):
    loader = mixed_caption_loader(
        urls,
        p=0.5,
        preprocess=lambda im: torch.zeros(1),
        tokenizer=lambda texts: texts,
        batch_size=4,
        num_workers=workers,
        seed=3,
        epoch=epoch,
        with_keys=True,
    )
    out = {}
    for _, texts, keys, recap in loader:
        for t, k, r in zip(texts, keys, recap, strict=True):
            out[k] = (t, bool(r))
    return out, loader


def test_loader_choices_same_under_1_and_4_workers(merged):
    one, _ = _choices(merged, 1)
    four, _ = _choices(merged, 4)
    assert len(one) == 32
    assert one == four
    assert {k: r for k, (_, r) in one.items()} == {k: use_recaption(0.5, 3, 0, k) for k in one}
    assert all(t.startswith("img ") == r for t, r in one.values())


def test_set_epoch_is_shared_with_persistent_state(merged):
    mixer = MixedCaption(0.5, epoch=0)
    mixer.set_epoch(5)
    assert mixer.epoch == 5
    e1, _ = _choices(merged, 0, epoch=1)
    assert {k: r for k, (_, r) in e1.items()} == {k: use_recaption(0.5, 3, 1, k) for k in e1}


def test_mixing_rejects_bad_p():
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="`p`"):
            MixedCaption(bad)
    with pytest.raises(TypeError, match="`p`"):
        MixedCaption("0.5")
    with pytest.raises(ValueError, match="`p`"):
        use_recaption(2, 0, 0, "k")
    with pytest.raises(ValueError, match="shards"):
        mixed_caption_loader([], p=0.5, preprocess=None, tokenizer=None, batch_size=2)


def test_patch_open_clip_train_skips_without_open_clip():
    pytest.importorskip(
        "open_clip_train.data",
        reason="open_clip_train imports torchvision, which cannot import beside CPU torch 2.13 "
        "(DECISIONS 15)",
    )
    from recap_datacomp.mixing import patch_open_clip_train

    with patch_open_clip_train(0.8):
        pass


def test_uniform_is_in_unit_interval():
    u = np.array([mix_uniform(1, 2, k) for k in KEYS[:10000]])
    assert u.min() >= 0
    assert u.max() < 1


def _keys(urls, *, rank=None, world_size=None, workers=0, epoch=0, resampled=False, batches=None):
    loader = mixed_caption_loader(
        urls,
        p=0.5,
        preprocess=lambda im: torch.zeros(1),
        tokenizer=lambda texts: texts,
        batch_size=2,
        num_workers=workers,
        seed=3,
        epoch=epoch,
        resampled=resampled,
        with_keys=True,
        rank=rank,
        world_size=world_size,
    )
    keys = []
    for i, (_, _, batch_keys, _) in enumerate(loader):
        keys += batch_keys
        if batches is not None and i + 1 >= batches:
            break
    return keys


@pytest.mark.parametrize(("n_shards", "workers"), [(4, 0), (4, 2), (1, 0)])
def test_ranks_get_disjoint_keys_whose_union_is_one_process(merged, n_shards, workers):
    urls = merged[:n_shards]
    single = _keys(urls)
    r0 = _keys(urls, rank=0, world_size=2, workers=workers)
    r1 = _keys(urls, rank=1, world_size=2, workers=workers)
    assert r0
    assert r1
    assert not set(r0) & set(r1)
    assert sorted(r0 + r1) == sorted(single)
    assert len(single) == 8 * n_shards


def test_shard_order_is_shuffled_per_epoch_and_same_on_every_rank(merged):
    from recap_datacomp.mixing import epoch_shards

    assert epoch_shards(merged, 3, 0) == epoch_shards(list(reversed(merged)), 3, 0)
    assert {tuple(epoch_shards(merged, 3, e)) for e in range(6)} != {tuple(sorted(merged))}
    e0, e1 = _keys(merged, rank=0, world_size=2), _keys(merged, rank=0, world_size=2, epoch=1)
    assert set(e0) != set(e1) or e0 != e1


def test_resampled_ranks_are_disjoint_even_with_one_shard(merged):
    r0 = _keys(merged[:1], rank=0, world_size=2, resampled=True, batches=2)
    r1 = _keys(merged[:1], rank=1, world_size=2, resampled=True, batches=2)
    assert len(r0) == len(r1) == 4
    assert not set(r0) & set(r1)


def test_loader_rejects_bad_rank():
    kw = {"p": 0.5, "preprocess": None, "tokenizer": None, "batch_size": 2}
    with pytest.raises(ValueError, match="`rank`"):
        mixed_caption_loader(["x.tar"], rank=2, world_size=2, **kw)
    with pytest.raises(ValueError, match="`rank`"):
        mixed_caption_loader(["x.tar"], rank=0, **kw)
    with pytest.raises(TypeError, match="`world_size`"):
        mixed_caption_loader(["x.tar"], rank=0, world_size=2.0, **kw)


def _gloo_worker(rank, urls, init_file, out):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        keys = _keys(urls)
        with open(f"{out}.{rank}", "w") as f:
            f.write("\n".join(keys))
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_read_disjoint_keys(merged, tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_gloo_worker, args=(merged, str(tmp_path / "init"), str(tmp_path / "keys")), nprocs=2)
    r0, r1 = ((tmp_path / f"keys.{r}").read_text().split("\n") for r in (0, 1))
    assert not set(r0) & set(r1)
    assert sorted(r0 + r1) == sorted(_keys(merged))


def _loader(urls, **kw):
    args = {
        "p": 0.5,
        "preprocess": lambda im: torch.zeros(1),
        "tokenizer": lambda texts: texts,
        "batch_size": 2,
        "seed": 3,
        "with_keys": True,
    }
    return mixed_caption_loader(urls, **{**args, **kw})


def test_misspelled_text_keys_raise_naming_the_argument(merged):
    # trial 20b H1: a wrong org_key / recap_key gave empty captions without a word
    with pytest.raises(ValueError, match="`org_key` 'nope'"):
        _loader(merged, org_key="nope")
    with pytest.raises(ValueError, match="`recap_key` 'nope'"):
        _loader(merged, recap_key="nope")
    _loader(merged, p=0.0, recap_key="nope")  # p = 0 never reads the recaption


def test_mix_counters_add_up_dataloader_workers(merged):
    # trial 20b M2: the counters stayed 0 with num_workers > 0
    loader = _loader(merged, num_workers=2)
    flags = [r for _, _, _, recap in loader for r in recap]
    assert len(flags) == 32
    assert loader.mixer.n_total == 32
    assert loader.mixer.n_recap == sum(flags)
    assert loader.mixer.n_missing == 0


def test_samples_are_shuffled_per_epoch_deterministically(merged):
    # trial 20b M1: with one shard every epoch had the same order and batches
    def keys(epoch, **kw):
        return [k for _, _, ks, _ in _loader(merged[:1], epoch=epoch, **kw) for k in ks]

    e0, e1 = keys(0), keys(1)
    assert sorted(e0) == sorted(e1)
    assert e0 != e1
    assert keys(0) == e0
    assert keys(0, shuffle_buffer=0) == sorted(e0)
    with pytest.raises(ValueError, match="`shuffle_buffer`"):
        _loader(merged, shuffle_buffer=-1)


def test_resampled_share_smaller_than_batch_warns(merged):
    # trial 20b M3: a share shorter than the batch repeats samples inside a batch
    loader = _loader(merged[:1], resampled=True, rank=0, world_size=2, batch_size=16)
    with pytest.warns(UserWarning, match="fewer than batch_size=16"):
        next(iter(loader))
