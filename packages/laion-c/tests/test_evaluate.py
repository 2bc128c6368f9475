"""Spec §5.7: the evaluator on a synthetic official-layout folder gives hand-computed
accuracies; normalize=None feeds [0, 1] tensors; errors list missing cells / unknown folders.
Issue 33.3: any callable, returning logits or probabilities (``outputs=``), is scored alike."""

import numpy as np
import pytest
import torch
from laion_c import SUPERCLASSES, SuperclassHead, aggregate, evaluate
from laion_c.evaluate import Results
from PIL import Image

CAT, FISH = SUPERCLASSES["cat"][0], SUPERCLASSES["fish"][0]


class Brightness(torch.nn.Module):
    """Predicts 'cat' for bright images and 'fish' for dark ones; records its inputs."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x.clone())
        bright = x.mean(dim=(1, 2, 3)) > 0.5
        logits = torch.full((len(x), 1000), -10.0)
        logits[bright, CAT] = 10.0
        logits[~bright, FISH] = 10.0
        return logits


def write(folder, name, value, size=(40, 50)):
    folder.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((*size, 3), value, np.uint8)).save(folder / f"{name}.png")


@pytest.fixture
def root(tmp_path):
    # mosaic L1: cat = white, white, black (2/3 right); fish = black (right) -> 3/4
    cell = tmp_path / "mosaic" / "intensity_level_1"
    write(cell / "cat", "a", 255), write(cell / "cat", "b", 255), write(cell / "cat", "c", 0)
    write(cell / "fish", "d", 0)
    # mosaic L2: cat = black (wrong); fish = white (wrong) -> 0/2
    cell = tmp_path / "mosaic" / "intensity_level_2"
    write(cell / "cat", "a", 0), write(cell / "fish", "b", 255)
    # glitched L1: cat = 200 (right) -> 1/1
    write(tmp_path / "glitched" / "intensity_level_1" / "cat", "a", 200)
    return tmp_path


def test_accuracies_are_the_hand_computed_ones(root):
    model = Brightness()
    results = evaluate(
        model, root, normalize=None, distortions=["mosaic"], levels=[1, 2], batch_size=2
    )
    assert results.counts == {("mosaic", 1): (3, 4), ("mosaic", 2): (0, 2)}
    assert results.accuracy == {("mosaic", 1): 0.75, ("mosaic", 2): 0.0}
    assert results.mean() == pytest.approx(0.375)
    csv = results.to_csv().splitlines()
    assert csv[0] == "model,augmentation,intensity_level,accuracy"
    assert csv[1] == "model,mosaic,1,0.750000"
    assert "| mosaic | 75.0 [" in results.to_markdown()


def test_normalize_none_passes_unit_range_images(root):
    model = Brightness()
    evaluate(model, root, normalize=None, distortions="glitched", levels=1)
    x = model.seen[0]
    assert x.shape == (1, 3, 224, 224)
    assert torch.allclose(x, torch.full_like(x, 200 / 255))


def test_normalize_imagenet_and_custom(root):
    model = Brightness()
    evaluate(model, root, normalize="imagenet", distortions="glitched", levels=1)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    expected = (torch.full((1, 3, 224, 224), 200 / 255) - mean) / std
    assert torch.allclose(model.seen[0], expected, atol=1e-6)
    model = Brightness()
    evaluate(model, root, normalize=((0.5,) * 3, (0.5,) * 3), distortions="glitched", levels=1)
    assert torch.allclose(model.seen[0], torch.full((1, 3, 224, 224), (200 / 255 - 0.5) / 0.5))


def test_missing_cells_are_listed(root):
    with pytest.raises(FileNotFoundError, match=r"glitched/intensity_level_2.*stickers"):
        evaluate(
            Brightness(), root, normalize=None, distortions=["glitched", "stickers"], levels=[1, 2]
        )


def test_unknown_superclass_folder_is_named(root):
    write(root / "glitched" / "intensity_level_1" / "kangaroo", "x", 10)
    with pytest.raises(ValueError, match="kangaroo"):
        evaluate(Brightness(), root, normalize=None, distortions="glitched", levels=1)


def test_results_level_means():
    results = Results.from_counts({("a", 1): (1, 2), ("b", 1): (1, 1), ("a", 2): (0, 3)})
    assert results.level_means() == {1: 0.75, 2: 0.0}


def brightness_probs(x):
    """A plain function (no nn.Module) returning probabilities: 0.9 on cat (bright) or fish
    (dark), the rest spread evenly, so rows sum to 1."""
    bright = x.mean(dim=(1, 2, 3)) > 0.5
    probs = torch.full((len(x), 1000), 0.1 / 999)
    probs[bright, CAT] = 0.9
    probs[~bright, FISH] = 0.9
    return probs


def test_a_plain_callable_returning_probabilities_is_scored_as_the_module(root):
    kwargs = dict(normalize=None, distortions=["mosaic"], levels=[1, 2])
    results = evaluate(brightness_probs, root, outputs="probs", **kwargs)
    assert results.counts == {("mosaic", 1): (3, 4), ("mosaic", 2): (0, 2)}
    as_numpy = evaluate(lambda x: brightness_probs(x).numpy(), root, outputs="probs", **kwargs)
    assert as_numpy.counts == results.counts
    logits = evaluate(lambda x: Brightness()(x), root, **kwargs)  # a callable returning logits
    assert logits.counts == results.counts


def test_head_with_probs_equals_aggregate():
    x = torch.rand(3, 3, 8, 8)
    head = SuperclassHead(brightness_probs, normalize=None, outputs="probs")
    expected = aggregate(brightness_probs(x).double().numpy())
    np.testing.assert_allclose(head(x).double().numpy(), expected, rtol=1e-6)


def test_logits_given_as_probabilities_raise_naming_outputs(root):
    with pytest.raises(ValueError, match=r"outputs='probs'.*negative"):
        evaluate(
            Brightness(), root, normalize=None, outputs="probs", distortions="glitched", levels=1
        )
    doubled = lambda x: 2 * brightness_probs(x)  # noqa: E731 - rows summing to 2
    with pytest.raises(ValueError, match=r"`model` output .*sum to 1"):
        evaluate(doubled, root, normalize=None, outputs="probs", distortions="glitched", levels=1)


def test_probabilities_given_as_logits_warn(root):
    with pytest.warns(UserWarning, match="outputs='probs'"):
        evaluate(brightness_probs, root, normalize=None, distortions="glitched", levels=1)
