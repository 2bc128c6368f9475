"""Regression tests for the trial-27 findings (H1-H5, M1-M4, L1-L9): small versions of the
user's models."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from _rc_helpers import frames, tiny_unet
from reframe_cache import Delta, DeltaInOut, ReFrame, bench_run, parse_policy, split_graphs
from reframe_cache.distributed import run_streams
from torch import nn


class Blk(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(i, o, 3, padding=1), nn.Conv2d(o, o, 3, padding=1)

    def forward(self, x):
        return F.relu(self.c2(F.relu(self.c1(x))))


class MyUNet(nn.Module):
    """The trial's 2-level U-Net (cache points 'mid', 'up1')."""

    def __init__(self, c=3, w=4):
        super().__init__()
        torch.manual_seed(0)
        self.enc0, self.enc1, self.mid = Blk(c, w), Blk(w, 2 * w), Blk(2 * w, 4 * w)
        self.up1, self.dec1 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2), Blk(4 * w, 2 * w)
        self.up0, self.dec0 = nn.ConvTranspose2d(2 * w, w, 2, stride=2), Blk(2 * w, w)
        self.out = nn.Conv2d(w, c, 1)

    def head(self, x):
        e0 = self.enc0(x)
        e1 = self.enc1(F.max_pool2d(e0, 2))
        return e0, e1, self.mid(F.max_pool2d(e1, 2))

    def tail(self, x, e0, e1, u):
        d1 = self.dec1(torch.cat([u, e1], 1))
        return x + self.out(self.dec0(torch.cat([self.up0(d1), e0], 1)))

    def forward(self, x):
        e0, e1, m = self.head(x)
        return self.tail(x, e0, e1, self.up1(m))


class ClampOut(MyUNet):
    def forward(self, x):
        y = super().forward(x)
        y.clamp_(0, 1)
        return y


class InPlaceAfter(MyUNet):
    def forward(self, x):
        e0, e1, m = self.head(x)
        u = self.up1(m)
        u.add_(0.5)
        return self.tail(x, e0, e1, u)


class InPlaceReLUAfterCache(MyUNet):
    def __init__(self):
        super().__init__()
        self.act = nn.LeakyReLU(0.5, inplace=True)  # not idempotent: twice would differ

    def forward(self, x):
        e0, e1, m = self.head(x)
        return self.tail(x, e0, e1, self.act(self.up1(m)))


class InPlaceDeepOnly(MyUNet):
    """An in-place op that only feeds the cached path: hits must still skip the deep part."""

    def forward(self, x):
        e0, e1, m = self.head(x)
        m.mul_(2)
        return self.tail(x, e0, e1, self.up1(m))


class Opt(MyUNet):
    def forward(self, x, scale: float = 1.0):
        return super().forward(x) * scale


class Gbuf(MyUNet):
    def forward(self, x, gbuffer):
        return super().forward(x) + 0.1 * gbuffer.mean()


class Albedo(MyUNet):
    def forward(self, x, albedo=None):
        return super().forward(x) if albedo is None else super().forward(x) * albedo


class Recurrent(MyUNet):
    def __init__(self):
        super().__init__()
        self.prev = None

    def forward(self, x):
        h = x if self.prev is None else 0.5 * (x + self.prev)
        y = super().forward(h)
        self.prev = y.detach()
        return y


class ReturnsCached(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b = nn.Conv2d(3, 3, 3, padding=1), nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return self.b(self.a(x))


class MultiOut(MyUNet):
    def forward(self, x):
        y = super().forward(x)
        return {"rgb": y, "aux": y.mean()}


def _run(w, seq, **kw):
    with torch.inference_mode():
        return [w(seq[t : t + 1], **kw) for t in range(len(seq))]


# -- H1 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cls", "cache"),
    [
        (ClampOut, "mid"),
        (InPlaceAfter, "mid"),
        (InPlaceAfter, "up1"),
        (InPlaceReLUAfterCache, "up1"),
    ],
)
def test_in_place_ops_are_kept_and_hits_on_a_repeated_frame_equal_the_model(cls, cache):
    net = cls().eval()
    x = torch.rand(1, 3, 16, 16) * 3 - 1
    w = ReFrame(net, cache, policy="never")
    outs = _run(w, x.repeat(4, 1, 1, 1))
    with torch.inference_mode():
        plain = net(x)
    assert w.history == [True, False, False, False]
    for o in outs:
        torch.testing.assert_close(o, plain, rtol=0, atol=1e-6)


