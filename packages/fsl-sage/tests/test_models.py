"""Spec test 10 (split composition) and the model builders' shapes and errors."""

import math

import pytest
import torch
from fsl_sage import (
    GradScalarAux,
    LinearGradScalarAux,
    SplitSpec,
    resnet18_split,
    simple_conv_split,
    split_sequential,
)
from torch import nn


@pytest.mark.parametrize("cut", [1, 2, 4])
def test_split_sequential_composes_to_full_model(cut):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 5 * 5, 4), nn.LogSoftmax(dim=1)
    )
    client, server = split_sequential(model, cut)
    x = torch.randn(6, 1, 7, 7)
    torch.testing.assert_close(server(client(x)), model(x), atol=0, rtol=0)


@pytest.mark.parametrize(
    ("model", "cut", "error", "match"),
    [
        (nn.Sequential(nn.Linear(2, 2), nn.ReLU()), 0, ValueError, "cut"),
        (nn.Sequential(nn.Linear(2, 2), nn.ReLU()), 2, ValueError, "cut"),
        (nn.Sequential(nn.Linear(2, 2), nn.ReLU()), -1, ValueError, "cut"),
        (nn.Sequential(nn.Linear(2, 2), nn.ReLU()), 1.0, TypeError, "cut"),
        (nn.Linear(2, 2), 1, TypeError, "model"),
    ],
)
def test_split_sequential_rejects_bad_input(model, cut, error, match):
    with pytest.raises(error, match=match):
        split_sequential(model, cut)


def _mlp(*tail):
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 5), *tail)


X16 = torch.randn(3, 1, 4, 4)


@pytest.mark.parametrize(
    ("model", "kwargs", "error", "match"),
    [
        (_mlp(), {}, ValueError, "log-probabilities"),  # no LogSoftmax: NLL on raw logits
        (_mlp(nn.LogSoftmax(dim=1)), {"num_classes": 7}, ValueError, "num_classes=7"),
        (_mlp(nn.LogSoftmax(dim=1)), {"example_input": torch.randn(3, 1, 5, 5)}, ValueError,
         "`example_input` of per-sample shape"),
        (_mlp(nn.LogSoftmax(dim=1)), {"example_input": X16.double()}, TypeError, "example_input"),
        (_mlp(nn.LogSoftmax(dim=1)), {"example_input": X16[:0]}, ValueError, "example_input"),
        (_mlp(nn.LogSoftmax(dim=1)), {"example_input": torch.full((2, 1, 4, 4), float("nan"))},
         ValueError, "example_input"),
        (_mlp(nn.LogSoftmax(dim=1)), {"example_input": X16.numpy()}, TypeError, "example_input"),
        (_mlp(nn.LogSoftmax(dim=1)), {"example_input": torch.randn(16)}, ValueError,
         "example_input"),
    ],
)  # fmt: skip
def test_from_sequential_rejects_bad_input(model, kwargs, error, match):
    args = {"cut": 3, "example_input": X16, "num_classes": 5, **kwargs}
    with pytest.raises(error, match=match):
        SplitSpec.from_sequential(model, **args)


def test_from_sequential_leaves_batchnorm_statistics_untouched():
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3), nn.LogSoftmax(1)
    )
    before = {k: v.clone() for k, v in model.state_dict().items()}
    split = SplitSpec.from_sequential(model, cut=2, example_input=X16, num_classes=3)
    assert split.cut_shape == (2, 2, 2)
    assert model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k


@pytest.mark.parametrize(
    ("image_size", "widths", "cut_shape"), [(28, (16, 32), (32, 7, 7)), (32, (64, 64), (64, 8, 8))]
)
def test_simple_conv_split_shapes(image_size, widths, cut_shape):
    split = simple_conv_split(3, 10, image_size, widths)
    assert split.cut_shape == cut_shape
    x = torch.randn(2, 3, image_size, image_size)
    z = split.client(x)
    assert tuple(z.shape[1:]) == cut_shape
    out = split.server(z)
    assert out.shape == (2, 10)
    torch.testing.assert_close(out.exp().sum(1), torch.ones(2))
    aux = split.aux_factory()
    assert isinstance(aux, LinearGradScalarAux)
    assert aux.linear.weight.shape == (10, math.prod(cut_shape))


