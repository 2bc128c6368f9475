"""Webdataset shards in: brace patterns and a warn-and-continue sample iterator.

Shard format: webdataset tars (one sample = members sharing a key), as written by img2dataset
(``<key>.jpg``, ``<key>.txt``, ``<key>.json`` with ``url``).
"""

from __future__ import annotations

import io
import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp", "bmp", "tif", "tiff", "gif", "ppm")


def _split_keys(keys: str | list[str] | tuple[str, ...], name: str) -> list[str]:
    parts = keys.split(";") if isinstance(keys, str) else list(keys)
    parts = [p.strip().lower() for p in parts if p.strip()]
    if not parts:
        raise ValueError(f"`{name}` names no key")
    return parts


def check_image_keys(image_keys: str | list[str] | tuple[str, ...]) -> list[str]:
    """Validate the image member extensions (``"jpg;png"``) and return them as a list.

    Raises
    ------
    ValueError
        If `image_keys` is empty or names an extension that is not an image format.
    """
    keys = _split_keys(image_keys, "image_keys")
    for key in keys:
        if key not in IMAGE_EXTENSIONS:
            raise ValueError(
                f"`image_keys` contains unknown image key {key!r}; "
                f"known: {', '.join(IMAGE_EXTENSIONS)}"
            )
    return keys


def expand_shards(
    pattern: str | list[str] | tuple[str, ...], *, check_exists: bool = True
) -> list[str]:
    """Expand a brace pattern (``"shards/{00000..00099}.tar"``) into shard paths.

    Local paths that do not exist (img2dataset leaves numbering gaps, rom1504/img2dataset#174)
    are dropped with a warning; URLs (``://``) are kept as is.

    Parameters
    ----------
    pattern : str or list of str
        A braceexpand pattern, or a list of patterns/paths.
    check_exists : bool, default=True
        Drop (with a warning) local paths that do not exist.

    Returns
    -------
    list of str
        Sorted, de-duplicated shard paths.

    Raises
    ------
    ValueError
        If the expansion (after dropping missing files) is empty.
    """
    from braceexpand import braceexpand

    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    paths = sorted({os.fspath(p) for pat in patterns for p in braceexpand(os.fspath(pat))})
    if check_exists:
        missing = [p for p in paths if "://" not in p and not os.path.exists(p)]
        if missing:
            warnings.warn(
                f"{len(missing)} shard(s) of the pattern do not exist and are skipped "
                f"(numbering gap?), e.g. {missing[0]}",
                stacklevel=2,
            )
            paths = [p for p in paths if p not in set(missing)]
    if not paths:
        raise ValueError(f"`shards` is empty: {pattern!r} matches no shard")
    return paths


@dataclass
class Sample:
    """One webdataset sample, raw.

    Attributes
    ----------
    key : str
        The webdataset ``__key__``.
    url : str
        ``url`` of the sample's ``json`` member, ``""`` if absent.
    org_caption : str
        The original caption (alt-text), ``""`` if absent.
    image : bytes or None
        The encoded image, ``None`` when no member matches `image_keys`.
    """

    key: str
    url: str
    org_caption: str
    image: bytes | None


def read_field(sample: dict, spec: str) -> str:
    """Read a text field of a raw webdataset sample: ``"txt"`` or ``"json:org_caption"``.

    Returns ``""`` when the member (or the JSON field) is absent.
    """
    ext, _, field = spec.partition(":")
    raw = sample.get(ext)
    if raw is None:
        return ""
    if field:
        try:
            meta = json.loads(raw) if isinstance(raw, bytes | str) else raw
        except ValueError:
            return ""
        value = meta.get(field, "") if isinstance(meta, dict) else ""
        return "" if value is None else str(value)
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _has_field(sample: dict, spec: str) -> bool:
    ext, _, field = spec.partition(":")
    raw = sample.get(ext)
    if raw is None or not field:
        return raw is not None
    try:
        meta = json.loads(raw) if isinstance(raw, bytes | str) else raw
    except ValueError:
        return False
    return isinstance(meta, dict) and field in meta


