"""Captioners: any callable ``images -> captions``; a transformers image-text-to-text wrapper.

The paper's captioner is a LLaVA-1.5 recipe with LLaMA-3-8B (Li et al., ICML 2025, Sec. 3),
decoded greedily with at most 128 new tokens; the original alt-text is not in the prompt.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Protocol, runtime_checkable

RECAP_PROMPT = (
    "Please generate a detailed caption of this image. Please be as descriptive as possible."
)
"""Default prompt (project page of Recap-DataComp-1B; wording unverified, hence a parameter and
its sha256 recorded in every output)."""


def prompt_sha256(prompt: str) -> str:
    """Hex sha256 of a prompt, as recorded in every shard's stats."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


@runtime_checkable
class Captioner(Protocol):
    """What the pipeline calls: ``captioner(images, prompts) -> captions`` (same length).

    An optional ``run_config`` attribute (dict: model id, prompt sha256, generation parameters)
    is written to the stats and checked on resume.
    """

    def __call__(self, images: list[Any], prompts: list[str] | None = None) -> list[str]: ...


def run_config_of(captioner: Any) -> dict[str, Any]:
    """The captioner's ``run_config`` dict, or its class name as model id."""
    config = getattr(captioner, "run_config", None)
    if config is None:
        return {"model_id": type(captioner).__name__}
    return dict(config)


def check_model_path(path: Any, name: str = "path") -> None:
    """Raise ``FileNotFoundError`` naming `name` if `path` looks local but does not exist.

    A hub id is ``name`` or ``org/name``; anything absolute, starting with ``.`` or ``~``, or
    with more than one ``/`` is taken as a local folder.
    """
    text = str(path)
    local = os.path.isabs(text) or text.startswith((".", "~")) or text.count("/") > 1
    if local and not os.path.isdir(os.path.expanduser(text)):
        raise FileNotFoundError(f"`{name}`: local model folder {text!r} does not exist")


