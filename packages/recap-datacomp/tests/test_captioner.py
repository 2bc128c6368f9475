"""HFCaptioner on a tiny random LLaVA: batch invariance with left padding (spec test 4,
haotian-liu/LLaVA#754, #1149), only new tokens decoded, determinism, bad input, CUDA."""

import numpy as np
import pytest
import torch
from PIL import Image
from recap_datacomp.captioners import RECAP_PROMPT, HFCaptioner, prompt_sha256
from recap_datacomp.tiny import tiny_llava

PROMPTS = [
    "describe",
    "Please generate a detailed caption of this image.",
    "Please be as descriptive as possible.",
    RECAP_PROMPT,
]


@pytest.fixture(scope="module")
def captioner():
    model, processor = tiny_llava(["red", "circle", "square", "a", "the"], seed=1)
    return HFCaptioner(model, processor, max_new_tokens=8, batch_size=4)


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return [
        Image.fromarray(rng.integers(0, 256, (32 + 4 * i, 40, 3), dtype=np.uint8)) for i in range(4)
    ]


def test_batch_of_4_equals_batch_of_1_tokens_and_first_logits(captioner, images):
    batched = captioner.generate(images, PROMPTS)
    single = [captioner.generate([im], [p]) for im, p in zip(images, PROMPTS, strict=True)]
    for row, one in zip(batched, single, strict=True):
        n = one.shape[1]
        assert torch.equal(row[:n], one[0])
    # first-step logits at the last (non-padded) position, fp32
    inputs = captioner.inputs(images, PROMPTS)
    assert (inputs["attention_mask"][:, 0] == 0).any()  # left padding present
    with torch.no_grad():
        logits_b = captioner.model(**inputs).logits[:, -1]
        for i, (im, p) in enumerate(zip(images, PROMPTS, strict=True)):
            logits_1 = captioner.model(**captioner.inputs([im], [p])).logits[:, -1]
            torch.testing.assert_close(logits_b[i : i + 1], logits_1, atol=1e-4, rtol=0)


def test_captions_are_deterministic_and_exclude_the_prompt(captioner, images):
    a, b = captioner(images), captioner(images)
    assert a == b
    assert len(a) == 4
    new = captioner.generate(images)
    assert new.shape[1] <= 8  # only the new tokens, at most max_new_tokens
    tok = captioner.processor.tokenizer
    assert a == [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]
    assert captioner.run_config["prompt_sha256"] == prompt_sha256(RECAP_PROMPT)
    assert captioner.run_config["generation"] == {"do_sample": False, "max_new_tokens": 8}


def test_from_pretrained_loads_a_saved_model(tmp_path, captioner, images):
    captioner.model.save_pretrained(tmp_path)
    captioner.processor.save_pretrained(tmp_path)
    loaded = HFCaptioner.from_pretrained(str(tmp_path), max_new_tokens=8)
    assert loaded(images[:2]) == captioner(images[:2])
    assert loaded.run_config["model_id"] == str(tmp_path)


def test_hf_captioner_rejects_bad_input(captioner, images):
    model, processor = captioner.model, captioner.processor
    with pytest.raises(ValueError, match="max_new_tokens"):
        HFCaptioner(model, processor, max_new_tokens=0)
    with pytest.raises(ValueError, match="batch_size"):
        HFCaptioner(model, processor, batch_size=-1)
    with pytest.raises(ValueError, match="prompt"):
        HFCaptioner(model, processor, prompt=" ")
    with pytest.raises(ValueError, match="prompts"):
        captioner.inputs(images, ["a"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (DECISIONS 13)")
def test_captioner_runs_on_cuda(images):
    model, processor = tiny_llava(seed=1)
    cap = HFCaptioner(model, processor, max_new_tokens=4, device="cuda")
    assert cap.model.device.type == "cuda"
    assert len(cap(images)) == 4


def test_missing_local_model_folder_is_named(tmp_path):
    """Trial 20, M3: the hub's "Repo id must be ..." never said the folder is missing."""
    from recap_datacomp.cli import main

    for path in ("/nonexistent/x", str(tmp_path / "gone"), "./my-captioner-missing"):
        with pytest.raises(FileNotFoundError, match=r"`path`: local model folder .*does not exist"):
            HFCaptioner.from_pretrained(path)
    with pytest.raises(FileNotFoundError, match="`--model`: local model folder"):
        main(["train-clip", "x.tar", "--model", "/nonexistent/clip", "--out", str(tmp_path)])
