"""The wrapper: exactness of refresh frames, the fx split, FLOP counts, cache hygiene (spec §5
tests 1, 5, 6), triggers, torch.compile, untraceable models and the device rule."""

import copy
import math
import pickle

import pytest
import torch
from _rc_helpers import Driven, frames, hand_unet_flops, tiny_unet
from reframe_cache import ReFrame, TwoBranch, UNet, UNetPP
from torch import nn


def _run(wrapper, seq):
    with torch.inference_mode():
        return [wrapper(seq[t : t + 1]) for t in range(len(seq))]


# -- spec test 1 -------------------------------------------------------------------------------
def test_always_is_bit_identical_to_the_plain_model():
    net = tiny_unet(residual=False)
    seq = frames(5)
    outs = _run(ReFrame(net, "up1", policy="always"), seq)
    with torch.inference_mode():
        plain = [net(seq[t : t + 1]) for t in range(5)]
    for o, p in zip(outs, plain, strict=True):
        assert torch.equal(o, p)


def test_refresh_frames_of_every_policy_are_bit_identical():
    net = tiny_unet(residual=True)
    seq = frames(7)
    w = ReFrame(net, "up1", policy="N-3")
    outs = _run(w, seq)
    with torch.inference_mode():
        for t, refreshed in enumerate(w.history):
            if refreshed:
                assert torch.equal(outs[t], net(seq[t : t + 1]))


@pytest.mark.parametrize("tau", [0.0, 0.05, 0.5, math.inf])
def test_repeated_frame_matches_baseline_and_skips_all_but_one(tau):
    net = tiny_unet()
    T = 6
    seq = frames(1).repeat(T, 1, 1, 1)
    w = ReFrame(net, "up1", policy=f"delta-{tau}")
    outs = _run(w, seq)
    with torch.inference_mode():
        base = net(seq[:1])
    for o in outs:
        torch.testing.assert_close(o, base, rtol=0, atol=1e-6)
    assert w.skipped == T - 1
    assert w.skip_rate == pytest.approx((T - 1) / T)


# -- spec test 5 -------------------------------------------------------------------------------
def test_hit_graph_calls_none_of_the_skipped_modules():
    net = tiny_unet()
    w = ReFrame(net, "up1", policy="N-2")
    deep = {"pool1", "pool2", "pool3", "up1", "up2", "up3"} | {
        f"{m}.{i}"
        for m in ("down2", "down3", "bottleneck", "up_conv2", "up_conv3")
        for i in range(4)
    }
    assert w.skipped_modules == deep
    called = []
    modules = dict(net.named_modules())
    hooks = [modules[n].register_forward_hook(lambda m, i, o, n=n: called.append(n)) for n in deep]
    seq = frames(2)
    with torch.inference_mode():
        w(seq[:1])
        assert called  # the refresh frame runs them
        called.clear()
        w(seq[1:2])
    for h in hooks:
        h.remove()
    assert w.history == [True, False]
    assert called == []
    hit_calls = {str(n.target) for n in w.hit_graph.graph.nodes if n.op == "call_module"}
    assert hit_calls == {"out_conv"} | {f"{m}.{i}" for m in ("down1", "up_conv1") for i in range(4)}


@pytest.mark.parametrize(
    ("widths", "size"),
    [
        ((4, 8, 8, 8), (8, 8)),
        ((4, 8, 8, 8), (16, 24)),
        ((3, 5, 7, 9), (40, 24)),
        ((16, 32, 64, 128), (96, 128)),
    ],
)
def test_flops_equal_hand_counted_conv_flops(widths, size):
    net = UNet(3, 2, widths=widths).eval()
    counts = ReFrame(net, "up1").flops(torch.zeros(1, 3, *size))
    full, hit = hand_unet_flops(widths, 3, 2, *size)
    assert counts == {"full": full, "hit": hit}
    assert isinstance(counts["full"], int)


def test_flops_e_at_the_spec_size_is_72_63_percent():
    net = UNet(3, 3, widths=(16, 32, 64, 128), residual=True).eval()
    c = ReFrame(net, "up1").flops(torch.zeros(1, 3, 96, 128))
    assert round(1 - c["hit"] / c["full"], 4) == 0.7263


# -- spec test 6 -------------------------------------------------------------------------------
def test_resolution_and_dtype_change_force_a_refresh():
    net = tiny_unet()
    w = ReFrame(net, "up1", policy="never")
    with torch.inference_mode():
        w(frames(1))
        w(frames(1, seed=1))
        w(frames(1, size=(24, 16)))  # resolution change
        w(frames(1, size=(24, 16), seed=2))
        net.double()
        w(frames(1, size=(24, 16)).double())  # dtype change
    assert w.history == [True, False, True, False, True]


