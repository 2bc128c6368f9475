"""WMarkGPT's three-stage recipe for any transformers vision-language model (extra ``[train]``).

Stages (paper Sec. 4 and the S1/S2/S3 ablation): S1 on WQA-Position, S2 on WQA-Synthetic, S3 on
WQA-Real, each starting from the previous stage's weights. The paper publishes neither the
hyper-parameters nor which parts are frozen [unverified]; the defaults here are **ours**: vision
encoder frozen, projector and language model trained (full, or LoRA adapters via peft),
learning rate 2e-5 (LoRA 2e-4), 1 epoch per stage, cosine schedule, 3 % warm-up, bf16 where the
device supports it, loss on the assistant's tokens only.

Runs where the model is (DECISIONS 13): ``transformers.Trainer`` places it on the GPU when one is
present; ``StageConfig(device="cpu")`` forces the CPU. Under ``torchrun`` / ``accelerate launch``
the same call trains data-parallel (DDP, or FSDP / DeepSpeed ZeRO through ``trainer_kwargs``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from icml25_core import check_choice, check_scalar
from icml25_core.extras import requires_extra

with requires_extra("wmarkgpt", "train"):
    import torch

__all__ = [
    "STAGES",
    "StageConfig",
    "VQACollator",
    "freeze_for_stage",
    "parameter_groups",
    "train_stage",
]

VISION_KEYS = ("vision_tower", "vision_model", "visual_encoder", "vision_encoder")
PROJECTOR_KEYS = ("multi_modal_projector", "mm_projector", "visual_abstractor", "connector")
PARTS = ("vision", "projector", "llm")


@dataclass(frozen=True)
class StageConfig:
    """Hyper-parameters of one stage (defaults: ours, the paper publishes none).

    Attributes
    ----------
    name : str
        "S1", "S2" or "S3" (or the user's).
    dataset : str
        The WQA set the stage trains on.
    trainable : tuple of str
        Parts trained: a subset of ("vision", "projector", "llm").
    lora : bool
        Train LoRA adapters (peft) on the LLM's attention and MLP projections instead of its
        full weights.
    learning_rate : float
        2e-5 full, 2e-4 LoRA (ours).
    epochs : float
        1 per stage (ours).
    batch_size : int
    warmup_ratio : float
        0.03 (ours).
    scheduler : str
        "cosine" (ours).
    bf16 : bool
        Use bf16 when the device supports it.
    max_steps : int
        If > 0, overrides `epochs` (tests, smoke runs).
    device : str or None
        None: where transformers puts the model (GPU if present); "cpu" forces the CPU.
    lora_rank : int
    trainer_kwargs : dict
        Extra ``TrainingArguments`` (e.g. ``ddp_backend="gloo"`` for CPU ranks under torchrun,
        ``fsdp="full_shard"``, ``deepspeed="ds.json"``).

    Raises
    ------
    ValueError
        If a value is out of range, `trainable` is empty or names an unknown part, `scheduler`
        is not a transformers scheduler name, or `device` is "cuda" without a CUDA device.
    """

    name: str
    dataset: str
    trainable: tuple[str, ...] = ("projector", "llm")
    lora: bool = False
    learning_rate: float = 2e-5
    epochs: float = 1.0
    batch_size: int = 4
    warmup_ratio: float = 0.03
    scheduler: str = "cosine"
    bf16: bool = True
    max_steps: int = -1
    device: str | None = None
    lora_rank: int = 8
    trainer_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if isinstance(self.trainable, str) or not self.trainable:
            raise ValueError(
                "`trainable` must be a non-empty sequence of parts (e.g. ('projector', 'llm')), "
                f"got {self.trainable!r}"
            )
        for part in self.trainable:
            check_choice(part, "trainable", PARTS)
        check_scalar(self.learning_rate, "learning_rate", low=0, inclusive="neither")
        check_scalar(self.epochs, "epochs", low=0, inclusive="neither")
        check_scalar(self.batch_size, "batch_size", kind=int, low=1)
        check_scalar(self.warmup_ratio, "warmup_ratio", low=0, high=1)
        check_scalar(self.lora_rank, "lora_rank", kind=int, low=1)
        check_choice(self.device, "device", (None, "cpu", "cuda"))
        if self.scheduler != "cosine":  # checked against transformers' names (imported then)
            from transformers import SchedulerType

            check_choice(self.scheduler, "scheduler", tuple(t.value for t in SchedulerType))
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("`device` is 'cuda' but torch sees no CUDA device")

    def with_lora(self) -> StageConfig:
        """The same stage with LoRA and its learning rate (2e-4, ours)."""
        return replace(self, lora=True, learning_rate=2e-4)


#: The three stages, in order: S1 Position -> S2 Synthetic -> S3 Real (paper Sec. 4).
STAGES: dict[str, StageConfig] = {
    "S1": StageConfig("S1", "WQA-Position"),
    "S2": StageConfig("S2", "WQA-Synthetic"),
    "S3": StageConfig("S3", "WQA-Real"),
}


def _part(name: str) -> str:
    if any(k in name for k in VISION_KEYS):
        return "vision"
    if any(k in name for k in PROJECTOR_KEYS):
        return "projector"
    return "llm"


def parameter_groups(model) -> dict[str, list[str]]:
    """Parameter names of the model's vision encoder, projector and language model.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers VLM (LLaVA: ``vision_tower``, ``multi_modal_projector``,
        ``language_model`` + ``lm_head``; mPLUG-Owl2: ``vision_model``, ``visual_abstractor``).

    Returns
    -------
    dict
        ``{"vision": [...], "projector": [...], "llm": [...]}``.

    Raises
    ------
    ValueError
        If no vision or no projector parameter is found.
    """
    groups: dict[str, list[str]] = {p: [] for p in PARTS}
    for name, _ in model.named_parameters():
        groups[_part(name)].append(name)
    for part in ("vision", "projector"):
        if not groups[part]:
            raise ValueError(
                f"`model` has no {part} parameters (looked for names containing "
                f"{VISION_KEYS if part == 'vision' else PROJECTOR_KEYS})"
            )
    return groups


def freeze_for_stage(model, stage: str | StageConfig):
    """Set ``requires_grad`` for a stage: its `trainable` parts on, everything else off.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers VLM; with LoRA, a peft model (only ``lora_`` parameters of the LLM
        train, the projector trains fully when listed).
    stage : {"S1", "S2", "S3"} or StageConfig

    Returns
    -------
    torch.nn.Module
        `model`, changed in place.

    Raises
    ------
    ValueError
        If `stage` is unknown or the model has no vision / projector parameters.

    Examples
    --------
    >>> # freeze_for_stage(llava, "S2")  # vision frozen; projector + LLM train (ours)
    """
    config = (
        STAGES[check_choice(stage, "stage", tuple(STAGES))] if isinstance(stage, str) else stage
    )
    if not isinstance(config, StageConfig):
        raise TypeError(f"`stage` must be a stage name or StageConfig, got {type(stage).__name__}")
    parameter_groups(model)
    lora_model = any("lora_" in n for n, _ in model.named_parameters())
    for name, param in model.named_parameters():
        part = _part(name)
        if lora_model and part == "llm":  # LoRA: the adapters train, the LLM's base weights not
            param.requires_grad = "llm" in config.trainable and "lora_" in name
        else:
            param.requires_grad = part in config.trainable
    return model


class VQACollator:
    """Batch LLaVA-format records for a transformers processor; labels only on the assistant.

    Parameters
    ----------
    processor : transformers ProcessorMixin
        ``processor(images=..., text=..., return_tensors="pt", padding=True)`` (LLaVA's
        expands ``<image>`` into the image tokens).
    image_root : path, optional
        Folder the records' ``image`` paths are relative to (or PIL images / arrays under
        ``"pixels"``).
    template : str
        The prompt with ``{question}``; the answer follows it. Later turns of a multi-turn
        record use it without ``<image>``.
    eos : str, optional
        Appended to the answer (default: the tokenizer's ``eos_token``).

    Raises
    ------
    ValueError
        If a record has no human/gpt pair, or the prompt's tokens are not a prefix of the
        full text's (then the assistant span cannot be located).

    Notes
    -----
    Loss on assistant tokens only (our default, as LLaVA's ``preprocess`` masks the human turn
    with ``IGNORE_INDEX = -100``), of every assistant turn of a multi-turn record (turns
    alternate human, gpt: ``prompt answer</s> prompt answer</s>``); padding is masked too.
    """

    def __init__(
        self,
        processor,
        image_root=None,
        template: str = "USER: <image>\n{question} ASSISTANT:",
        eos: str | None = None,
    ):
        self.processor = processor
        self.image_root = image_root
        self.template = template
        tokenizer = getattr(processor, "tokenizer", processor)
        self.eos = eos if eos is not None else (tokenizer.eos_token or "")

    def _image(self, record):
        from pathlib import Path

        import numpy as np
        from PIL import Image

        if "pixels" in record:
            pixels = record["pixels"]
            return (
                pixels if isinstance(pixels, Image.Image) else Image.fromarray(np.asarray(pixels))
            )
        if "image" not in record:
            raise ValueError(f"record {record.get('id')!r} has neither `image` nor `pixels`")
        path = Path(record["image"])
        if self.image_root is not None:
            path = Path(self.image_root) / path
        return Image.open(path).convert("RGB")

    @staticmethod
    def _turns(record) -> list[tuple[str, str]]:
        if not isinstance(record, dict):
            raise TypeError(f"records must be dicts, got {type(record).__name__}")
        if "messages" in record:
            raise ValueError(
                f"record {record.get('id')!r} is a ShareGPT record (`messages`): build with "
                "format='llava' for training"
            )
        turns = record.get("conversations")
        if not turns or len(turns) < 2 or len(turns) % 2:
            raise ValueError(
                f"record {record.get('id')!r} needs human and gpt turns in pairs, got "
                f"{0 if not turns else len(turns)} turn(s)"
            )
        pairs = []
        for k in range(0, len(turns), 2):
            human, gpt = turns[k], turns[k + 1]
            if human.get("from") != "human" or gpt.get("from") not in ("gpt", "assistant"):
                raise ValueError(
                    f"record {record.get('id')!r}: turns {k} and {k + 1} must be human then gpt"
                )
            pairs.append((human["value"].replace("<image>", "").strip(), gpt["value"]))
        return pairs

    def _texts(self, pairs: list[tuple[str, str]]) -> tuple[str, list[str]]:
        """The full text and the prefixes where label masking switches (before an answer: on;
        after it: off)."""
        later = self.template.replace("<image>\n", "").replace("<image>", "")
        text, cuts = "", []
        for k, (question, answer) in enumerate(pairs):
            prompt = (self.template if k == 0 else later).format(question=question)
            text = prompt if k == 0 else f"{text} {prompt}"
            cuts.append(text)
            text = f"{text} {answer}{self.eos}"
            cuts.append(text)
        return text, cuts[:-1]

    def __call__(self, records: Sequence[dict]) -> dict[str, Any]:
        """Tokenize `records` into ``input_ids, attention_mask, pixel_values, labels``."""
        images, cuts, fulls = [], [], []
        for record in records:
            full, record_cuts = self._texts(self._turns(record))
            images.append(self._image(record))
            cuts.append(record_cuts)
            fulls.append(full)
        batch = self.processor(images=images, text=fulls, return_tensors="pt", padding=True)
        labels = batch["input_ids"].clone()
        labels[batch["attention_mask"] == 0] = -100
        for row, (image, record_cuts) in enumerate(zip(images, cuts, strict=True)):
            full = batch["input_ids"][row][batch["attention_mask"][row] == 1]
            start = int((batch["attention_mask"][row] == 1).nonzero()[0])  # left padding
            ends = []
            for text in record_cuts:
                ids = self.processor(images=[image], text=[text], return_tensors="pt")["input_ids"][
                    0
                ]
                n = len(ids)
                if n >= len(full) or not torch.equal(full[:n], ids):
                    raise ValueError(
                        f"the prompt's tokens are not a prefix of record {row}'s full text: "
                        "change `template` so that the answer starts a new token"
                    )
                ends.append(n)
            masked = [0, *ends]  # [0, before answer 1), [after answer 1, before answer 2), ...
            for a, b in zip(masked[::2], masked[1::2], strict=True):
                labels[row, start + a : start + b] = -100
        batch["labels"] = labels
        return dict(batch)


def train_stage(
    model,
    processor,
    records: Sequence[dict],
    config: str | StageConfig,
    *,
    output_dir=None,
    image_root=None,
    collator=None,
    callbacks=None,
):
    """Train one stage on VQA records with ``transformers.Trainer``.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers VLM (the previous stage's result for S2/S3).
    processor : transformers ProcessorMixin
    records : sequence of dict
        LLaVA-format records (:func:`~wmarkgpt.vqa.to_record`, the builders' ``index.json``).
    config : {"S1", "S2", "S3"} or StageConfig
    output_dir : path, optional
        Trainer's folder (checkpoints off by default; a temporary folder if None).
    image_root : path, optional
        Folder of the records' images.
    collator : callable, optional
        Default :class:`VQACollator`.
    callbacks : list, optional
        ``transformers.TrainerCallback`` objects.

    Returns
    -------
    tuple
        ``(model, history)``: the trained model (the peft model with LoRA) and the Trainer's
        ``log_history``.

    Raises
    ------
    ValueError
        If `records` is empty, `config` is unknown, or `config.lora` is False for a model that
        already has LoRA adapters (merge them first: ``model.merge_and_unload()``).
    """
    import tempfile

    from transformers import Trainer, TrainingArguments

    if isinstance(config, str):
        config = STAGES[check_choice(config, "config", tuple(STAGES))]
    if not isinstance(config, StageConfig):
        raise TypeError(
            f"`config` must be a stage name or StageConfig, got {type(config).__name__}"
        )
    records = list(records)
    if not records:
        raise ValueError("`records` is empty")
    has_lora = any("lora_" in n for n, _ in model.named_parameters())
    if has_lora and not config.lora:
        raise ValueError(
            f"`model` has LoRA adapters (an earlier LoRA stage) but stage {config.name!r} has "
            "lora=False: use lora=True, or merge them first (`model = model.merge_and_unload()`)"
        )
    if config.lora and not has_lora:
        from peft import LoraConfig, get_peft_model

        targets = sorted(
            {
                n.split(".")[-1]
                for n, m in model.named_modules()
                if _part(n) == "llm"
                and isinstance(m, torch.nn.Linear)
                and n.split(".")[-1] != "lm_head"
            }
        )
        model = get_peft_model(
            model,
            LoraConfig(
                r=config.lora_rank,
                lora_alpha=2 * config.lora_rank,
                target_modules=targets,
                lora_dropout=0.0,
            ),
        )
    freeze_for_stage(model, config)
    use_cpu = config.device == "cpu" or not torch.cuda.is_available()
    bf16 = config.bf16 and not use_cpu and torch.cuda.is_bf16_supported()
    folder = output_dir or tempfile.mkdtemp(prefix=f"wmarkgpt-{config.name}-")
    args = TrainingArguments(
        output_dir=str(folder),
        learning_rate=config.learning_rate,
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        lr_scheduler_type=config.scheduler,
        warmup_steps=math.ceil(config.warmup_ratio * _steps(len(records), config)),
        bf16=bf16,
        use_cpu=use_cpu,
        remove_unused_columns=False,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        dataloader_num_workers=0,
        **config.trainer_kwargs,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=_ListDataset(records),
        data_collator=collator or VQACollator(processor, image_root),
        callbacks=callbacks,
    )
    trainer.train()
    return model, trainer.state.log_history


def _steps(n: int, config: StageConfig) -> int:
    if config.max_steps > 0:
        return config.max_steps
    return max(1, math.ceil(n / config.batch_size * config.epochs))


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, records):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]
