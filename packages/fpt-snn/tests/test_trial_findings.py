"""Findings of a new-user trial (trial 29): threshold ties in floating point, output layout,
ambiguous per-neuron τ, learnable parameters at saturation, the hard reset's memory, and the
CLI. References are spikingjelly, the LIF recurrence written out, or the library's other
entry point on the same data (never numbers this code produced)."""

import numpy as np
import pytest
import torch
from fpt_snn import FPTLIF, convergence_report, fpt_lif, lif_sequential
from fpt_snn.bench import format_rows
from fpt_snn.cli import main

TIES = [[1.0], [1.0], [2.0]]  # tau = 5: the LIF membrane is exactly θ = 1 at step 2


def _recurrence(x, tau, theta=1.0):
    """spikingjelly LIFNode(decay_input=False, v_reset=None) written out, in x's dtype."""
    lam = torch.tensor(1.0 - 1.0 / tau, dtype=x.dtype)
    v, out = torch.zeros_like(x[0]), []
    for x_t in x:
        u = lam * v + x_t
        s = (u >= theta).to(x.dtype)
        v = u - theta * s
        out.append(s)
    return torch.stack(out)


# H1: threshold ties. The claims are "exact in exact arithmetic"; the bit-exact paths are the
# sequential ones, and the CLI computes in the dtype of the currents, as the Python API does.


def test_tie_the_sequential_paths_are_bit_exact_and_match_spikingjelly():
    from spikingjelly.activation_based import neuron

    x = torch.tensor(TIES)  # float32
    expected = _recurrence(x, 5.0)
    assert expected.flatten().tolist() == [1.0, 1.0, 1.0]  # u = 1, 0.8·0 + 1 = 1, 2
    node = neuron.LIFNode(tau=5.0, decay_input=False, v_reset=None, step_mode="m")
    assert torch.equal(node(x), expected)
    assert torch.equal(lif_sequential(x, tau=5.0), expected)
    layer = FPTLIF(3, tau=5.0, eval_sample="lif", sample="lif")
    assert torch.equal(layer.eval()(x), expected)
    assert torch.equal(layer.train()(x), expected)


def test_tie_matrix_form_rounds_below_threshold_as_documented():
    # Λx − θAs at step 2 sums λ·1 + 1 − λ·1 in another order than the recurrence; in float32
    # (0.8 + 1) − 0.8 = 0.99999994 < 1, so Heaviside FPT misses that spike even at K = T.
    lam = torch.tensor(0.8)
    assert float((lam + 1.0) - lam) < 1.0
    x = torch.tensor(TIES)
    spikes = fpt_lif(x, K=3, tau=5.0, spike_fn="heaviside", sample="none", method="dense")
    assert spikes.flatten().tolist() == [1.0, 0.0, 1.0]
    assert convergence_report(x, 3, tau=5.0).mismatch[-1] > 0  # the report shows the tie


def _mismatch_rows(out):
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    return [float(line.split("|")[2]) for line in rows[1:]]


def test_cli_convergence_computes_in_the_file_dtype_like_the_api(tmp_path, capsys):
    path = tmp_path / "ties.npy"
    np.save(path, np.array(TIES, dtype=np.float32))
    main(["convergence", "--input", str(path), "--tau", "5", "--K-max", "3"])
    out = capsys.readouterr().out
    api = convergence_report(torch.from_numpy(np.load(path)), 3, tau=5.0)
    assert _mismatch_rows(out) == [round(100 * m, 3) for m in api.mismatch]
    assert "float32" in out


def test_cli_convergence_takes_the_reset_variants(capsys):
    # L8: --reset/--v-reset/--decay-input reach convergence_report (same synthetic currents).
    argv = ["convergence", "--T", "6", "--K-max", "6", "--neurons", "500", "--seed", "3"]
    main([*argv, "--reset", "hard", "--v-reset", "-0.5", "--decay-input", "--tau", "1.5"])
    out = capsys.readouterr().out
    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 500, generator=g, dtype=torch.float64) * 0.8 + 0.6
    api = convergence_report(x, 6, tau=1.5, reset="hard", v_reset=-0.5, decay_input=True)
    assert _mismatch_rows(out) == [round(100 * m, 3) for m in api.mismatch]
    assert "reset=hard, v_reset=-0.5, decay_input" in out


def test_cli_unreadable_input_gives_one_short_line(tmp_path):
    # L9: torch.load's page of weights_only advice is not repeated.
    junk = tmp_path / "junk.txt"
    junk.write_text("not a tensor\n")
    with pytest.raises(SystemExit) as info:
        main(["convergence", "--input", str(junk)])
    message = str(info.value)
    assert "could not be read" in message
    assert "file an issue" not in message
    assert "\n" not in message
    assert len(message) < 400


# M1: outputs are contiguous, so spikingjelly-style .view(T * B, C, H, W) works.