def test_reset_restarts_policy_and_counters():
    w = ReFrame(tiny_unet(), "up1", policy="N-3")
    seq = frames(5)
    _run(w, seq)
    w.reset()
    assert (w.frames, w.skipped, w.history, len(w.cache)) == (0, 0, [], 0)
    _run(w, seq[:4])
    assert w.history == [True, False, False, True]


def test_two_wrappers_around_copies_never_share_state():
    net = tiny_unet()
    a = ReFrame(net, "up1", policy="delta-0.05")
    b = ReFrame(copy.deepcopy(net), "up1", policy="delta-0.05")
    seq_a, seq_b = frames(6, seed=1), frames(1, seed=2).repeat(6, 1, 1, 1)
    with torch.inference_mode():
        for t in range(6):
            a(seq_a[t : t + 1])
            b(seq_b[t : t + 1])
    alone = ReFrame(copy.deepcopy(net), "up1", policy="delta-0.05")
    _run(alone, seq_a)
    assert a.history == alone.history
    assert b.history == [True] + [False] * 5
    assert a.cache["up1"].data_ptr() != b.cache["up1"].data_ptr()


def test_state_dict_round_trip_is_unaffected():
    net = tiny_unet()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    w = ReFrame(net, "up1", policy="N-2")
    _run(w, frames(3))
    assert set(w.state_dict()) == {f"model.{k}" for k in before}
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])
    other = ReFrame(tiny_unet(seed=5), "up1", policy="N-2")
    other.load_state_dict(w.state_dict())
    seq = frames(3, seed=9)
    for x, y in zip(
        _run(w.__class__(net, "up1", policy="N-2"), seq), _run(other, seq), strict=True
    ):
        assert torch.equal(x, y)


def test_pickle_and_deepcopy_keep_a_working_independent_wrapper():
    w = ReFrame(tiny_unet(), "up1", policy="N-2")
    seq = frames(4)
    ref = _run(w, seq)
    for clone in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w)):
        clone.reset()
        for x, y in zip(_run(clone, seq), ref, strict=True):
            assert torch.equal(x, y)
        assert clone.model is not w.model


# -- triggers, other topologies ----------------------------------------------------------------
def test_untraceable_model_uses_forward_split():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.deep, self.head = nn.Conv2d(3, 3, 3, padding=1), nn.Conv2d(6, 3, 1)

        def forward(self, x):
            deep = self.deep(x) if x.sum() > 0 else x  # data-dependent: fx cannot trace it
            return self.head(torch.cat([deep, x], 1))

        def forward_split(self, x, *, cache, refresh):
            if refresh:
                cache["deep"] = (self.deep(x) if x.sum() > 0 else x).detach()
            return self.head(torch.cat([cache["deep"], x], 1))

    net = Branchy().eval()
    w = ReFrame(net, "deep", policy="N-2")
    assert w.full_graph is None
    seq = frames(3)
    outs = _run(w, seq)
    with torch.inference_mode():
        assert torch.equal(outs[0], net(seq[:1]))
    assert w.history == [True, False, True]
    c = w.flops(seq[:1])
    assert c["full"] - c["hit"] == 2 * 3 * 3 * 9 * 16 * 16  # the skipped 3x3 conv


def test_untraceable_model_without_forward_split_is_a_clear_error():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.deep = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return self.deep(x) if x.sum() > 0 else x

    with pytest.raises(TypeError, match="forward_split"):
        ReFrame(Branchy(), "deep")


def test_two_branch_caches_the_slow_branch_driven_by_a_callable_trigger():
    torch.manual_seed(0)
    net = TwoBranch(
        slow=nn.Conv2d(4, 2, 3, padding=1),
        fast=nn.Conv2d(3, 2, 3, padding=1),
        fuse=nn.Conv2d(4, 3, 1),
    ).eval()
    aux = torch.rand(1, 4, 8, 8)
    w = ReFrame(net, "slow", policy="delta-0.01", trigger=lambda args, kwargs: args[1])
    assert w.skipped_modules == {"slow"}
    with torch.inference_mode():
        for _t in range(4):  # noisy colour, fixed G-buffer: no refresh after the first frame
            w(torch.rand(1, 3, 8, 8), aux)
        w(torch.rand(1, 3, 8, 8), aux + 1)
    assert w.history == [True, False, False, False, True]


@pytest.mark.parametrize("trigger", [1, [1], ["input", 1]])
def test_index_and_list_triggers(trigger):
    net = TwoBranch(nn.Conv2d(4, 2, 1), nn.Conv2d(3, 2, 1), nn.Conv2d(4, 3, 1)).eval()
    w = ReFrame(net, "slow", policy="delta-0", trigger=trigger)
    x, aux = torch.rand(1, 3, 8, 8), torch.rand(1, 4, 8, 8)
    with torch.inference_mode():
        w(x, aux)
        w(x, aux)
        w(x, aux * 2)
    assert w.history == [True, False, True]


