"""What the README's usage block computes (the shared contract runs it)."""


def test_readme_usage_gives_the_exact_states_and_gradients(readme):
    assert readme.namespace["exact"].shape == (32, 16, 128)
    assert readme.namespace["net"][0].weight.grad is not None


def test_readme_finetuning_block_switches_the_layer_to_the_exact_lif(readme):
    layer = readme.namespace["layer"]
    assert (layer.sample, layer.eval_sample) == ("lif", "lif")