def test_per_channel_outputs_are_contiguous_and_viewable():
    T, B, C = 6, 2, 3
    x = torch.randn(T, B, C, 4, 5, generator=torch.Generator().manual_seed(0)) + 0.6
    taus = [2.0, 3.0, 4.0]
    y = FPTLIF(T, tau=taus, sample="threshold")(x)
    assert y.is_contiguous()
    flat = y.view(T * B, C, 4, 5)
    assert torch.equal(flat.view(T, B, C, 4, 5), y)
    tau = torch.tensor(taus).view(C, 1, 1)
    out, v = fpt_lif(x, tau=tau, K=T, spike_fn="heaviside", sample="none", return_state=True)
    assert out.is_contiguous()
    assert v.is_contiguous()
    for c in range(C):  # the same values as per slice (the LIF recurrence, float32)
        assert torch.equal(out[:, :, c], _recurrence(x[:, :, c], taus[c]))
    batch_first = FPTLIF(T, time_dim=1, sample="threshold")(x.transpose(0, 1).contiguous())
    assert batch_first.is_contiguous()


# M2: a per-neuron τ/θ with fewer axes than x.shape[2:] is ambiguous (it would land on W).


@pytest.mark.parametrize("name", ["tau", "v_threshold"])
@pytest.mark.parametrize("fn", [fpt_lif, lif_sequential])
def test_one_dim_values_on_conv_input_are_refused(fn, name):
    x = torch.randn(4, 2, 4, 4, 4) + 0.6  # C == W == 4: trailing alignment would pick W
    values = torch.tensor([1.5, 2.0, 4.0, 8.0])
    with pytest.raises(ValueError, match=r"view\(C, 1, 1\).*channel_dim"):
        fn(x, **{name: values})


def test_values_covering_the_neuron_axes_are_per_channel():
    # tau.view(C, 1, 1) and FPTLIF(channel_dim=2) agree with one LIF per channel; [C] on
    # [T, B, C] and single values still work.
    x = torch.randn(5, 2, 4, 3, 3, dtype=torch.float64) + 0.8
    taus = [1.5, 2.0, 4.0, 8.0]
    out = lif_sequential(x, tau=torch.tensor(taus, dtype=x.dtype).view(4, 1, 1))
    layer = FPTLIF(5, tau=taus, eval_sample="lif").eval()
    assert torch.equal(layer(x), out)
    for c, tau_c in enumerate(taus):
        assert torch.equal(out[:, :, c], _recurrence(x[:, :, c], tau_c))
    x3 = x[:, :, :, 0, 0]
    channels = lif_sequential(x3, tau=torch.tensor(taus, dtype=x.dtype))
    assert torch.equal(channels[:, :, 1], _recurrence(x3[:, :, 1], taus[1]))
    one = lif_sequential(x, tau=torch.tensor([3.0], dtype=x.dtype))
    assert torch.equal(one, _recurrence(x, 3.0))


# M3: learnable τ and θ stay valid whatever an optimizer does to the raw parameters.


def test_learnable_tau_at_sigmoid_saturation_keeps_tau_above_one():
    x = torch.randn(8, 2, 5, generator=torch.Generator().manual_seed(1)) + 0.6
    layer = FPTLIF(8, learnable_tau=True, sample="threshold")
    for w in (40.0, -1e4):  # sigmoid(40) == 1 and 1/sigmoid(-1e4) == inf in float32
        with torch.no_grad():
            layer.tau_raw.fill_(w)
        tau = layer.tau
        assert torch.isfinite(tau)
        assert float(tau.detach()) > 1.0
        layer(x).sum()  # no error
        layer.eval_sample = "lif"
        assert torch.equal(layer.eval()(x), lif_sequential(x, tau=tau.detach()))
        layer.train()


def test_learnable_tau_keeps_plif_values_and_gradient_inside_the_range():
    from spikingjelly.activation_based import neuron

    layer = FPTLIF(4, tau=3.0, learnable_tau=True)
    plif = neuron.ParametricLIFNode(init_tau=3.0)
    torch.testing.assert_close(layer.tau, 1.0 / plif.w.sigmoid(), rtol=1e-6, atol=0)
    layer.tau.backward()
    s = torch.sigmoid(layer.tau_raw.detach())
    torch.testing.assert_close(layer.tau_raw.grad, -(1 - s) / s)  # d(1/σ(w))/dw


def test_learnable_tau_that_rounds_to_one_is_refused_at_construction():
    with pytest.raises(ValueError, match="too close to 1"):
        FPTLIF(8, tau=1 + 1e-9, learnable_tau=True)
    with pytest.raises(ValueError, match="> 1 in float32"):
        FPTLIF(8, tau=[1 + 1e-9, 2.0])


def test_learnable_threshold_stays_positive_where_softplus_underflows():
    layer = FPTLIF(8, learnable_threshold=True, sample="none")
    with torch.no_grad():
        layer.threshold_raw.fill_(-200.0)  # softplus(-200) == 0 in float32
    assert float(layer.v_threshold.detach()) > 0
    layer(torch.randn(8, 2, 5)).sum().backward()
    assert torch.isfinite(layer.threshold_raw.grad).all()


