"""The three-stage recipe on a tiny random LLaVA built offline (spec Sec. 5, test 9)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from icml25_core import process_group

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from wmarkgpt.training import (  # noqa: E402
    STAGES,
    StageConfig,
    VQACollator,
    freeze_for_stage,
    parameter_groups,
    train_stage,
)


@pytest.fixture(scope="module")
def tiny():
    from tiny_llava import build

    return build()


def _records(n=4):
    from tiny_llava import records

    return records(n)


@pytest.mark.parametrize("stage", list(STAGES))
def test_freeze_for_stage_requires_grad_sets(tiny, stage):
    make, _ = tiny
    model = freeze_for_stage(make(), stage)
    groups = parameter_groups(model)
    params = dict(model.named_parameters())
    assert all(not params[n].requires_grad for n in groups["vision"])
    assert all(params[n].requires_grad for n in groups["projector"] + groups["llm"])
    assert all("vision_tower" in n for n in groups["vision"])
    assert groups["projector"]
    assert "lm_head.weight" in groups["llm"]
    only_projector = freeze_for_stage(model, StageConfig("S1", "x", trainable=("projector",)))
    trained = {n for n, p in only_projector.named_parameters() if p.requires_grad}
    assert trained == set(groups["projector"])


def test_collator_labels_only_assistant_tokens(tiny):
    _, processor = tiny
    records = _records(2)
    batch = VQACollator(processor)(records)
    tok = processor.tokenizer
    for row, record in enumerate(records):
        answer_ids = tok(" " + record["conversations"][1]["value"] + "</s>")["input_ids"]
        labelled = batch["labels"][row][batch["labels"][row] != -100].tolist()
        assert labelled == answer_ids
        n_image = int((batch["input_ids"][row] == 4).sum())
        assert n_image == 16  # (32 / 8)^2 patches ("default" drops CLS): no label on them
    assert set(batch) >= {"input_ids", "attention_mask", "pixel_values", "labels"}


def _loss(model, batch):
    model.eval()
    with torch.no_grad():
        return float(model(**batch).loss)


@pytest.mark.slow
def test_one_stage_lowers_the_loss_on_a_repeated_batch(tiny, tmp_path):
    make, processor = tiny
    model = make()
    records = _records(4)
    batch = VQACollator(processor)(records)
    before = _loss(model, batch)
    config = StageConfig(
        "S2",
        "WQA-Synthetic",
        learning_rate=3e-3,
        max_steps=12,
        batch_size=4,
        warmup_ratio=0.0,
        device="cpu",
    )
    vision = {n: p.detach().clone() for n, p in model.named_parameters() if "vision_tower" in n}
    model, history = train_stage(model, processor, records, config, output_dir=tmp_path)
    after = _loss(model, batch)
    assert after < 0.8 * before, (before, after)
    for n, p in model.named_parameters():  # the frozen encoder did not move
        if n in vision:
            assert torch.equal(p, vision[n])
    assert any("loss" in h for h in history)


def test_lora_stage_trains_adapters_and_projector_only(tiny, tmp_path):
    pytest.importorskip("peft")
    make, processor = tiny
    config = StageConfig("S3", "WQA-Real", max_steps=1, batch_size=2, device="cpu").with_lora()
    assert config.learning_rate == 2e-4
    model, _ = train_stage(make(), processor, _records(2), config, output_dir=tmp_path)
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trained
    assert all("lora_" in n or "multi_modal_projector" in n for n in trained)
    assert any("multi_modal_projector" in n for n in trained)
    assert any("lora_" in n for n in trained)
    # a full (lora=False) stage on the LoRA model is refused: it would train the adapters only
    with pytest.raises(ValueError, match="merge_and_unload"):
        train_stage(model, processor, _records(2), StageConfig("S3", "x", device="cpu"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none here)")
def test_stage_runs_on_cuda(tiny, tmp_path):
    make, processor = tiny
    config = StageConfig("S1", "WQA-Position", max_steps=2, batch_size=2, learning_rate=1e-3)
    model, _ = train_stage(make(), processor, _records(2), config, output_dir=tmp_path)
    assert next(model.parameters()).device.type == "cuda"


def test_collator_labels_every_assistant_turn_of_a_multi_turn_record(tiny):
    _, processor = tiny
    (record,) = _records(1)
    answers = ["top left", "it lies near the edge"]
    record["conversations"] = [
        {"from": "human", "value": "<image>\nwhere is the watermark"},
        {"from": "gpt", "value": answers[0]},
        {"from": "human", "value": "where is the watermark"},
        {"from": "gpt", "value": answers[1]},
    ]
    batch = VQACollator(processor)([record])
    tok = processor.tokenizer
    expected = [i for a in answers for i in tok(" " + a + "</s>")["input_ids"]]
    assert batch["labels"][0][batch["labels"][0] != -100].tolist() == expected
    assert int((batch["input_ids"][0] == 4).sum()) == 16  # one image, in the first turn


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_stage_config_refuses_cuda_without_a_gpu():
    with pytest.raises(ValueError, match="no CUDA device"):
        StageConfig("S1", "x", device="cuda")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, p: freeze_for_stage(m, "S4"), "stage"),
        (lambda m, p: StageConfig("S1", "x", trainable=("decoder",)), "trainable"),
        (lambda m, p: StageConfig("S1", "x", learning_rate=0), "learning_rate"),
        (lambda m, p: StageConfig("S1", "x", batch_size=0), "batch_size"),
        (lambda m, p: StageConfig("S1", "x", trainable="llm"), "sequence"),
        (lambda m, p: StageConfig("S1", "x", trainable=()), "sequence"),
        (lambda m, p: StageConfig("S1", "x", scheduler="bogus"), "scheduler"),
        (
            lambda m, p: VQACollator(p)(
                [{"id": "x", "conversations": _records(1)[0]["conversations"]}]
            ),
            "image",
        ),
        (lambda m, p: VQACollator(p)([{"id": "x", "messages": []}]), "ShareGPT"),
        (lambda m, p: train_stage(m, p, [], "S1"), "records"),
        (lambda m, p: train_stage(m, p, _records(1), "S9"), "config"),
        (lambda m, p: parameter_groups(torch.nn.Linear(2, 2)), "vision"),
        (
            lambda m, p: VQACollator(p)(
                [{"id": "x", "pixels": np.zeros((8, 8, 3), np.uint8), "conversations": []}]
            ),
            "human",
        ),
    ],
)
def test_training_refuses_bad_input(tiny, call, match):
    make, processor = tiny
    with pytest.raises(ValueError, match=match):
        call(make(), processor)


@pytest.mark.slow
def test_stage_trains_data_parallel_under_torchrun(tmp_path):
    # spec Sec. 7: HF Trainer under torchrun; 2 gloo ranks on CPU, global batch 2 x 2
    script = Path(__file__).with_name("ddp_stage.py")
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
               "--standalone", str(script), str(tmp_path)]  # fmt: skip
    log = tmp_path / "torchrun.log"
    with process_group(command, log=log, cwd=script.parent) as proc:
        try:
            proc.wait(timeout=240)
        except subprocess.TimeoutExpired:
            pytest.fail("torchrun did not finish in 240 s:\n" + log.read_text()[-2000:])
    assert proc.returncode == 0, log.read_text()[-3000:]
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert torch.equal(ranks[0]["weight"], ranks[1]["weight"])  # DDP keeps replicas equal
    assert not torch.equal(ranks[0]["weight"], ranks[0]["initial"])  # and it trained