def test_clamp_in_place_survives_in_the_hit_graph():
    w = ReFrame(ClampOut().eval(), "mid", policy="never")
    assert "clamp_" in w.hit_graph.code


def test_in_place_op_only_on_the_cached_path_is_still_skipped():
    w = ReFrame(InPlaceDeepOnly().eval(), "up1", policy="never")
    assert {"mid.c1", "mid.c2", "up1"} <= w.skipped_modules
    assert "mul_" not in w.hit_graph.code
    x = frames(1)
    outs = _run(w, x.repeat(3, 1, 1, 1))
    with torch.inference_mode():
        plain = w.model(x)
    for o in outs:
        torch.testing.assert_close(o, plain, rtol=0, atol=1e-6)


# -- H2, H3 ------------------------------------------------------------------------------------
def test_forward_with_a_default_argument_is_wrapped():
    net = Opt().eval()
    w = ReFrame(net, "mid", policy="N-2")
    seq = frames(3)
    outs = _run(w, seq)
    outs_scaled = _run(ReFrame(net, "mid", policy="N-2"), seq, scale=2.0)
    with torch.inference_mode():
        assert torch.equal(outs[0], net(seq[:1]))
        torch.testing.assert_close(outs_scaled[1], 2 * outs[1])
    assert w.history == [True, False, True]


def test_keyword_inputs_and_keyword_trigger():
    net = Gbuf().eval()
    x, g = frames(1), frames(1, seed=3)
    w = ReFrame(net, "mid", policy="delta-0.01", trigger="gbuffer")
    with torch.inference_mode():
        a = w(x, gbuffer=g)
        b = w(x, gbuffer=g)  # the first hit: crashed before
        c = w(x, gbuffer=g * 2)
        w(x, g * 2)  # positionally: another call signature, a forced refresh
        d = w(x, g * 2)  # the keyword trigger still finds the input
        plain = net(x, gbuffer=g)
    assert w.history == [True, False, True, True, False]
    assert torch.equal(a, plain)
    torch.testing.assert_close(b, plain, rtol=0, atol=1e-6)
    torch.testing.assert_close(c, d, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "trigger", ["albedo", lambda args, kwargs: kwargs["albedo"]], ids=["name", "lambda"]
)
def test_readme_trigger_examples(trigger):
    net = Albedo().eval()
    seq, alb = frames(3), frames(1, seed=4)
    w = ReFrame(net, "mid", policy="delta-0.05", trigger=trigger)
    with torch.inference_mode():
        for t in range(3):
            w(seq[t : t + 1], albedo=alb)  # noisy colour changes, albedo does not
        w(seq[:1], albedo=alb + 1)
    assert w.history == [True, False, False, True]


# -- H4 ----------------------------------------------------------------------------------------
def test_one_policy_object_for_two_wrappers_shares_no_state():
    net = MyUNet().eval()
    a_seq, b_seq = frames(8, seed=1), frames(8, seed=2)
    for pol in (Delta(0.05), DeltaInOut(0.05)):
        wa, wb = ReFrame(net, "mid", policy=pol), ReFrame(net, "mid", policy=pol)
        alone = ReFrame(net, "mid", policy=type(pol)(0.05))
        with torch.inference_mode():
            for t in range(8):
                wa(a_seq[t : t + 1] * 0.1 + 0.5)
                wb(b_seq[t : t + 1])
                alone(a_seq[t : t + 1] * 0.1 + 0.5)
        assert wa.history == alone.history
        assert wa.policy is not pol
        assert wa.policy is not wb.policy


