"""What the README's blocks leave, run in one namespace in a temporary folder (the shared
contract runs the blocks and checks the card's sections)."""

import torch


def test_readme_blocks_train_save_and_build_the_strategy(readme):
    namespace = readme.namespace
    assert isinstance(namespace["model"], torch.nn.Module)
    assert len(namespace["history"].rounds) == 5
    assert namespace["state"].round == 1
    assert (readme.folder / "run.pt").exists()
    assert namespace["strategy"].config.name == "FedMoSWA"
