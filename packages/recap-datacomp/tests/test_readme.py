"""What the README's usage blocks compute (the blocks themselves run in the shared contract)."""


def test_usage_block_recaptions_the_three_photo_shards(readme):
    ns = readme.namespace
    assert ns["stats"].counts == {"ok": 3, "decode_error": 0, "caption_error": 0}
    table = ns["table"].to_pydict()
    assert sorted(table["key"]) == ["astronaut", "chelsea", "coffee"]
    assert table["url"][0].startswith("skimage://")
    assert set(ns["captioner"].run_config) == {"model_id", "prompt_sha256", "generation"}