def test_simple_conv_server_init_is_normal_005():
    torch.manual_seed(0)
    w = simple_conv_split(widths=(16, 32)).server[1].weight.detach()
    assert abs(float(w.std()) - 0.05) < 0.002
    assert abs(float(w.mean())) < 0.002


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"in_channels": 0}, "in_channels"),
        ({"num_classes": 1}, "num_classes"),
        ({"image_size": 0}, "image_size"),
        ({"widths": (16,)}, "widths"),
        ({"widths": (16, 0)}, "widths"),
    ],
)
def test_simple_conv_split_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simple_conv_split(**kwargs)


def test_aux_rejects_smashed_data_of_another_cut_shape():
    split = simple_conv_split(widths=(16, 32))
    aux = split.aux_factory()
    z = torch.randn(2, 32, 6, 6)
    with pytest.raises(ValueError, match=r"\(32, 6, 6\).*\(32, 7, 7\)"):
        aux.estimate(z, torch.zeros(2, dtype=torch.int64))


def test_split_spec_from_sequential_finds_cut_shape_and_composes():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10), nn.LogSoftmax(dim=1)
    )
    x = torch.randn(5, 1, 8, 8)
    split = SplitSpec.from_sequential(model, 3, x, 10)
    assert split.cut_shape == (32,)
    torch.testing.assert_close(split.server(split.client(x)), model(x), atol=0, rtol=0)
    assert split.aux_factory().linear.weight.shape == (10, 32)
    with pytest.raises(ValueError, match="num_classes"):
        SplitSpec.from_sequential(model, 3, x, 1)


def test_resnet18_split_needs_the_vision_extra_or_gives_the_documented_shapes():
    try:
        import torchvision  # noqa: F401 - optional [vision] extra, never in [test]
    except ImportError:
        with pytest.raises(ImportError, match=r"fsl-sage\[vision\]"):
            resnet18_split(10)
        return
    split = resnet18_split(10)
    assert split.cut_shape == (128, 4, 4)
    z = split.client(torch.randn(2, 3, 32, 32))
    assert split.server(z).shape == (2, 10)
    assert split.aux_factory()(z).shape == (2, 10)


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"num_classes": 1}, ValueError, "`num_classes` must be >= 2"),
        ({"aux_factory": None, "num_classes": 1}, TypeError, "`aux_factory` must be a callable"),
        ({"cut_shape": (0,)}, ValueError, "`cut_shape`"),
        ({"cut_shape": "32"}, TypeError, "`cut_shape`"),
        ({"server": lambda z: z}, TypeError, "`server` must be an nn.Module"),
    ],
)
def test_split_spec_rejects_bad_fields(hand_split, changes, error, match):
    with pytest.raises(error, match=match):
        hand_split(**changes)


@pytest.mark.parametrize(
    ("aux_factory", "error", "match"),
    [
        (lambda: nn.Linear(32, 10), TypeError, "`aux_factory` must return a GradScalarAux"),
        (lambda: LinearGradScalarAux(16, 10), ValueError,
         r"`aux_factory` takes inputs of shape \(16,\), not the cut shape \(32,\)"),
        (lambda: GradScalarAux(nn.Linear(32, 10)), ValueError,
         "auxiliary model of `aux_factory` must output log-probabilities"),
        (lambda: GradScalarAux(nn.Sequential(nn.Linear(16, 10), nn.LogSoftmax(1))), ValueError,
         r"the cut shape \(32,\) does not fit the auxiliary model of `aux_factory`"),
        (lambda: LinearGradScalarAux(32, 7), ValueError, r"num_classes=10\]"),
    ],
)  # fmt: skip
def test_check_aux_names_the_factory_and_the_cut(hand_split, aux_factory, error, match):
    split = hand_split(aux_factory=aux_factory)
    with pytest.raises(error, match=match):
        split.check_aux(split.aux_factory())
