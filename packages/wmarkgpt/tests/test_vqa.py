"""WQA records: the 30 official questions, the position rule (ours, written out), and the
documented LLaVA / LLaMA-Factory ShareGPT schemas."""

import ast

import pytest
from wmarkgpt import (
    DESCRIPTION_QUESTIONS,
    POSITION_LABELS,
    description_prompt,
    llamafactory_dataset_info,
    position_qa,
    relative_position,
    template_description,
    to_record,
)


def test_thirty_official_questions():
    assert len(DESCRIPTION_QUESTIONS) == 30
    assert len(set(DESCRIPTION_QUESTIONS)) == 30
    # the official first and last entries of evaluate/iqa_eval.py's question_list
    assert DESCRIPTION_QUESTIONS[0].startswith("Can you describe the watermark in the image")
    assert DESCRIPTION_QUESTIONS[-1].startswith("What is the watermark’s direction and placement")


OBJ = (100, 50, 200, 150)  # x in [100, 200), y in [50, 150)


@pytest.mark.parametrize(
    ("centre", "label"),
    [
        ((50, 20), "Top-left"),
        ((150, 20), "Middle-top"),
        ((250, 20), "Top-right"),
        ((50, 100), "Middle-left"),
        ((150, 100), "Center"),
        ((250, 100), "Middle-right"),
        ((50, 200), "Bottom-left"),
        ((150, 200), "Middle-bottom"),
        ((250, 200), "Bottom-right"),
        ((100, 50), "Center"),
        ((200, 100), "Middle-right"),
        ((150, 150), "Middle-bottom"),
    ],
)
def test_relative_position_is_the_3x3_partition(centre, label):
    cx, cy = centre
    assert relative_position((cx - 4, cy - 2, cx + 4, cy + 2), OBJ) == label


def test_position_qa_answers_are_labels():
    qa = position_qa((0, 0, 10, 10), [("cat", (20, 20, 50, 50)), ("dog", (0, 0, 60, 60))], rng=0)
    assert {q["object"]: q["answer"] for q in qa} == {"cat": "Top-left", "dog": "Center"}
    assert all(q["answer"] in POSITION_LABELS for q in qa)


def _check_llava(record):
    # LLaVA's training JSON (haotian-liu/LLaVA docs/Finetune_Custom_Data.md): id, image,
    # conversations alternating human/gpt, starting with human; "<image>" once, in the first turn
    assert isinstance(record["id"], str)
    assert isinstance(record["image"], str)
    turns = record["conversations"]
    assert [t["from"] for t in turns] == ["human", "gpt"] * (len(turns) // 2)
    assert turns[0]["value"].count("<image>") == 1
    assert sum(t["value"].count("<image>") for t in turns) == 1


def _check_sharegpt(record, info):
    # LLaMA-Factory data/README.md (multimodal sharegpt, mllm_demo): messages with role/content
    # tags, user/assistant alternating, "<image>" count == len(images)
    tags, columns = info["tags"], info["columns"]
    messages = record[columns["messages"]]
    roles = [m[tags["role_tag"]] for m in messages]
    assert roles == [tags["user_tag"], tags["assistant_tag"]] * (len(roles) // 2)
    n_tags = sum(m[tags["content_tag"]].count("<image>") for m in messages)
    assert n_tags == len(record[columns["images"]]) == 1
    assert info["formatting"] == "sharegpt"


def test_records_follow_the_documented_schemas():
    q, a = DESCRIPTION_QUESTIONS[3], template_description([], (0, 0, 50, 20), "faint")
    _check_llava(to_record("images/x.png", q, a, visibility="faint", gt_score=3.4))
    _check_sharegpt(
        to_record("images/x.png", q, a, format="sharegpt"), llamafactory_dataset_info("wqa.json")
    )


def test_template_and_prompt_end_with_the_format_line():
    objs = [("person", (10, 10, 120, 200))]
    text = template_description(objs, (20, 30, 80, 60), "moderate")
    assert text.startswith("[template]")
    assert text.endswith("The watermark visibility is: moderate.")
    assert "inside the person" in text
    prompt = description_prompt(objs, (20, 30, 80, 60), "moderate")
    assert "Never mention coordinates" in prompt
    assert "(10, 10, 120, 200)" in prompt
    assert ast.literal_eval(prompt.split("Watermark box: ")[1].split("\n")[0]) == (20, 30, 80, 60)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: relative_position((0, 0, 0, 5), OBJ), "wm_box"),
        (lambda: relative_position((0, 0, 5, 5), (1, 2, 3)), "obj_box"),
        (lambda: position_qa((0, 0, 5, 5), []), "objects"),
        (lambda: to_record("x.png", "", "a"), "question"),
        (lambda: to_record("x.png", "q", "a", format="alpaca"), "format"),
        (lambda: to_record("x.png", "q", "a", visibility="clear"), "visibility"),
        (lambda: template_description([], (0, 0, 5, 5), "hidden"), "level"),
        (lambda: description_prompt([("", (0, 0, 1, 1))], (0, 0, 5, 5), "faint"), "objects"),
        (lambda: llamafactory_dataset_info(""), "file_name"),
        (lambda: to_record("x.png", "q", "a", gt_score=float("nan")), "gt_score"),
        (lambda: to_record("x.png", "q", "a", gt_score=99), "gt_score"),
    ],
)
def test_vqa_refuses_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_position_qa_max_questions_zero_asks_none_and_negative_is_refused():
    objs = [("cat", (2, 2, 3, 3)), ("dog", (5, 5, 6, 6))]
    assert position_qa((0, 0, 1, 1), objs, max_questions=0) == []
    assert len(position_qa((0, 0, 1, 1), objs, max_questions=1)) == 1
    with pytest.raises(ValueError, match="max_questions"):
        position_qa((0, 0, 1, 1), objs, max_questions=-1)


def test_template_description_refuses_a_box_outside_the_image():
    with pytest.raises(ValueError, match="outside"):
        template_description([], (0, 0, 300, 10), "faint", (224, 224))
