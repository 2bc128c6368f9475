"""A tiny random LLaVA (CLIP vision tower + Llama) and its processor, built offline: a word-level
tokenizer from `tokenizers`, CLIP's PIL image processor (no torchvision), no hub weights."""

import numpy as np

WORDS = [
    "<unk>",
    "<s>",
    "</s>",
    "<pad>",
    "<image>",
    "USER:",
    "ASSISTANT:",
    "where",
    "is",
    "the",
    "watermark",
    "visibility",
    "is:",
    "invisible",
    "faint",
    "moderate",
    "visible",
    "obvious",
    "top",
    "left",
    "it",
    "lies",
    "near",
    "edge",
    ".",
]


def build():
    """``(make_model, processor)``: ``make_model()`` returns a freshly seeded tiny LLaVA."""
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

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": "<image>"},
    )
    images = CLIPImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    )
    processor = LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
        ),
        text_config=LlamaConfig(
            vocab_size=len(WORDS),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=128,
        ),
        image_token_index=4,
        vision_feature_layer=-1,
        image_seq_length=16,
        pad_token_id=3,
    )

    def make_model():
        torch.manual_seed(0)
        return LlavaForConditionalGeneration(config)

    return make_model, processor


def records(n=4):
    """``n`` LLaVA records with random pixels (``"pixels"``) and two alternating answers."""
    rng = np.random.default_rng(0)
    answers = [
        "it lies near the edge . the watermark visibility is: faint",
        "top left . the watermark visibility is: obvious",
    ]
    return [
        {
            "id": str(i),
            "pixels": rng.integers(0, 256, (36, 40, 3), dtype=np.uint8),
            "conversations": [
                {"from": "human", "value": "<image>\nwhere is the watermark"},
                {"from": "gpt", "value": answers[i % 2]},
            ],
        }
        for i in range(n)
    ]
