"""What the README's usage block computes (the blocks themselves run in the shared contract)."""

from _rc_helpers import hand_unet_flops


def test_usage_block_wraps_and_counts_exact_flops(readme):
    fast = readme.namespace["fast"]
    assert fast.frames == 0  # reset() at the end of the block
    assert fast.flops(readme.namespace["frames"][:1]) == dict(
        zip(("full", "hit"), hand_unet_flops((16, 32, 64, 128), 3, 3, 96, 128), strict=True)
    )
    assert len(readme.namespace["outs"]) == 8
    assert readme.namespace["outs"][0].shape == (
        1,
        3,
        96,
        128,
    )