# -- H5 ----------------------------------------------------------------------------------------
def test_forward_writing_module_state_is_a_clear_error_and_leaves_the_model_intact():
    net = Recurrent().eval()
    with pytest.raises(TypeError, match=r"mutates module state.*Recurrent\.prev.*forward_split"):
        ReFrame(net, "mid", policy="N-2")
    assert net.prev is None
    with torch.inference_mode():
        y = net(frames(1))
    assert isinstance(y, torch.Tensor)
    assert isinstance(net.prev, torch.Tensor)


def test_stateful_forward_with_forward_split_falls_back_to_it():
    class RecurrentSplit(Recurrent):
        def forward_split(self, x, *, cache, refresh):
            h = x if self.prev is None else 0.5 * (x + self.prev)
            e0, e1, m = self.head(h)
            if refresh:
                cache["up1"] = self.up1(m)
            y = self.tail(h, e0, e1, cache["up1"])
            self.prev = y.detach()
            return y

    net = RecurrentSplit().eval()
    w = ReFrame(net, "up1", policy="N-2")
    assert w.full_graph is None
    _run(w, frames(3))
    assert w.history == [True, False, True]


# -- M1 ----------------------------------------------------------------------------------------
def test_delta_in_out_ignores_in_place_edits_of_returned_outputs():
    net = MyUNet().eval()
    g = torch.Generator().manual_seed(0)
    base = torch.rand(1, 3, 16, 16, generator=g)
    seq = torch.cat([base + 0.02 * t * torch.rand(1, 3, 16, 16, generator=g) for t in range(12)])
    wa = ReFrame(net, "mid", policy="delta-in-out-0.02")
    wb = ReFrame(net, "mid", policy="delta-in-out-0.02")
    with torch.inference_mode():
        for t in range(12):
            wa(seq[t : t + 1]).mul_(0).add_(5)
            wb(seq[t : t + 1])
    assert wa.history == wb.history


# -- M2 ----------------------------------------------------------------------------------------
def test_output_never_aliases_the_cache():
    net = ReturnsCached().eval()
    x = frames(1)
    w = ReFrame(net, "b", policy="never")
    with torch.inference_mode():
        plain = net(x)
        w(x).zero_()
        o1 = w(x)
        torch.testing.assert_close(o1, plain)
        o1.zero_()
        torch.testing.assert_close(w(x), plain)


# -- M3 ----------------------------------------------------------------------------------------
def test_delta_in_out_refuses_a_non_tensor_output():
    w = ReFrame(MultiOut().eval(), "mid", policy="delta-in-out-0.03")
    with torch.inference_mode(), pytest.raises(TypeError, match=r"single Tensor.*dict"):
        w(frames(1))
    w2 = ReFrame(MultiOut().eval(), "mid", policy="delta-0.03")  # input-only: fine
    assert set(_run(w2, frames(2))[1]) == {"rgb", "aux"}


# -- M4 ----------------------------------------------------------------------------------------
def test_changed_weights_force_a_refresh():
    net = MyUNet().eval()
    seq = frames(4)
    w = ReFrame(net, "mid", policy="never")
    with torch.inference_mode():
        w(seq[:1])
        w(seq[1:2])
    other = MyUNet()
    with torch.no_grad():
        for p in other.parameters():
            p.add_(0.1)
    net.load_state_dict(other.state_dict())
    with torch.inference_mode():
        o = w(seq[2:3])
        assert torch.equal(o, net(seq[2:3]))
        w(seq[3:4])
    assert w.history == [True, False, True, False]
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.train()
    net(seq[:1]).sum().backward()
    opt.step()
    net.eval()
    with torch.inference_mode():
        o = w(seq[:1])
        assert torch.equal(o, net(seq[:1]))
    assert w.history[-1] is True


