"""Spec test 14: every public entry point rejects bad input with a clear error."""

import pytest
import torch
from quest_qat import (
    AbsMaxSTEQuantizer,
    LSQQuantizer,
    PACTQuantizer,
    QuESTConfig,
    QuESTInt4Linear,
    QuESTLinear,
    QuESTQuantizer,
    ScalingLaw,
    block_hadamard,
    convert_,
    gaussian_mse,
    hadamard_matrix,
    int4_matmul,
    load_quantized,
    mask_stats,
    optimal_gaussian_scale,
    pack_int4,
    prepare_,
    quantize_codes,
    quest_quantize,
    save_quantized,
    unpack_int4,
)
from quest_qat.data import load_fortunes, load_text
from torch import nn


def _colwise(**kwargs):
    from quest_qat.parallel import QuESTColwiseParallel

    return QuESTColwiseParallel(**kwargs)


def _rowwise(**kwargs):
    from quest_qat.parallel import QuESTRowwiseParallel

    return QuESTRowwiseParallel(**kwargs)


def _shard(dim):
    from torch.distributed.tensor import Shard

    return Shard(dim)


X = torch.randn(4, 128)
NAN = X.clone()
NAN[0, 0] = float("nan")

CASES = [
    (lambda: optimal_gaussian_scale(1.585), ValueError, "bits"),
    (lambda: optimal_gaussian_scale(0), ValueError, "bits"),
    (lambda: optimal_gaussian_scale(9), ValueError, "bits"),
    (lambda: optimal_gaussian_scale(True), ValueError, "bits"),
    (lambda: gaussian_mse(4, scale=-1.0), ValueError, "scale"),
    (lambda: gaussian_mse(3, grid="fp4"), ValueError, "bits"),
    (lambda: gaussian_mse(4, grid="nf4"), ValueError, "grid"),
    (lambda: hadamard_matrix(12), ValueError, "n"),
    (lambda: block_hadamard(X, 96), ValueError, "block"),
    (lambda: block_hadamard(torch.randn(2, 100)), ValueError, "K=100"),
    (lambda: block_hadamard(torch.ones(2, 128, dtype=torch.int32)), TypeError, "x"),
    (lambda: quest_quantize(X, 1.585), ValueError, "bits"),
    (lambda: quest_quantize(X, 9), ValueError, "bits"),
    (lambda: quest_quantize(X, True), ValueError, "bits"),
    (lambda: quest_quantize(X, 4, block=100), ValueError, "block"),
    (lambda: quest_quantize(torch.randn(3, 200), 4), ValueError, "block=128"),
    (lambda: quest_quantize(torch.ones(2, 128, dtype=torch.int64)), TypeError, "x"),
    (lambda: quest_quantize([1.0, 2.0]), TypeError, "x"),
    (lambda: quest_quantize(NAN), ValueError, "NaN"),
    (lambda: quest_quantize(torch.tensor(1.0)), ValueError, "dimension"),
    (lambda: quest_quantize(X, trust=0.0), ValueError, "trust"),
    (lambda: quest_quantize(X, clip_scale=-1.0), ValueError, "clip_scale"),
    (lambda: quest_quantize(X, grid="nf4"), ValueError, "grid"),
    (lambda: quest_quantize(X, 2, grid="fp4"), ValueError, "bits"),
    (lambda: quantize_codes(NAN), ValueError, "NaN"),
    (lambda: quantize_codes(X, 0), ValueError, "bits"),
    (lambda: QuESTQuantizer(4, block=3), ValueError, "block"),
    (lambda: QuESTQuantizer(4, sparse48=True, block=4), ValueError, "sparse48"),
    (lambda: QuESTQuantizer(4)(torch.ones(2, 128, dtype=torch.int8)), TypeError, "x"),
    (lambda: QuESTQuantizer(4)(torch.randn(2, 64)), ValueError, "K=64"),
    (lambda: AbsMaxSTEQuantizer(0), ValueError, "bits"),
    (lambda: LSQQuantizer(1), ValueError, "bits"),
    (lambda: LSQQuantizer(4, step_init=-1.0), ValueError, "step_init"),
    (lambda: PACTQuantizer(4, clip_init=0.0), ValueError, "clip_init"),
    (lambda: QuESTConfig(w_bits=1.585), ValueError, "w_bits"),
    (lambda: QuESTConfig(a_bits=9), ValueError, "a_bits"),
    (lambda: QuESTConfig(None, None), ValueError, "w_bits"),
    (lambda: QuESTConfig(block=100), ValueError, "block"),
    (lambda: QuESTConfig(on_incompatible="ignore"), ValueError, "on_incompatible"),
    (lambda: prepare_("model"), TypeError, "model"),
    (lambda: prepare_(nn.Linear(128, 4), {"w_bits": 4}), TypeError, "config"),
    (lambda: prepare_(nn.Sequential(nn.Linear(100, 4))), ValueError, r"'0'.*K=100.*block=128"),
    (lambda: convert_(3), TypeError, "model"),
    (lambda: mask_stats(None), TypeError, "model"),
    (
        lambda: QuESTLinear.from_linear(
            nn.Linear(128, 4), QuESTQuantizer(4), QuESTQuantizer(4, half=False)
        ),
        ValueError,
        "half",
    ),
    (lambda: QuESTLinear.from_linear(nn.Conv1d(1, 1, 1), QuESTQuantizer(4)), TypeError, "linear"),
    (lambda: prepare_(nn.Sequential(nn.Linear(128, 4)))(torch.randn(2, 64)), ValueError, "K=128"),
    (
        lambda: convert_(prepare_(nn.Sequential(nn.Linear(128, 4))))(torch.randn(2, 64)),
        ValueError,
        "K=128",
    ),
    (lambda: pack_int4(torch.tensor([[9, 0]], dtype=torch.int8)), ValueError, "codes"),
    (lambda: pack_int4(torch.tensor([[1, 0, 2]], dtype=torch.int8)), ValueError, "even"),
    (lambda: pack_int4(torch.tensor([[1.0, 0.0]])), TypeError, "codes"),
    (lambda: unpack_int4(torch.tensor([1, 2])), TypeError, "packed"),
    (
        lambda: int4_matmul(
            torch.zeros(2, 8, dtype=torch.int8), torch.zeros(3, 3, dtype=torch.uint8)
        ),
        ValueError,
        "disagree",
    ),
    (lambda: ScalingLaw("slow").fit([{"N": 1, "D": 1, "P": 4, "L": 1}]), ValueError, "starts"),
    (
        lambda: ScalingLaw(starts=[[1, 2]]).fit([{"N": 1, "D": 1, "P": 4, "L": 1}]),
        ValueError,
        "starts",
    ),
    (lambda: ScalingLaw().fit([]), ValueError, "runs"),
    (lambda: ScalingLaw().fit([{"N": 1}]), ValueError, "runs"),
    (lambda: ScalingLaw().fit([{"N": -1, "D": 1, "P": 4, "L": 1}]), ValueError, "N"),
    (lambda: ScalingLaw().predict(1e6, 1e9, 4), RuntimeError, "fit"),
    (lambda: load_fortunes("/nonexistent"), FileNotFoundError, "fortunes"),
    # found in the first-use trial
    (lambda: quest_quantize(torch.randn(4, 0)), ValueError, "K=0"),
    (lambda: quest_quantize(torch.randn(4, 0), rotate=False), ValueError, "K=0"),
    (lambda: quantize_codes(torch.randn(4, 0)), ValueError, "K=0"),
    (lambda: quest_quantize(X, rotate="no"), TypeError, "rotate"),
    (lambda: quest_quantize(X, half=1), TypeError, "half"),
    (lambda: quantize_codes(X, rotate="no"), TypeError, "rotate"),
    (lambda: QuESTQuantizer(4, sparse48="yes"), TypeError, "sparse48"),
    (lambda: QuESTQuantizer(4, half="no"), TypeError, "half"),
    (lambda: QuESTConfig(sparse48="yes"), TypeError, "sparse48"),
    (lambda: hadamard_matrix(2**40), ValueError, "at most"),
    (lambda: block_hadamard(X, 2**20), ValueError, "at most"),
    (lambda: QuESTConfig(block=2**15), ValueError, "at most"),
    (lambda: prepare_(nn.Linear(128, 4)), TypeError, "bare nn.Linear"),
    (
        lambda: convert_(prepare_(nn.Sequential(nn.Linear(128, 4)))[0]),
        TypeError,
        "bare QuESTLinear",
    ),
    (
        lambda: convert_(prepare_(nn.Sequential(nn.Linear(128, 4))))(
            torch.ones(2, 128, dtype=torch.int32)
        ),
        TypeError,
        "floating",
    ),
    (
        lambda: convert_(prepare_(nn.Sequential(nn.Linear(128, 4))))([1.0] * 128),
        TypeError,
        "x",
    ),
    (lambda: load_text("/nonexistent.txt"), FileNotFoundError, "data"),
    # found in the second first-use trial
    (lambda: load_text("/"), IsADirectoryError, "directory"),
    (
        lambda: QuESTLinear.from_linear(nn.Linear(128, 4), QuESTConfig()),
        TypeError,
        r"w_quantizer.*prepare_",
    ),
    (
        lambda: QuESTLinear.from_linear(nn.Linear(128, 4), QuESTQuantizer(4), "a"),
        TypeError,
        "a_quantizer",
    ),
    (lambda: QuESTInt4Linear.from_quest(nn.Linear(128, 4)), TypeError, "layer"),
    (lambda: LSQQuantizer(4)(torch.randn(0, 128)), ValueError, "empty"),
    (lambda: PACTQuantizer(4)(torch.randn(0, 128)), ValueError, "empty"),
    (lambda: LSQQuantizer(4)(NAN), ValueError, "NaN"),
    (lambda: PACTQuantizer(4)(NAN), ValueError, "NaN"),
    (lambda: QuESTConfig(2, 2, grid="fp4"), ValueError, "w_bits"),
    (lambda: QuESTConfig(4, 2, grid="fp4"), ValueError, "a_bits"),
    # deployment paths (issue 28)
    (
        lambda: QuESTLinear(
            nn.Parameter(torch.zeros(4, 128)), None, QuESTQuantizer(4), transposed="yes"
        ),
        TypeError,
        "transposed",
    ),
    (
        lambda: convert_(prepare_(nn.Sequential(nn.Linear(2**17, 1)), QuESTConfig(8, 8))),
        ValueError,
        r"K=131072 is too large.*W8A8",
    ),
    (
        lambda: QuESTInt4Linear.from_quest(
            prepare_(nn.Sequential(nn.Linear(128, 4)), QuESTConfig(8, 8))[0]
        ),
        ValueError,
        "QuESTInt8Linear",
    ),
    (lambda: save_quantized("model", "/tmp"), TypeError, "model"),
    (lambda: load_quantized(None, "/tmp"), TypeError, "model"),
    (lambda: _colwise(output_layouts=_shard(0)), ValueError, "output_layouts"),
    (lambda: _colwise(input_layouts=_shard(-1)), ValueError, "input_layouts"),
    (lambda: _rowwise(output_layouts=_shard(-1)), ValueError, "output_layouts"),
    (lambda: _rowwise(use_local_output="yes"), TypeError, "use_local_output"),
]


