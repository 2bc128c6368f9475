r"""Mixed-caption sampling: each draw uses the recaption with probability p.

Per (seed, epoch, key) a counter-based hash gives $u \in [0, 1)$ and

$$\text{text} = \begin{cases}\text{re\_caption} & u(\text{seed}, \text{epoch}, \text{key}) < p
\\ \text{org\_caption} & \text{otherwise}\end{cases}, \qquad u = \frac{\text{blake2b}_8(\text{seed}
\| \text{epoch} \| \text{key})}{2^{64}}$$

(Recap-DataComp-1B project page: p = 0.8 for Recap-CLIP). The choice depends on nothing else:
the same for any worker count, order or resume, re-drawn every epoch.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .shards import read_field


def _check_p(p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise TypeError(f"`p` must be a number, got {type(p).__name__}")
    p = float(p)
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise ValueError(f"`p` must be in [0, 1], got {p}")
    return p


def mix_uniform(seed: int, epoch: int, key: str) -> float:
    """The counter-based uniform $u \\in [0, 1)$ of (seed, epoch, key): blake2b, 8 bytes / 2^64."""
    digest = hashlib.blake2b(f"{int(seed)}|{int(epoch)}|{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def use_recaption(p: float, seed: int, epoch: int, key: str) -> bool:
    """Whether the sample `key` uses its recaption at `epoch`: ``mix_uniform(...) < p``.

    Raises
    ------
    ValueError
        If `p` is not in [0, 1].
    """
    return mix_uniform(seed, epoch, key) < _check_p(p)


class MixedCaption:
    """A webdataset map stage choosing the caption per sample (see module equation).

    Parameters
    ----------
    p : float
        Probability of the recaption, in [0, 1] (0.8 for Recap-CLIP).
    seed : int, default=0
    org_key : str, default="txt"
        Original caption member; ``"json:org_caption"`` reads a JSON field (Recap-DataComp-1B
        shards keep the recaption in ``txt`` and the alt-text in ``json``).
    recap_key : str, default="recap.txt"
    out_key : str, default="txt"
        Member the chosen caption is written to (what open_clip_train reads).
    epoch : int, default=0

    Attributes
    ----------
    n_missing : int
        Draws that wanted the recaption but found it missing or empty (original used).
    n_recap, n_total : int
        Draws that used the recaption; all draws. The three counters live in shared memory, so
        they add up the DataLoader workers' draws too (samples prefetched but not yet delivered
        included).

    Raises
    ------
    ValueError
        If `p` is not in [0, 1].
    """

    def __init__(
        self,
        p: float,
        *,
        seed: int = 0,
        org_key: str = "txt",
        recap_key: str = "recap.txt",
        out_key: str = "txt",
        epoch: int = 0,
    ) -> None:
        self.p = _check_p(p)
        self.seed, self.org_key, self.recap_key, self.out_key = (
            int(seed),
            org_key,
            recap_key,
            out_key,
        )
        self._epoch = multiprocessing.Value("i", int(epoch))
        # shared with DataLoader workers (fork or spawn), like the epoch: trial 20b M2
        self._counts = multiprocessing.Array("q", 3)

    @property
    def n_total(self) -> int:
        """All draws so far (every process)."""
        return int(self._counts[0])

    @property
    def n_recap(self) -> int:
        """Draws that used the recaption (every process)."""
        return int(self._counts[1])

    @property
    def n_missing(self) -> int:
        """Draws that wanted the recaption but found none (every process)."""
        return int(self._counts[2])

    def _count(self, recap: bool, missing: bool) -> None:
        with self._counts.get_lock():
            self._counts[0] += 1
            self._counts[1] += int(recap)
            self._counts[2] += int(missing)

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch in shared memory (persistent DataLoader workers see it)."""
        self._epoch.value = int(epoch)

    @property
    def epoch(self) -> int:
        """The current epoch."""
        return int(self._epoch.value)

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        """Return `sample` with ``out_key`` set to the chosen caption (str)."""
        key = str(sample["__key__"])
        org = read_field(sample, self.org_key)
        text = org
        wanted = mix_uniform(self.seed, self.epoch, key) < self.p
        if wanted:
            recap = read_field(sample, self.recap_key)
            if recap.strip():
                text = recap
        self._count(text is not org, wanted and text is org)
        out = dict(sample)
        out[self.out_key] = text
        out["__recap__"] = text is not org
        return out


