import math

import pytest
import torch
from phonepure import DDPMSchedule, DiffWave, DiffWavePurifier


def _random_model(seed=0):
    torch.manual_seed(seed)
    m = DiffWave(8, 8, 3, 2)
    torch.nn.init.normal_(m.final_conv2.weight, std=0.1)
    return m.eval()


def test_schedule_constants_match_closed_form():
    s = DDPMSchedule()
    beta = [1e-4 + k * (0.02 - 1e-4) / 199 for k in range(3)]
    ab3 = (1 - beta[0]) * (1 - beta[1]) * (1 - beta[2])
    assert s.alpha_bar[2] == pytest.approx(0.9994001, abs=1e-7)
    assert s.alpha_bar[2] == pytest.approx(ab3, abs=1e-12)
    assert math.sqrt(1 - s.alpha_bar[2]) == pytest.approx(0.0244927, abs=1e-6)
    for t in range(1, 200):
        bt = s.beta[t] * (1 - s.alpha_bar[t - 1]) / (1 - s.alpha_bar[t])
        assert s.sigma[t] == pytest.approx(math.sqrt(bt), abs=1e-7)
    assert s.sigma[0] == 0.0


def _oracle(x0_chunks, schedule):
    def eps(x, t):
        ab = torch.tensor(schedule.alpha_bar, dtype=torch.float64)[t][:, None, None]
        return ((x.double() - ab.sqrt() * x0_chunks.double()) / (1 - ab).sqrt()).float()

    return eps


def test_oracle_reverse_mean_is_posterior_mean():
    s = DDPMSchedule()
    g = torch.Generator().manual_seed(1)
    x0 = torch.rand(2, 1, 64, generator=g, dtype=torch.float64) - 0.5
    for t in (1, 2, 5, 50):
        xt = math.sqrt(s.alpha_bar[t]) * x0 + math.sqrt(1 - s.alpha_bar[t]) * torch.randn(
            x0.shape, generator=g, dtype=torch.float64
        )
        eps = (xt - math.sqrt(s.alpha_bar[t]) * x0) / math.sqrt(1 - s.alpha_bar[t])
        mean = (xt - (1 - s.alpha[t]) / math.sqrt(1 - s.alpha_bar[t]) * eps) / math.sqrt(s.alpha[t])
        torch.testing.assert_close(mean, s.posterior_mean(xt, x0, t), atol=1e-6, rtol=0)


@pytest.mark.parametrize("t_star", [1, 3, 5])
def test_oracle_purifier_returns_x0(t_star):
    g = torch.Generator().manual_seed(0)
    x0 = (torch.rand(1, 32000, generator=g) - 0.5) * 0.8
    s = DDPMSchedule()
    oracle = _oracle(x0.reshape(2, 1, 16000), s)  # knows both chunks: run them in one batch
    pur = DiffWavePurifier(oracle, t_star=t_star, schedule=s, batch_chunks=True)
    out = pur(x0, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(out, x0, atol=1e-5, rtol=0)


@pytest.mark.parametrize("length", [1, 15999, 16000, 16001, 40000])
def test_batched_chunks_equal_loop_and_keep_length(length):
    m = _random_model()
    x = 0.3 * torch.sin(torch.arange(length) / 7.0)[None]
    a = DiffWavePurifier(m, batch_chunks=True)(x, generator=torch.Generator().manual_seed(5))
    b = DiffWavePurifier(m, batch_chunks=False)(x, generator=torch.Generator().manual_seed(5))
    c = DiffWavePurifier(m)(x, generator=torch.Generator().manual_seed(5))  # "auto"
    assert a.shape == x.shape
    torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    torch.testing.assert_close(c, b, atol=1e-6, rtol=0)


def test_layouts_kept():
    m = _random_model()
    pur = DiffWavePurifier(m)
    for shape in [(500,), (1, 500), (3, 1, 500)]:
        assert pur(torch.zeros(shape)).shape == shape


def test_resampling_input_rate():
    pur = DiffWavePurifier(_random_model())
    out = pur(torch.zeros(1, 4800), sr=48000)
    assert out.shape == (1, 1600)


def test_official_weight_norm_keys_map():
    m = _random_model()
    sd = {}
    for k, v in m.state_dict().items():
        k = k.replace("parametrizations.weight.original0", "weight_g").replace(
            "parametrizations.weight.original1", "weight_v"
        )
        sd[k] = v
    m2 = DiffWave(8, 8, 3, 2)
    m2.load_state_dict(DiffWave.map_official_state_dict(sd))
    x = torch.randn(1, 1, 100)
    t = torch.tensor([2])
    torch.testing.assert_close(m(x, t), m2(x, t))


def test_residual_keeps_step_embedding_like_official():
    # official `h += part_t` aliases x: the residual output is (x + W_t e + res) * sqrt(1/2)
    torch.manual_seed(0)
    m = DiffWave(4, 4, 1, 1)
    blk = m.blocks[0]
    x = torch.randn(1, 4, 10)
    e = torch.randn(1, 512)
    out, _ = blk(x, e)
    h = x + blk.fc_t(e)[:, :, None]
    h2 = blk.dilated_conv_layer(h)
    gate = torch.tanh(h2[:, :4]) * torch.sigmoid(h2[:, 4:])
    torch.testing.assert_close(out, (h + blk.res_conv(gate)) * math.sqrt(0.5))


@pytest.mark.parametrize(
    ("wav", "match"),
    [
        (torch.zeros(2, 100), "shape"),
        (torch.zeros(2, 2, 100), "shape"),
        (torch.full((100,), float("nan")), "NaN"),
        (torch.full((100,), float("inf")), "NaN"),
        (torch.zeros(0), "empty"),
        (torch.full((100,), 1.5), r"\[-1, 1\]"),
    ],
)
def test_purifier_rejects_bad_wav(wav, match):
    with pytest.raises(ValueError, match=match):
        DiffWavePurifier(_random_model())(wav)


def test_purifier_rejects_int_dtype_and_bad_args():
    pur = DiffWavePurifier(_random_model())
    with pytest.raises(TypeError, match="wav"):
        pur(torch.zeros(100, dtype=torch.int64))
    with pytest.raises(ValueError, match="sr"):
        pur(torch.zeros(100), sr=0)
    for t in (0, 201, -1):
        with pytest.raises(ValueError, match="t_star"):
            DiffWavePurifier(_random_model(), t_star=t)
    with pytest.raises(ValueError, match="chunk"):
        DiffWavePurifier(_random_model(), chunk=0)
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="batch_chunks"):
            DiffWavePurifier(_random_model(), batch_chunks=bad)
    with pytest.raises(ValueError, match="T"):
        DDPMSchedule(T=0)
    with pytest.raises(ValueError, match="layers"):
        DiffWave(layers=0)
