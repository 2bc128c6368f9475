"""The official WMarkGPT evaluation files shipped with the library (Apache-2.0, trimmed; see
``data/NOTICE``): the WQA-Real test set, seven models' answers and per-item scores, and the
Q-score files of WQA-Real and WQA-Synthetic (TanSongBai/WMarkGPT@2d812b4)."""

from __future__ import annotations

from pathlib import Path

from icml25_core import check_choice, data_path

__all__ = ["OFFICIAL_MODELS", "official_file"]

#: Paper Table 1's models on WQA-Real: shipped file stem -> display name.
OFFICIAL_MODELS: dict[str, str] = {
    "wmarkgpt-7b": "WMarkGPT-7B",
    "qwen2-vl-7b-instruct": "Qwen2-VL-7B",
    "mplug-owl2-7B": "mPLUG-Owl2",
    "qwen-vl-chat": "Qwen-VL-Chat",
    "llava_1.5_13b_hf": "LLaVA-1.5-13B",
    "llava_1.5_7b_hf": "LLaVA-1.5-7B",
    "Efficient-Large-Model-NVILA-8B": "NVILA-8B",
}

_KINDS = ("test", "answers", "scores", "qscore-real", "qscore-synthetic")


def official_file(kind: str, model: str | None = None) -> Path:
    """Path of a shipped official file (gzip-compressed JSON; :func:`wmarkgpt.evaluate` reads it).

    Parameters
    ----------
    kind : {"test", "answers", "scores", "qscore-real", "qscore-synthetic"}
        WQA-Real ``test.json``; a model's answers (``result/WQA-Real/<model>.json``); its
        official per-item scores (``<model>-result.json``: BLEU_1, ROUGE_L, LLM_SCORE); the
        Q-score files.
    model : str, optional
        A key of `OFFICIAL_MODELS` (for "answers" and "scores").

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If `kind` or `model` is unknown, `model` is missing for "answers" / "scores", or given
        for another kind.

    Examples
    --------
    >>> official_file("answers", "wmarkgpt-7b").name
    'wmarkgpt-7b.json.gz'
    """
    check_choice(kind, "kind", _KINDS)
    if model is not None and kind not in ("answers", "scores"):
        raise ValueError(f"`model` is only for kinds 'answers' and 'scores', not {kind!r}")
    if kind == "test":
        return data_path("wmarkgpt", "data", "WQA-Real", "test.json.gz")
    if kind == "qscore-real":
        return data_path("wmarkgpt", "data", "WQA-Real", "result", "wmarkgpt_qscore.json.gz")
    if kind == "qscore-synthetic":
        return data_path("wmarkgpt", "data", "WQA-Synthetic", "wmarkgpt_qscore.json.gz")
    if model is None:
        raise ValueError(f"`model` is required for kind {kind!r}: one of {list(OFFICIAL_MODELS)}")
    check_choice(model, "model", tuple(OFFICIAL_MODELS))
    suffix = "-result" if kind == "scores" else ""
    return data_path("wmarkgpt", "data", "WQA-Real", "result", f"{model}{suffix}.json.gz")