def test_unetpp_hit_recomputes_only_the_top_row():
    net = UNetPP(3, 3, widths=(2, 4, 4, 4)).eval()
    w = ReFrame(net, list(UNetPP.cache_points), policy="N-2")
    hit = {
        str(n.target).split(".")[1]
        for n in w.hit_graph.graph.nodes
        if n.op == "call_module" and str(n.target).startswith("node.")
    }
    assert hit == {"0_0", "0_1", "0_2", "0_3"}
    seq = frames(2, size=(16, 16))
    outs = _run(w, seq)
    with torch.inference_mode():
        assert torch.equal(outs[0], net(seq[:1]))


def test_train_mode_or_grad_runs_the_plain_model_with_a_warning():
    net = tiny_unet().train()
    w = ReFrame(net, "up1", policy="never")
    with pytest.warns(UserWarning, match="inference_mode"):
        w(frames(1))
    assert w.frames == 0
    net.eval()
    w(frames(1))  # grad enabled, parameters require grad: still plain
    assert w.frames == 0


def test_compiled_full_and_hit_graphs_match_eager():
    net = tiny_unet()
    seq = frames(4)
    eager = _run(ReFrame(net, "up1", policy="N-2"), seq)
    compiled = ReFrame(net, "up1", policy="N-2").compile(backend="aot_eager", dynamic=False)
    for x, y in zip(_run(compiled, seq), eager, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_runs_on_the_models_cuda_device():
    net = tiny_unet().cuda()
    w = ReFrame(net, "up1", policy="delta-0.05")
    seq = frames(4).cuda()
    outs = _run(w, seq)
    assert all(o.device == seq.device for o in outs)
    assert w.cache["up1"].is_cuda
    with torch.inference_mode():
        torch.testing.assert_close(outs[0], net(seq[:1]))


# -- bad input ---------------------------------------------------------------------------------
class _SideBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.side, self.main = nn.Conv2d(3, 3, 1), nn.Conv2d(3, 3, 1)

    def forward(self, x):
        self.side(x)  # computed, never used
        return self.main(x)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"cache": "nope"}, ValueError, r"`cache` 'nope' is not a submodule.*valid names: down1"),
        ({"cache": 3}, ValueError, "`cache`"),
        ({"cache": "up1", "policy": "sometimes"}, ValueError, "`policy` 'sometimes'"),
        ({"cache": "up1", "policy": "N-0"}, ValueError, "`policy` .N-0.: k must be >= 1"),
        ({"cache": "up1", "policy": "delta--0.1"}, ValueError, "`policy`"),
        ({"cache": "up1", "policy": 0.1}, TypeError, "`policy`"),
        ({"cache": "up1", "trigger": -1}, ValueError, "`trigger`"),
        ({"cache": "up1", "trigger": 1.5}, TypeError, "`trigger`"),
        ({"cache": "up1", "compat": "old"}, ValueError, "`compat`"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        ReFrame(tiny_unet(), **kwargs)


def test_cache_point_not_feeding_the_output_is_rejected():
    with pytest.raises(ValueError, match="`cache` 'side' does not feed the model's output"):
        ReFrame(_SideBranch(), "side")


def test_model_must_be_a_module_and_trigger_index_in_range():
    with pytest.raises(TypeError, match="`model`"):
        ReFrame(lambda x: x, "up1")  # type: ignore[arg-type]
    w = ReFrame(Driven().eval(), "deep", policy="delta-0.1", trigger=2)
    with (
        torch.inference_mode(),
        pytest.raises(ValueError, match="`trigger` index 2 is out of range"),
    ):
        w(torch.rand(1, 1, 2, 2), torch.rand(1, 1, 2, 2))


@pytest.mark.parametrize(
    ("x", "match"),
    [
        (torch.rand(3, 16, 16), r"`x` must be \[N, 3, H, W\]"),
        (torch.rand(1, 4, 16, 16), "got \\(1, 4, 16, 16\\)"),
        (torch.rand(1, 3, 20, 16), "divisible by 8"),
    ],
)
def test_unet_input_shape_errors_name_x(x, match):
    for net in (tiny_unet(), UNetPP(3, 3, widths=(2, 2, 2, 2)).eval()):
        with pytest.raises(ValueError, match=match):
            net(x)
    with torch.inference_mode(), pytest.raises(ValueError, match=match):
        ReFrame(tiny_unet(), "up1")(x)
