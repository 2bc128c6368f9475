"""Tiny random-initialised models and word-level tokenizers built offline (extra ``[hf]``).

No hub weights: a tiny LLaVA (``LlavaConfig`` + tiny ``CLIPVisionConfig``/``LlamaConfig``) with a
word-level ``tokenizers`` vocabulary for the pipeline's tests and reproduce, and a word-level
tokenizer for the tiny CLIP (DECISIONS 15).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .captioners import HFCaptioner

SPECIALS = ("<pad>", "<unk>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:")
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ 'USER:' if m['role'] == 'user' else 'ASSISTANT:' }}"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %} <image>{% else %} {{ c['text'] }}"
    "{% endif %}{% endfor %}{% endfor %}{% if add_generation_prompt %} ASSISTANT:{% endif %}"
)


class WordTokenizer:
    """Whitespace word-level tokenizer with fixed context (pad 0, unk 1, bos 2, eos 3).

    ``tokenizer(texts) -> LongTensor [B, context_length]``: ``<s> words </s>`` then padding;
    longer texts are truncated to `context_length` with ``</s>`` kept last (as CLIP tokenizers do).

    Parameters
    ----------
    words : sequence of str
        The vocabulary (lower-cased on lookup).
    context_length : int, default=64
    """

    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(self, words: Sequence[str], context_length: int = 64) -> None:
        if context_length < 2:
            raise ValueError(f"`context_length` must be >= 2, got {context_length}")
        self.vocab = {w: i for i, w in enumerate(SPECIALS[:4])}
        for w in words:
            self.vocab.setdefault(w.lower(), len(self.vocab))
        self.context_length = context_length

    def __len__(self) -> int:
        return len(self.vocab)

    def ids(self, text: str) -> list[int]:
        """Token ids of one text with ``<s>``/``</s>``, untruncated."""
        body = [self.vocab.get(w, self.unk_id) for w in text.lower().split()]
        return [self.bos_id, *body, self.eos_id]

    def __call__(self, texts: Sequence[str] | str) -> Any:
        import torch

        texts = [texts] if isinstance(texts, str) else list(texts)
        out = torch.full((len(texts), self.context_length), self.pad_id, dtype=torch.long)
        for i, text in enumerate(texts):
            ids = self.ids(text)
            if len(ids) > self.context_length:
                ids = [*ids[: self.context_length - 1], self.eos_id]
            out[i, : len(ids)] = torch.tensor(ids)
        return out


def tiny_llava(
    words: Sequence[str] = (), *, seed: int = 0, image_size: int = 32
) -> tuple[Any, Any]:
    """A tiny random LLaVA and its processor, offline: ``(model, processor)``.

    Vision: CLIP ViT (hidden 32, 1 layer, patch 8); language: Llama (hidden 32, 2 layers); the
    vocabulary is :data:`SPECIALS` + the recaption prompt's words + `words`.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessorPil,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    from .captioners import RECAP_PROMPT

    vocab: dict[str, int] = {}
    for w in (*SPECIALS, *RECAP_PROMPT.split(), *words):
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )
    patch = 8
    extra: dict[str, Any] = {"pad_token_id": vocab["<pad>"]}
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": image_size},
            crop_size={"height": image_size, "width": image_size},
        ),
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=image_size,
            patch_size=patch,
        ),
        text_config=LlamaConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=512,
            pad_token_id=vocab["<pad>"],
            bos_token_id=vocab["<s>"],
            eos_token_id=vocab["</s>"],
        ),
        image_token_index=vocab["<image>"],
        vision_feature_layer=-1,
        image_seq_length=(image_size // patch) ** 2,
        **extra,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    return model, processor


def tiny_llava_captioner(
    words: Sequence[str] = (),
    *,
    seed: int = 0,
    max_new_tokens: int = 16,
    batch_size: int = 8,
    **kw: Any,
) -> HFCaptioner:
    """:class:`HFCaptioner` around :func:`tiny_llava` (model id ``"tiny-random-llava"``)."""
    model, processor = tiny_llava(words, seed=seed)
    return HFCaptioner(
        model,
        processor,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        model_id=f"tiny-random-llava-seed{seed}",
        **kw,
    )