def test_learned_threshold_below_v_reset_names_the_drift():
    layer = FPTLIF(8, reset="hard", v_reset=0.5, learnable_threshold=True)
    with torch.no_grad():
        layer.threshold_raw.fill_(-2.0)  # θ = softplus(-2) = 0.127 < v_reset
    with pytest.raises(RuntimeError, match=r"learned threshold.*drifted to v_threshold = 0\.12"):
        layer(torch.randn(8, 2, 5))


def test_tensor_with_requires_grad_without_the_learnable_flag_is_refused():
    # L11: the layer would copy the values into a fixed buffer.
    with pytest.raises(ValueError, match="learnable_tau=True"):
        FPTLIF(6, tau=torch.tensor([2.0, 3.0], requires_grad=True))
    with pytest.raises(ValueError, match="learnable_threshold=True"):
        FPTLIF(6, v_threshold=torch.tensor([1.0, 0.5], requires_grad=True))
    layer = FPTLIF(6, tau=torch.tensor([2.0, 3.0], requires_grad=True), learnable_tau=True)
    assert layer.tau_raw.requires_grad


# M4: the hard reset's [T, T, N] operator warns above HARD_RESET_WARN_BYTES.


def test_hard_reset_warns_above_the_documented_size(monkeypatch, recwarn):
    import fpt_snn.fpt as fpt_module

    T, N = 8, 10
    x = torch.randn(T, N) + 0.6
    size = T * T * N * 4  # float32 bytes of one [T, T, N] tensor
    monkeypatch.setattr(fpt_module, "HARD_RESET_WARN_BYTES", size - 1)
    with pytest.warns(UserWarning, match=r"\[T, T, N\] = \[8, 8, 10\].*sample='lif'"):
        fpt_lif(x, reset="hard")
    monkeypatch.setattr(fpt_module, "HARD_RESET_WARN_BYTES", size)
    fpt_lif(x, reset="hard")
    fpt_lif(x, reset="hard", K=1)  # no M(s) at K = 1
    FPTLIF(T, reset="hard", sample="lif")(x)  # the recommended BPTT path builds none
    monkeypatch.setattr(fpt_module, "HARD_RESET_WARN_BYTES", 0)
    fpt_lif(x)  # soft reset: no [T, T, N] tensor
    assert not [w for w in recwarn if "[T, T, N]" in str(w.message)]


def test_default_threshold_is_32_mib():
    import fpt_snn.fpt as fpt_module

    assert fpt_module.HARD_RESET_WARN_BYTES == 32 * 2**20  # as the README documents


# LOWs


def test_numpy_bool_flags_are_accepted():
    # L3
    x = torch.randn(6, 3, dtype=torch.float64) + 0.8
    assert torch.equal(
        fpt_lif(x, decay_input=np.bool_(True), sample="none"),
        fpt_lif(x, decay_input=True, sample="none"),
    )
    with pytest.raises(TypeError, match=r"builtins\.int"):
        fpt_lif(x, decay_input=1)


def test_eval_lif_runs_a_shorter_last_chunk():
    # L1: the exact LIF needs no fixed T; chunks 8 + 5 equal one pass.
    x = torch.randn(13, 2, 3, dtype=torch.float64) + 0.7
    layer = FPTLIF(8, eval_sample="lif").eval()
    a, v = layer(x[:8], return_state=True)
    b = layer(x[8:], v_init=v)
    assert torch.equal(torch.cat([a, b]), _recurrence(x, 2.0))
    with pytest.raises(ValueError, match="T=8"):
        FPTLIF(8, eval_sample="threshold").eval()(x[8:])


def test_unknown_backend_variable_is_refused(monkeypatch):
    # L2: a typo in ICML25_BACKEND is not ignored silently.
    monkeypatch.setenv("ICML25_BACKEND", "foo")
    with pytest.raises(ValueError, match="ICML25_BACKEND"):
        fpt_lif(torch.randn(4, 3))


def test_bench_help_and_size_labels(run_main):
    # L7: the help names every FPT column; labels show the N·T run and the size asked for.
    help_text = "".join(run_main(main, "bench", "--help").out.split())  # argparse wraps at "-"
    for name in ("fpt-dense", "fpt-chunked", "fpt-fused", "fpt-auto"):
        assert name in help_text
    row = {"T": 48, "NT": 99_984, "size": 100_000, "loop_ms": 1.0, "loop_spread": 0.0,
           "loop_speedup": float("nan")}  # fmt: skip
    small = {**row, "T": 4, "NT": 4, "size": 3}
    power = {**row, "T": 8, "NT": 2**16, "size": 2**16}
    lines = format_rows([row, small, power], names=["loop"]).splitlines()
    assert "| 48 | 99984 (asked 100000) |" in lines[2]
    assert "| 4 | 2^2 (asked 3) |" in lines[3]
    assert "| 8 | 2^16 |" in lines[4]
