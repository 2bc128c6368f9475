"""The FINOLA layer (spec §5 test 6: no positional information), its options, the autoencoder
and the baselines, state_dict, torch.compile, devices and bad input."""

import pytest
import torch
from finola import FINOLA, finola_scan
from finola.baselines import Broadcast, PosEmb, ReshapeAE
from finola.models import Conv3Decoder, FinolaAutoencoder, SmallConvEncoder, UpConvDecoder


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({}, {"A", "B"}),
        ({"reverse": "separate"}, {"A", "B", "A_rev", "B_rev"}),
        ({"parametrization": "wave"}, {"B", "speeds"}),
        ({"paths": 3}, {"A", "B"}),
    ],
)
def test_the_layer_holds_only_its_coefficient_matrices(kwargs, names):
    layer = FINOLA(8, (5, 4), **kwargs)
    assert {n for n, _ in layer.named_parameters()} == names
    assert not list(layer.buffers())
    q = torch.randn(3, 3, 8) if kwargs.get("paths") else torch.randn(3, 8)
    train_out = layer.train()(q)
    torch.testing.assert_close(layer.eval()(q), train_out, rtol=0, atol=0)


def test_paths_share_a_and_b_and_are_combined():
    layer = FINOLA(6, 4, paths=3, combine="sum")
    q = torch.randn(2, 3, 6)
    each = finola_scan(q, layer.A, layer.B, 4)
    torch.testing.assert_close(layer(q), each.sum(1))
    layer.combine = "mean"
    torch.testing.assert_close(layer(q), each.mean(1))


def test_wave_parametrization_makes_ab_inverse_diagonal():
    layer = FINOLA(5, 3, parametrization="wave").double()
    M = torch.linalg.solve(layer.B.T, layer.A.T).T  # A B⁻¹
    torch.testing.assert_close(M, torch.diag(layer.speeds), rtol=1e-9, atol=1e-9)


def test_state_dict_round_trip_and_compile():
    layer = FINOLA(8, (4, 4), reverse="separate")
    other = FINOLA(8, (4, 4), reverse="separate")
    other.load_state_dict(layer.state_dict())
    q = torch.randn(3, 8)
    torch.testing.assert_close(other(q), layer(q), rtol=0, atol=0)
    compiled = torch.compile(layer, backend="aot_eager")
    torch.testing.assert_close(compiled(q), layer(q), rtol=0, atol=0)


def test_float64_input_runs_in_float64():
    layer = FINOLA(4, 3)
    assert layer(torch.randn(2, 4, dtype=torch.float64)).dtype == torch.float64


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_runs_on_cuda_like_on_the_cpu():
    layer = FINOLA(32, 8)
    q = torch.randn(4, 32)
    expected = layer(q)
    torch.testing.assert_close(layer.cuda()(q.cuda()).cpu(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("maker", "in_channels"),
    [(FINOLA(64, 8), 64), (Broadcast(64, 8), 64), (ReshapeAE(64, 8), 1), (PosEmb(64, 8), 64)],
)
def test_autoencoder_with_each_map_maker(maker, in_channels):
    ae = FinolaAutoencoder(SmallConvEncoder(64), maker, UpConvDecoder(in_channels, 2))
    x = torch.rand(2, 3, 32, 32)
    assert ae.encode(x).shape == (2, 64)
    assert ae(x).shape == x.shape


def test_broadcast_has_no_positional_information_and_reshape_keeps_q():
    q = torch.randn(2, 64)
    z = Broadcast(64, 8)(q)
    assert (z == q[:, :, None, None]).all()
    assert torch.equal(ReshapeAE(64, 8)(q).flatten(1), q)


def test_multi_path_autoencoder_and_conv3_decoder():
    ae = FinolaAutoencoder(SmallConvEncoder(3 * 16), FINOLA(16, 32, paths=3), Conv3Decoder(16))
    x = torch.rand(2, 3, 32, 32)
    assert ae.encode(x).shape == (2, 3, 16)
    assert ae(x).shape == x.shape


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: FINOLA(1, 4), ValueError, "channels >= 2"),
        (lambda: FINOLA(0, 4, norm="none"), ValueError, "channels"),
        (lambda: FINOLA(8, 0), ValueError, "grid"),
        (lambda: FINOLA(8, 4, center=(4, 0)), ValueError, "center"),
        (lambda: FINOLA(8, 4, paths=0), ValueError, "paths"),
        (lambda: FINOLA(8, 4, combine="max"), ValueError, "combine"),
        (lambda: FINOLA(8, 4, parametrization="diag"), ValueError, "parametrization"),
        (lambda: FINOLA(8, 4)(torch.randn(2, 7)), ValueError, "C = 8"),
        (lambda: FINOLA(8, 4)(torch.randn(2, 3, 8)), ValueError, "paths=1"),
        (lambda: FINOLA(8, 4, paths=2)(torch.randn(2, 8)), ValueError, r"\(N, 2, C\)"),
        (lambda: FINOLA(8, 4)(torch.full((2, 8), float("nan"))), ValueError, "NaN"),
        (lambda: ReshapeAE(60, 8), ValueError, "multiple of h \\* w"),
        (lambda: Broadcast(8, 4)(torch.randn(2, 2, 8)), ValueError, "`q`"),
        (lambda: SmallConvEncoder(8)(torch.rand(2, 1, 32, 32)), ValueError, r"\(N, 3, H, W\)"),
        (
            lambda: FinolaAutoencoder(SmallConvEncoder(8), "finola", Conv3Decoder(8)),
            TypeError,
            "finola",
        ),
    ],
)
def test_layers_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_autocast_and_mixed_dtypes_run_in_the_wider_precision():
    # new-user trial: bf16 under autocast was refused; a float64 layer silently ran float32 q
    layer = FINOLA(8, 4)
    q = torch.randn(2, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = layer(q.bfloat16())
    assert z.dtype == torch.float32
    torch.testing.assert_close(z, layer(q.bfloat16().float()))
    assert FINOLA(8, 4).double()(q).dtype == torch.float64


def test_wave_parametrization_refuses_free_reverse_matrices():
    with pytest.raises(ValueError, match="reverse='negate'"):
        FINOLA(8, 4, parametrization="wave", reverse="separate")