class HFCaptioner:
    """A transformers image-text-to-text model (LLaVA, Qwen2-VL, ...) as a batched captioner.

    Greedy decoding (``do_sample=False``, i.e. temperature 0) as in the paper; the prompt goes
    through ``processor.apply_chat_template``; the tokenizer pads on the left (right padding
    corrupts batched decoder-only generation); only the new tokens are decoded.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An image-text-to-text model with ``generate``.
    processor : transformers.ProcessorMixin
        Its processor (image processor + tokenizer + chat template).
    prompt : str, default=RECAP_PROMPT
        The instruction.
    max_new_tokens : int, default=128
        Generation budget (paper: 128).
    batch_size : int, default=16
        Images per ``generate`` call.
    device, dtype : torch.device / torch.dtype, optional
        Where to run; default the model's own device and dtype.
    model_id : str, optional
        Recorded in the stats; default ``model.config.name_or_path``.

    Raises
    ------
    ValueError
        If `max_new_tokens` or `batch_size` < 1 or `prompt` is empty.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        prompt: str = RECAP_PROMPT,
        max_new_tokens: int = 128,
        batch_size: int = 16,
        device: Any = None,
        dtype: Any = None,
        model_id: str | None = None,
    ) -> None:
        for name, value in (("max_new_tokens", max_new_tokens), ("batch_size", batch_size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"`{name}` must be an int >= 1, got {value!r}")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("`prompt` must be a non-empty str")
        if device is not None or dtype is not None:
            model = model.to(device=device, dtype=dtype)
        self.model = model.eval()
        self.processor = processor
        self.prompt = prompt
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        tokenizer = getattr(processor, "tokenizer", processor)
        tokenizer.padding_side = "left"
        self.model_id = model_id or str(
            getattr(model.config, "name_or_path", "") or type(model).__name__
        )

    @classmethod
    def from_pretrained(cls, path: str, **kwargs: Any) -> HFCaptioner:
        """Load ``AutoModelForImageTextToText`` and ``AutoProcessor`` from `path` (local or hub).

        Raises
        ------
        FileNotFoundError
            If `path` is a local path (absolute, ``./``, ``~`` or several ``/``) that does not
            exist, or a name that is neither a local folder nor loadable from the hub.
        """
        from transformers import AutoModelForImageTextToText, AutoProcessor

        check_model_path(path)
        model_kw = {k: kwargs.pop(k) for k in ("torch_dtype",) if k in kwargs}
        try:
            model = AutoModelForImageTextToText.from_pretrained(path, **model_kw)
        except OSError as err:
            if os.path.exists(os.path.expanduser(str(path))):
                raise
            raise FileNotFoundError(
                f"`path` {str(path)!r}: no local folder of that name, and loading it as a hub "
                f"model id failed: {err}"
            ) from err
        processor = AutoProcessor.from_pretrained(path)
        kwargs.setdefault("model_id", str(path))
        return cls(model, processor, **kwargs)

    @property
    def run_config(self) -> dict[str, Any]:
        """Model id, prompt sha256 and generation parameters (checked on resume)."""
        return {
            "model_id": self.model_id,
            "prompt_sha256": prompt_sha256(self.prompt),
            "generation": {"do_sample": False, "max_new_tokens": self.max_new_tokens},
        }

    def _texts(self, prompts: list[str]) -> list[str]:
        out = []
        for prompt in prompts:
            messages = [
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
            ]
            out.append(self.processor.apply_chat_template(messages, add_generation_prompt=True))
        return out

    def inputs(self, images: list[Any], prompts: list[str] | None = None) -> Any:
        """The processor's batch (left-padded) for `images` and `prompts` (default the prompt)."""
        prompts = [self.prompt] * len(images) if prompts is None else list(prompts)
        if len(prompts) != len(images):
            raise ValueError(f"`prompts` has {len(prompts)} entries for {len(images)} images")
        batch = self.processor(
            images=[im.convert("RGB") for im in images],
            text=self._texts(prompts),
            return_tensors="pt",
            padding=True,
        )
        return batch.to(self.model.device)

    def generate(self, images: list[Any], prompts: list[str] | None = None) -> Any:
        """Greedy ``generate`` on one batch; returns only the new token ids ``[B, T] int64``."""
        import torch

        batch = self.inputs(images, prompts)
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        with torch.inference_mode():
            out = self.model.generate(
                **batch,
                do_sample=False,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
        return out[:, batch["input_ids"].shape[1] :]

    def __call__(self, images: list[Any], prompts: list[str] | None = None) -> list[str]:
        """Caption `images` (PIL) in batches of ``batch_size``; returns one str per image."""
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        captions: list[str] = []
        for start in range(0, len(images), self.batch_size):
            chunk = images[start : start + self.batch_size]
            sub = None if prompts is None else prompts[start : start + self.batch_size]
            new = self.generate(chunk, sub)
            captions += [t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True)]
        return captions


class VLLMCaptioner:
    """vLLM as the captioner (extra ``[vllm]``, GPU only; untested here): temperature 0.

    Parameters
    ----------
    model : str
        A vLLM-supported multimodal model id or path.
    prompt_template : str
        The full prompt with the model's image placeholder, e.g.
        ``"USER: <image>\\n{prompt} ASSISTANT:"``.
    prompt : str, default=RECAP_PROMPT
    max_new_tokens : int, default=128
    **llm_kwargs
        Passed to ``vllm.LLM``.
    """

    def __init__(
        self,
        model: str,
        prompt_template: str,
        *,
        prompt: str = RECAP_PROMPT,
        max_new_tokens: int = 128,
        **llm_kwargs: Any,
    ) -> None:
        from vllm import LLM, SamplingParams

        self.llm = LLM(model=model, **llm_kwargs)
        self.params = SamplingParams(temperature=0.0, max_tokens=max_new_tokens)
        self.prompt, self.template, self.model_id = prompt, prompt_template, model
        self.max_new_tokens = max_new_tokens

    @property
    def run_config(self) -> dict[str, Any]:
        """Model id, prompt sha256 and generation parameters."""
        return {
            "model_id": self.model_id,
            "prompt_sha256": prompt_sha256(self.prompt),
            "generation": {"temperature": 0.0, "max_new_tokens": self.max_new_tokens},
        }

    def __call__(self, images: list[Any], prompts: list[str] | None = None) -> list[str]:
        """Caption `images` with one ``LLM.generate`` call."""
        prompts = [self.prompt] * len(images) if prompts is None else prompts
        requests = [
            {"prompt": self.template.format(prompt=p), "multi_modal_data": {"image": im}}
            for p, im in zip(prompts, images, strict=True)
        ]
        outputs = self.llm.generate(requests, self.params)
        return [o.outputs[0].text.strip() for o in outputs]