def _resolve_rank(rank: Any, world_size: Any) -> tuple[int, int]:
    """``(rank, world_size)``: the arguments, else torch.distributed's, else (0, 1)."""
    if (rank is None) != (world_size is None):
        raise ValueError("`rank` and `world_size` must be given together (or both left out)")
    if rank is None:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1
    for name, value in (("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"`{name}` must be an int, got {value!r}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(
            f"`rank` must be in [0, world_size), got rank={rank}, world_size={world_size}"
        )
    return rank, world_size


def _split_hash(seed: int, key: str) -> int:
    return int.from_bytes(
        hashlib.blake2b(f"split|{int(seed)}|{key}".encode(), digest_size=8).digest(), "big"
    )


def epoch_shards(shards: Sequence[str], seed: int, epoch: int) -> list[str]:
    """The shard order of `epoch`: a shuffle seeded by (seed, epoch), the same on every rank."""
    order = sorted(shards)
    random.Random(f"{int(seed)}|{int(epoch)}").shuffle(order)
    return order


class _RankShardSamples:
    """First pipeline stage: this (rank, worker)'s disjoint share of the samples of each epoch.

    With ``G = world_size * workers`` readers and reader index ``g = rank * workers + worker``,
    reader g reads ``epoch_shards(...)[g::G]`` when there are at least G shards; otherwise every
    reader reads every shard and keeps the samples with ``blake2b(seed|key) % G == g``. Either
    way the readers' samples are disjoint and their union is the whole epoch. Within a pass the
    samples go through a shuffle buffer of `shuffle_buffer` samples seeded by
    (seed, pass, reader), so the order (and the batches) change every epoch.
    """

    def __init__(
        self,
        shards,
        *,
        rank,
        world_size,
        seed,
        mixer,
        resampled,
        handler,
        shuffle_buffer=0,
        batch_size=1,
    ) -> None:
        self.shards, self.rank, self.world = list(shards), rank, world_size
        self.seed, self.mixer, self.resampled, self.handler = seed, mixer, resampled, handler
        self.shuffle_buffer, self.batch_size = shuffle_buffer, batch_size

    def _shuffled(self, samples: Iterator[dict[str, Any]], rng: random.Random):
        if self.shuffle_buffer <= 1:
            yield from samples
            return
        buf: list[dict[str, Any]] = []
        for sample in samples:
            buf.append(sample)
            if len(buf) >= self.shuffle_buffer:
                i = rng.randrange(len(buf))
                buf[i], buf[-1] = buf[-1], buf[i]
                yield buf.pop()
        rng.shuffle(buf)
        yield from buf

    def __call__(self) -> Iterator[dict[str, Any]]:
        import torch.utils.data
        import webdataset as wds

        info = torch.utils.data.get_worker_info()
        worker, n_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        readers, reader = self.world * n_workers, self.rank * n_workers + worker
        by_shard = len(self.shards) >= readers
        epoch = self.mixer.epoch
        warned = False
        while True:
            order = epoch_shards(self.shards, self.seed, epoch)
            mine = order[reader::readers] if by_shard else order
            n = 0
            raw = wds.tarfile_to_samples(handler=self.handler)(iter([{"url": u} for u in mine]))
            own = (
                s
                for s in raw
                if by_shard or _split_hash(self.seed, str(s["__key__"])) % readers == reader
            )
            rng = random.Random(f"shuffle|{int(self.seed)}|{int(epoch)}|{reader}")
            for sample in self._shuffled(own, rng):
                n += 1
                yield sample
            if not self.resampled:
                return
            if n == 0:
                raise RuntimeError(
                    f"reader {reader} of {readers} (rank {self.rank}, worker {worker}) got no "
                    "sample in a whole pass over the shards; use fewer ranks or workers"
                )
            if n < self.batch_size and not warned:
                warned = True
                warnings.warn(
                    f"reader {reader} of {readers} (rank {self.rank}, worker {worker}) has only "
                    f"{n} sample(s) per pass, fewer than batch_size={self.batch_size}: with "
                    "resampled=True its samples repeat within a batch and are over-sampled; "
                    "use more shards or fewer ranks/workers",
                    stacklevel=2,
                )
            epoch += 1


def mixed_caption_loader(
    urls: str | Sequence[str],
    *,
    p: float,
    preprocess: Callable[[Any], Any],
    tokenizer: Callable[[list[str]], Any],
    batch_size: int,
    num_workers: int = 0,
    seed: int = 0,
    epoch: int = 0,
    resampled: bool = False,
    image_key: str = "jpg;png;jpeg;webp",
    org_key: str = "txt",
    recap_key: str = "recap.txt",
    with_keys: bool = False,
    rank: int | None = None,
    world_size: int | None = None,
    shuffle_buffer: int = 256,
) -> Any:
    """A DataLoader of ``(images, tokens)`` batches with mixed captions, like open_clip_train's.

    Every epoch the shards are shuffled by (seed, epoch), the same order on every rank, and
    split across ranks and DataLoader workers: each rank and worker reads a disjoint share, and
    the shares together are the whole epoch. With fewer shards than ``world_size * num_workers``
    the split is per sample (by a hash of the key; every reader then reads every shard).
    Shares can differ in size (shards do); for DDP use ``resampled=True`` so no rank runs dry.

    Parameters
    ----------
    urls : str or sequence of str
        Shards (brace patterns allowed).
    p : float
        Recaption probability.
    preprocess : callable
        PIL image -> tensor.
    tokenizer : callable
        list of str -> tensor ``[B, L]`` (applied per batch).
    batch_size : int
    num_workers : int, default=0
    seed, epoch : int
        Seed of the caption choice and of the shard shuffle; the epoch is read when iteration
        starts (``loader.mixer.set_epoch``).
    resampled : bool, default=False
        Repeat forever, one reshuffled pass after another (for ``--steps`` training); still
        split disjointly across ranks and workers within each pass.
    image_key, org_key, recap_key : str
        Members to read. `org_key` (and `recap_key` when ``p > 0``) must be present in at least
        one of the first 16 samples of the first local shard, else ``ValueError`` naming it.
    with_keys : bool, default=False
        Also yield the sample keys and whether each used its recaption.
    rank, world_size : int, optional
        This process's share; by default torch.distributed's rank and world size when it is
        initialised, else 0 and 1.
    shuffle_buffer : int, default=256
        Samples are shuffled within each reader's share through a buffer of this many samples,
        seeded by (seed, epoch, reader): deterministic, different every epoch. 0 or 1 keeps the
        tar order.

    Returns
    -------
    webdataset.WebLoader
        With ``.mixer`` (the :class:`MixedCaption` stage; call ``loader.mixer.set_epoch``).

    Raises
    ------
    ValueError
        If `p` is out of [0, 1], `batch_size` < 1, `shuffle_buffer` < 0, `rank`/`world_size`
        are invalid, or `org_key`/`recap_key` is found in none of the first shard's first 16
        samples.
    """
    import webdataset as wds

    from .shards import check_shard, expand_shards

    mixer = MixedCaption(p, seed=seed, org_key=org_key, recap_key=recap_key, epoch=epoch)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"`batch_size` must be an int >= 1, got {batch_size!r}")
    if (
        isinstance(shuffle_buffer, bool)
        or not isinstance(shuffle_buffer, int)
        or shuffle_buffer < 0
    ):
        raise ValueError(f"`shuffle_buffer` must be an int >= 0, got {shuffle_buffer!r}")
    rank, world_size = _resolve_rank(rank, world_size)
    shards = expand_shards(urls if isinstance(urls, str) else list(urls))
    # a misspelled text key would silently give empty captions (trial 20b H1)
    check_shard(shards[0], org_key, name="org_key")
    if mixer.p > 0:
        check_shard(shards[0], recap_key, name="recap_key")
    source = _RankShardSamples(
        shards,
        rank=rank,
        world_size=world_size,
        seed=seed,
        mixer=mixer,
        resampled=resampled,
        handler=wds.warn_and_continue,
        shuffle_buffer=shuffle_buffer,
        batch_size=batch_size,
    )
    stages: list[Any] = [
        source,
        wds.decode("pil", handler=wds.warn_and_continue),
        wds.map(mixer),
        wds.rename(image=image_key, text="txt", recap="__recap__", key="__key__"),
        wds.map_dict(image=preprocess),
        wds.to_tuple("image", "text", "key", "recap"),
        wds.batched(batch_size, partial=not resampled),
    ]

    def tokenize(batch: tuple) -> tuple:
        images, texts, keys, recap = batch
        if with_keys:
            return images, tokenizer(list(texts)), list(keys), list(recap)
        return images, tokenizer(list(texts))

    pipeline = wds.DataPipeline(*stages, wds.map(tokenize))
    loader = wds.WebLoader(pipeline, batch_size=None, num_workers=num_workers)
    loader.mixer = mixer
    loader.rank, loader.world_size = rank, world_size
    return loader


@contextlib.contextmanager
def patch_open_clip_train(p: float, **kwargs: Any) -> Iterator[None]:
    """Insert :class:`MixedCaption` into ``open_clip_train.data.get_wds_dataset`` (extra
    ``[open_clip]``; needs torchvision, which cannot import here: DECISIONS 15).

    Wraps ``webdataset.rename`` while ``get_wds_dataset`` builds its pipeline so the mixing
    stage runs before it. Tested against no open_clip_train version here (import fails).

    Raises
    ------
    ImportError
        If open_clip_train is not importable.
    """
    _check_p(p)
    import importlib

    import webdataset as wds

    # open_clip_train ships inside the open-clip-torch wheel (extra [open_clip]); imported by name
    # because tools/check_imports.py has no alias for it. Raises where torchvision is missing.
    ocd = importlib.import_module("open_clip_train.data")

    mixer = MixedCaption(p, **kwargs)
    original_rename = ocd.wds.rename

    def rename(*args: Any, **kw: Any) -> Any:
        mix, renamer = wds.map(mixer), original_rename(*args, **kw)
        return lambda source: renamer(mix(source))

    ocd.wds.rename = rename
    try:
        yield
    finally:
        ocd.wds.rename = original_rename
