"""Training checkpoints and resumes to the same weights as an uninterrupted run."""

import pytest
import torch
from _rc_helpers import frames, tiny_unet
from reframe_cache.train import train_sr


def test_interrupted_training_resumes_to_the_same_weights(tmp_path):
    gt = frames(4, size=(16, 16))
    lr = gt * 0.9
    straight = tiny_unet(seed=1)
    train_sr(straight, lr, gt, 6, crop=8, batch=2, show_progress=False)
    resumed = tiny_unet(seed=1)
    ckpt = tmp_path / "ckpt.pt"
    train_sr(
        resumed,
        lr,
        gt,
        3,
        crop=8,
        batch=2,
        checkpoint=ckpt,
        checkpoint_every=1,
        show_progress=False,
    )
    again = tiny_unet(seed=99)  # a fresh process: weights come from the checkpoint
    info = train_sr(again, lr, gt, 6, crop=8, batch=2, checkpoint=ckpt, show_progress=False)
    assert info["resumed_from"] == 3
    assert len(info["loss"]) == 6
    for (k, a), b in zip(straight.state_dict().items(), again.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=k)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"iters": 0}, "`iters`"),
        ({"crop": 99}, "`crop`"),
        ({"lr": 0.0}, "`lr`"),
        ({"targets": torch.rand(4, 3, 8, 8)}, "same frames and H, W"),
    ],
)
def test_bad_input(kwargs, match):
    args = {"inputs": frames(4), "targets": frames(4), "iters": 1, "crop": 8} | kwargs
    with pytest.raises(ValueError, match=match):
        train_sr(tiny_unet(), args.pop("inputs"), args.pop("targets"), args.pop("iters"), **args)