def check_shard(
    shard: str, text_key: str = "txt", n_peek: int = 16, *, name: str = "text_key"
) -> None:
    """Check one shard before captioning it: a local path must be an existing tar file, and
    `text_key` must be present in at least one of its first `n_peek` samples.

    URLs (``scheme://``, ``pipe:``) are not opened here.

    Raises
    ------
    FileNotFoundError
        If a local shard does not exist.
    ValueError
        If a local shard is not a tar file, or `text_key` matches no member (or JSON field) in
        the first `n_peek` samples of a non-empty shard (the message names the argument
        `name`).
    """
    import tarfile

    if "://" in shard or shard.startswith("pipe:"):
        return
    if not os.path.exists(shard):
        raise FileNotFoundError(f"`shards`: {shard!r} does not exist")
    if not tarfile.is_tarfile(shard):
        raise ValueError(f"`shards`: {shard!r} is not a tar file (webdataset shard)")
    import webdataset as wds

    members: set[str] = set()
    dataset = wds.DataPipeline(
        wds.SimpleShardList([shard]), wds.tarfile_to_samples(handler=wds.warn_and_continue)
    )
    for i, raw in enumerate(dataset):
        if _has_field(raw, text_key):
            return
        members.update(k for k in raw if not k.startswith("__"))
        if i + 1 >= n_peek:
            break
    if members:
        raise ValueError(
            f"`{name}` {text_key!r} matches nothing in the first samples of {shard!r} "
            f"(members there: {', '.join(sorted(members))})"
        )


def iter_samples(
    shard: str,
    *,
    image_keys: str | list[str] = "jpg;png;jpeg;webp",
    text_key: str = "txt",
) -> Iterator[Sample]:
    """Iterate over the samples of one webdataset shard, in tar order.

    A broken tar member is warned about and skipped (``webdataset.warn_and_continue``); a sample
    without an image yields ``image=None`` (the pipeline records it as ``decode_error``).

    Parameters
    ----------
    shard : str
        Path or URL of one ``.tar`` shard.
    image_keys : str or list of str, default="jpg;png;jpeg;webp"
        Image member extensions, first match wins.
    text_key : str, default="txt"
        The original-caption member; ``"json:org_caption"`` reads a JSON field.

    Yields
    ------
    Sample

    Raises
    ------
    ValueError
        If `image_keys` names an unknown image extension.
    """
    import webdataset as wds

    keys = check_image_keys(image_keys)
    # a bare pipeline: WebDataset's node splitter would split shards again under torchrun
    dataset = wds.DataPipeline(
        wds.SimpleShardList([shard]), wds.tarfile_to_samples(handler=wds.warn_and_continue)
    )
    for raw in dataset:
        image = next((raw[k] for k in keys if raw.get(k) is not None), None)
        url = read_field(raw, "json:url")
        yield Sample(str(raw["__key__"]), url, read_field(raw, text_key), image)


def write_shard(path: str, samples: list[dict]) -> None:
    """Write a webdataset shard (``webdataset.TarWriter``); each dict has ``__key__`` and members.

    A convenience for tests, examples and the reproduce (packing photos into shards).
    """
    import webdataset as wds

    with wds.TarWriter(os.fspath(path)) as sink:
        for sample in samples:
            sink.write(sample)


def encode_image(array, fmt: str = "JPEG", quality: int = 90) -> bytes:
    """Encode a uint8 ``[H, W, 3]`` array as JPEG/PNG bytes with PIL."""
    from PIL import Image

    buf = io.BytesIO()
    kw = {"quality": quality} if fmt.upper() == "JPEG" else {}
    Image.fromarray(array).convert("RGB").save(buf, format=fmt, **kw)
    return buf.getvalue()