# -- LOW ---------------------------------------------------------------------------------------
def test_bench_and_streams_restore_train_mode_and_name_bad_arguments():
    net = tiny_unet().train()
    bench_run(net, frames(2), cache="up1", policy="N-2", repeats=0, with_flip=False)
    assert net.training
    run_streams(lambda: net, [frames(2)], cache="up1", policy="N-2", gather=False)
    assert net.training
    with pytest.raises(ValueError, match="`baseline` must have 2"):
        bench_run(net.eval(), frames(2), cache="up1", policy="N-2", repeats=0, baseline=[1])
    with pytest.raises(ValueError, match="`reference`"):
        bench_run(net, frames(2), cache="up1", policy="N-2", repeats=0, reference=frames(2, (8, 8)))


def test_bench_warns_when_flip_is_unavailable(monkeypatch):
    import reframe_cache.bench as bench

    def no_flip(*a, **k):
        raise ImportError("flip-evaluator is not installed")

    monkeypatch.setattr(bench, "flip", no_flip)
    with pytest.warns(UserWarning, match="FLIP"):
        r = bench_run(tiny_unet(), frames(2), cache="up1", policy="N-2", repeats=0)
    assert r.flip_vs_baseline is None


def test_split_graphs_argument_errors():
    with pytest.raises(TypeError, match="list of submodule names"):
        split_graphs(tiny_unet(), "up1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'zzz' is not a submodule"):
        split_graphs(tiny_unet(), ["zzz"])


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("delta--0.1", "tau must be >= 0"),
        ("delta-in-out--1", "tau must be >= 0"),
        ("delta-nan", "must not be NaN"),
        ("delta-abc", "not a number"),
    ],
)
def test_policy_string_tau_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_policy(spec)


def test_compat_official_needs_delta_in_out():
    with pytest.raises(ValueError, match="`compat`='official'"):
        ReFrame(tiny_unet(), "up1", policy="delta-0.1", compat="official")
    w = ReFrame(tiny_unet(), "up1", policy=DeltaInOut(0.1), compat="official")
    assert w.policy.compat == "official"


def test_forward_split_that_stores_nothing_warns():
    class Lazy(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 1)

        def forward(self, x):
            return self.conv(x)

        def forward_split(self, x, *, cache, refresh):
            return self.conv(x)

    w = ReFrame(Lazy().eval(), None, policy="N-3")
    with pytest.warns(UserWarning, match="stored nothing"):
        _run(w, frames(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run(w, frames(1))  # once


def test_copies_only_where_an_in_place_op_reaches_the_cache():
    demo = ReFrame(tiny_unet(), "up1", policy="N-2")  # in-place ReLUs, none on the cache
    assert "clone" not in demo.full_graph.code
    assert not demo._hit_mutates
    assert not demo._hit_aliases  # no per-hit aliasing check either
    assert ReFrame(ReturnsCached().eval(), "b", policy="never")._hit_aliases
    w = ReFrame(InPlaceAfter().eval(), "up1", policy="N-2")
    assert "clone" in w.full_graph.code
    assert w._hit_mutates


def test_default_trigger_finds_the_first_input_passed_by_keyword():
    net = MyUNet().eval()
    x = frames(1)
    w = ReFrame(net, "mid", policy="delta-0.01")
    with torch.inference_mode():
        w(x=x)
        w(x=x)
        w(x=x + 1)
    assert w.history == [True, False, True]


def test_pickle_and_deepcopy_mid_stream_continue_like_the_original():
    import copy
    import pickle

    seq = frames(5)
    w = ReFrame(MyUNet().eval(), "mid", policy="N-3")
    _run(w, seq[:2])
    clones = [pickle.loads(pickle.dumps(w)), copy.deepcopy(w)]
    ref = _run(w, seq[2:])
    for clone in clones:
        for a, b in zip(_run(clone, seq[2:]), ref, strict=True):
            assert torch.equal(a, b)
        assert clone.history == w.history


def test_index_trigger_finds_an_input_passed_by_keyword():
    net = Gbuf().eval()
    x, g = frames(1), frames(1, seed=3)
    w = ReFrame(net, "mid", policy="delta-0.01", trigger=1)
    with torch.inference_mode():
        w(x, gbuffer=g)
        w(x + 1, gbuffer=g)
        w(x, gbuffer=g + 1)
    assert w.history == [True, False, True]
