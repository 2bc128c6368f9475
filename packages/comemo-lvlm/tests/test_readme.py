"""What the README's blocks compute, on the user's photo of tests/conftest.py."""

import torch


def test_readme_blocks_compute_what_they_say(readme):
    ns = readme.namespace
    assert tuple(ns["grid"]) == (3, 2)
    assert ns["out"].sequences.shape == (1, 4)
    assert ns["pixels"].shape == (7, 3, 448, 448)
    assert ns["pixels"].dtype == torch.float32
    assert ns["logits"].shape == (1, 1798, 100)
    assert ns["plan"].position_ids[0, -3:].tolist() == [259, 260, 261]
    assert tuple(ns["plan"].media_position_ids.shape) == (1, 1792)
    assert len(ns["path"].layer_indices) == 2
