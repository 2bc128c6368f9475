"""Spec §5.6: `aggregate` / `predict` equal a per-sample dict loop written from the official rule
(mean of member probabilities, ties to the first superclass); 285 classes, 16 group sizes."""

from collections import defaultdict

import numpy as np
import torch
from laion_c import SUPERCLASSES, SuperclassHead, aggregate, predict, superclass_matrix

GROUP_SIZES = {
    "fish": 12, "bird": 49, "snakes": 16, "dog": 109, "cat": 6, "butterfly": 6, "primate": 18,
    "instruments": 13, "timekeeping": 6, "chair": 6, "ball": 6, "car_truck": 11, "bottle": 7,
    "boat": 7, "tools": 7, "fruit": 6,
}  # fmt: skip


def dict_loop(probs):
    """The official per-sample loop: class -> superclass lists, mean, max over dict order."""
    owner = {c: name for name, members in SUPERCLASSES.items() for c in members}
    scores, preds = [], []
    for row in probs:
        by_class = defaultdict(list)
        for c, p in enumerate(row):
            if c in owner:
                by_class[owner[c]].append(p)
        means = {name: sum(v) / len(v) for name, v in by_class.items()}
        scores.append([means[name] for name in SUPERCLASSES])
        preds.append(list(SUPERCLASSES).index(max(means, key=means.get)))
    return np.array(scores), np.array(preds)


def test_aggregate_equals_dict_loop_on_random_rows():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(10_000, 1000)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    scores, preds = dict_loop(probs)
    np.testing.assert_allclose(aggregate(probs), scores, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(predict(probs), preds)


def test_ties_go_to_the_first_superclass():
    # dyadic values, rows summing to 1: sums and means are exact
    probs = np.zeros((2, 1000))
    probs[0, SUPERCLASSES["fruit"]] = 2.0**-4
    probs[0, SUPERCLASSES["cat"]] = 2.0**-4  # equal means: cat comes before fruit
    probs[0, 5] = 0.25  # class 5 belongs to no superclass
    probs[1] = 2.0**-10  # all equal: fish
    probs[1, 5] += 24 * 2.0**-10
    _scores, preds = dict_loop(probs)
    np.testing.assert_array_equal(predict(probs), preds)
    assert list(predict(probs)) == [list(SUPERCLASSES).index("cat"), 0]


def test_matrix_has_285_members_and_16_groups():
    matrix = superclass_matrix()
    assert matrix.shape == (1000, 16)
    assert np.count_nonzero(matrix) == 285
    assert {name: len(m) for name, m in SUPERCLASSES.items()} == GROUP_SIZES
    np.testing.assert_allclose(matrix.sum(0), 1.0)
    assert (np.count_nonzero(matrix, axis=1) <= 1).all()


def test_custom_mapping():
    mapping = {"a": [0, 1], "b": [2]}
    probs = np.array([[0.3, 0.1, 0.25, 0.35]])
    np.testing.assert_allclose(aggregate(probs, mapping), [[0.2, 0.25]])


def test_superclass_head_matches_numpy():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 1000))
    head = SuperclassHead(model, normalize=None)
    x = torch.rand(4, 3, 8, 8)
    with torch.no_grad():
        probs = model(x).softmax(1).double().numpy()
        out = head(x).double().numpy()
    np.testing.assert_allclose(out, aggregate(probs), rtol=1e-5, atol=1e-7)


def test_ties_go_to_the_first_superclass_whatever_the_batch_size(tmp_path):
    """Issue 34.14: constant logits make all 16 superclass means equal (each is 1/1000), so by
    the official rule every image is predicted as the first superclass, 'fish', for batch sizes
    1 and 32 alike (was: 'fish' for 1 row, 'dog' for a batch, from float32 matmul rounding)."""
    import numpy as np
    import torch
    from laion_c import SuperclassHead, evaluate
    from laion_c.superclass import NAMES
    from PIL import Image

    cell = tmp_path / "glitched" / "intensity_level_1"
    for k, name in enumerate(["fish", "cat", "dog"] * 3):
        (cell / name).mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((40, 40, 3), 20 * k, np.uint8)).save(cell / name / f"{k}.png")
    model = lambda x: torch.zeros(x.shape[0], 1000)  # noqa: E731
    for n in (1, 2, 4, 32):
        scores = SuperclassHead(model, normalize=None)(torch.zeros(n, 3, 8, 8))
        assert (scores.argmax(1) == NAMES.index("fish")).all(), n
    accuracy = {
        bs: evaluate(model, tmp_path, normalize=None, batch_size=bs, distortions="glitched",
                     levels=1).accuracy[("glitched", 1)]
        for bs in (1, 32)
    }  # fmt: skip
    assert accuracy == {1: 3 / 9, 32: 3 / 9}  # exactly the 3 fish images are right
