"""Trim the official WMarkGPT evaluation files into the package's data folder (run once, by a
maintainer; nothing reads the source folder at run or test time).

    python tools/trim_official.py SOURCE_DIR   # SOURCE_DIR holds WQA-Real/ and WQA-Synthetic/

Source: github.com/TanSongBai/WMarkGPT (Apache-2.0): playground/WQA-Real/test.json and
result/WQA-{Real,Synthetic}/*. Only the fields the metrics read are kept; see data/NOTICE.
"""

import gzip
import json
import shutil
import sys
from pathlib import Path

MODELS = {  # official answer file -> shipped stem (the official "wmarkgpt-7b.json.json" renamed)
    "wmarkgpt-7b.json.json": "wmarkgpt-7b",
    "qwen2-vl-7b-instruct.json": "qwen2-vl-7b-instruct",
    "mplug-owl2-7B.json": "mplug-owl2-7B",
    "qwen-vl-chat.json": "qwen-vl-chat",
    "llava_1.5_13b_hf.json": "llava_1.5_13b_hf",
    "llava_1.5_7b_hf.json": "llava_1.5_7b_hf",
    "Efficient-Large-Model-NVILA-8B.json": "Efficient-Large-Model-NVILA-8B",
}


def dump(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    with gzip.GzipFile(path, "wb", mtime=0) as f:  # mtime=0: byte-identical reruns
        f.write(text.encode("utf-8"))


def main(source: str) -> None:
    src = Path(source)
    out = Path(__file__).resolve().parents[1] / "src" / "wmarkgpt" / "data"
    test = json.loads((src / "WQA-Real" / "test.json").read_text())
    keep = ("image", "id", "gt_score", "visibility", "conversations")
    dump([{k: item[k] for k in keep} for item in test], out / "WQA-Real" / "test.json.gz")
    for official, stem in MODELS.items():
        answers = json.loads((src / "WQA-Real" / "result" / official).read_text())
        trimmed = [
            {
                "image": a["image"],
                "id": a["id"],
                "visibility": a["visibility"],
                "conversations": [a["conversations"][-1]],  # the model's answer (gpt turn)
            }
            for a in answers
        ]
        dump(trimmed, out / "WQA-Real" / "result" / f"{stem}.json.gz")
        result_name = official.replace(".json.json", ".json")[:-5] + "-result.json"
        scores = json.loads((src / "WQA-Real" / "result" / result_name).read_text())
        dump(
            {k: {f: v[f] for f in ("BLEU_1", "ROUGE_L", "LLM_SCORE")} for k, v in scores.items()},
            out / "WQA-Real" / "result" / f"{stem}-result.json.gz",
        )
    for split in ("WQA-Real/result", "WQA-Synthetic"):
        q = json.loads((src / split / "wmarkgpt_qscore.json").read_text())
        dump(q, out / split / "wmarkgpt_qscore.json.gz")
    shutil.copyfile(src / "LICENSE.official", out / "LICENSE.official")


if __name__ == "__main__":
    main(sys.argv[1])