@pytest.mark.parametrize(
    ("call", "error", "match"), CASES, ids=[f"case{i}" for i in range(len(CASES))]
)
def test_bad_input_raises(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_load_text_rejects_a_short_file(tmp_path):
    path = tmp_path / "short.txt"
    path.write_bytes(b"x" * 9_999)
    with pytest.raises(ValueError, match="10,000 bytes, got 9999"):
        load_text(path)
    path.write_bytes(b"x" * 10_000)
    assert load_text(path) == b"x" * 10_000


def test_pact_and_lsq_initialise_on_the_first_non_empty_batch():
    """A refused empty first batch leaves the quantizer uninitialised (it used to set α = NaN)."""
    x = torch.randn(8, 128, dtype=torch.float64)
    pact, lsq = PACTQuantizer(4), LSQQuantizer(4)
    for q in (pact, lsq):
        with pytest.raises(ValueError, match="empty"):
            q(torch.randn(0, 128, dtype=torch.float64))
        assert not bool(q.initialized)
        assert torch.isfinite(q(x)).all()
    # closed forms of the inits: α = α_4·RMS(x), s = 2·mean|x|/sqrt(Q_P)
    assert pact.clip.item() == pytest.approx(2.5139305786 * x.square().mean().sqrt().item())
    assert lsq.step.item() == pytest.approx(2 * x.abs().mean().item() / 7**0.5)


def test_predict_rejects_bad_arguments():
    from quest_qat import PAPER_SCALING_LAW

    for args, match in [
        ((0, 1e9, 4), "N"),
        ((1e6, float("nan"), 4), "D"),
        ((1e6, 1e9, "3WO7"), "P"),
    ]:
        with pytest.raises(ValueError, match=match):
            PAPER_SCALING_LAW.predict(*args)


def test_incompatible_layer_can_be_skipped():
    model = prepare_(nn.Sequential(nn.Linear(100, 4), nn.Linear(4 * 32, 2)),
                     QuESTConfig(on_incompatible="skip"))  # fmt: skip
    assert type(model[0]) is nn.Linear
    assert isinstance(model[1], QuESTLinear)


def test_one_bit_defaults_to_clip():
    assert QuESTQuantizer(1).clip_scale == 1.30
    assert QuESTQuantizer(1, rotate=False).clip_scale == 1.25


def test_convert_without_quest_layers_warns():
    with pytest.warns(UserWarning, match="no QuESTLinear"):
        convert_(nn.Sequential(nn.Linear(128, 4)))


def test_numpy_bool_flags_are_accepted():
    import numpy as np

    assert QuESTQuantizer(4, rotate=np.bool_(False)).rotate is False
    xhat, _, _ = quest_quantize(X, 4, rotate=np.True_, half=True)
    assert xhat.shape == X.shape


def test_functional_one_bit_is_trust_mode_unless_clip_scale_given():
    """Documented: quest_quantize has no 1-bit clip default; QuESTQuantizer(1) has c = 1.30."""
    x = torch.randn(64, 256, dtype=torch.float64)
    _, mask_fn, _ = quest_quantize(x, 1)
    _, mask_trust, _ = quest_quantize(x, 1, trust=1.0)
    _, mask_clip, _ = quest_quantize(x, 1, clip_scale=1.30)
    assert torch.equal(mask_fn, mask_trust)
    quantizer = QuESTQuantizer(1)
    quantizer(x)
    assert quantizer.mask_rate.item() == pytest.approx(mask_clip.double().mean().item())


def test_integer_weight_is_refused_at_prepare_naming_the_layer():
    """Trial 28, finding 12: an int8 weight was accepted by prepare_ and convert_, and the
    forward blamed `x`."""
    from quest_qat import QuESTConfig, prepare_
    from torch import nn

    model = nn.Sequential(nn.Linear(256, 128))
    weight = torch.randint(-3, 3, (128, 256), dtype=torch.int8)
    model[0].weight = nn.Parameter(weight, requires_grad=False)
    with pytest.raises(TypeError, match=r"layer '0': the weight must be floating.*torch\.int8"):
        prepare_(model, QuESTConfig())
    assert type(model[0]) is nn.Linear


def test_sparse48_needs_quantized_weights():
    """Trial 28, finding 13: sparse48 with w_bits=None had nothing to act on, silently."""
    from quest_qat import QuESTConfig

    with pytest.raises(ValueError, match=r"`sparse48`.*w_bits=None"):
        QuESTConfig(w_bits=None, a_bits=4, sparse48=True)
