"""The two-pass step and streaming decoding (spec test 7), on tiny random models."""

import pytest
import torch
from monoattn_transducer import (
    MonoAttnTransducer,
    TransducerOutput,
    chunk_synchronize,
    greedy_stream,
    rnnt_loss,
)

F, V = 6, 5


def _model(monotonic=True, left_chunks=1, seed=0):
    torch.manual_seed(seed)
    return MonoAttnTransducer.build(
        F, V, d_model=16, enc_layers=1, pred_layers=2, num_heads=2, chunk_frames=4,
        left_chunks=left_chunks, downsample=2, monotonic=monotonic, dropout=0.0,
    )  # fmt: skip


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    feats = torch.randn(3, 40, F, generator=g)
    lengths = torch.tensor([40, 29, 17])
    targets = torch.randint(1, V, (3, 4), generator=g)
    return feats, lengths, targets, torch.tensor([4, 2, 0])


def test_two_pass_step_trains_and_posterior_is_constant():
    model = _model()
    out = model(*_batch())
    assert isinstance(out, TransducerOutput)
    assert out.posterior is not None
    assert out.alignment is not None
    assert not out.posterior.requires_grad
    assert not out.alignment.requires_grad
    out.loss.backward()
    grads = [p.grad for p in model.predictor.parameters() if p.grad is not None]
    assert grads
    assert all(torch.isfinite(g).all() for g in grads)
    # rows of the synchronised alignment carry the posterior's mass (1 per valid label)
    sums = out.alignment.sum(-1)
    torch.testing.assert_close(sums[0], torch.ones(5))
    torch.testing.assert_close(sums[1], torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0]))


def test_second_pass_loss_equals_loss_under_the_returned_alignment():
    model = _model().eval()
    feats, lengths, targets, t_len = _batch(1)
    out = model(feats, lengths, targets, t_len)
    again = model(feats, lengths, targets, t_len, alignment=out.alignment)
    torch.testing.assert_close(out.loss, again.loss)


def test_plain_transducer_is_one_pass():
    model = _model(monotonic=False)
    feats, lengths, targets, t_len = _batch(2)
    out = model(feats, lengths, targets, t_len)
    assert out.posterior is None
    assert out.alignment is None
    h, enc_len = model.encoder(feats, lengths)
    g = model.predictor(model.predictor_input(targets, t_len))
    dec_len = (enc_len + 1) // 2
    want = rnnt_loss(model.joint(h[:, ::2], g), targets, dec_len, t_len)
    torch.testing.assert_close(out.loss, want)


@pytest.mark.parametrize("left_chunks", [1, None])
def test_training_contexts_equal_streaming_contexts(left_chunks):
    model = _model(left_chunks=left_chunks, seed=3).eval()
    with torch.no_grad():
        model.joint.out.bias[0] = -3.0  # emit often, so the stream has labels to compare
    feats = torch.randn(1, 37, F, generator=torch.Generator().manual_seed(4))
    res = greedy_stream(model, feats[0], max_symbols_per_frame=2)
    U = len(res.tokens)
    assert U >= 3
    # one-hot alignment at the true emission (decision) frames, chunk-synchronised as in training
    h, enc_len = model.encoder(feats, torch.tensor([37]))
    post = torch.zeros(1, (h.shape[1] + 1) // 2, U)
    post[0, res.emit_frames, torch.arange(U)] = 1.0
    align = chunk_synchronize(post, enc_len, torch.tensor([U]), chunk_frames=4, downsample=2)
    tokens = torch.tensor([[0, *res.tokens]])
    with torch.no_grad():
        g = model.states(h, enc_len, tokens, align)[0]
    torch.testing.assert_close(g, res.states, atol=1e-4, rtol=1e-4)
    assert res.context_frames[1:] == align[0, 1:].argmax(-1).tolist()


def test_block_causal_encoder_prefix_is_stable():
    model = _model().eval()
    feats = torch.randn(1, 40, F)
    with torch.no_grad():
        full, _ = model.encoder(feats, torch.tensor([40]))
        part, _ = model.encoder(feats[:, :16], torch.tensor([16]))
    torch.testing.assert_close(full[:, :4], part[:, :4], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"chunk_frames": 3}, "chunk_frames"), ({"prior": "x"}, "prior"),
     ({"normalize": "x"}, "normalize"), ({"prior_alpha": -1.0}, "prior_alpha")],
)  # fmt: skip
def test_model_bad_settings_raise(kwargs, name):
    m = _model()
    args = {"chunk_frames": 4, "downsample": 2, **kwargs}
    with pytest.raises(ValueError, match=name):
        MonoAttnTransducer(m.encoder, m.predictor, m.joint, **args)


def test_model_forward_bad_input_raises():
    model = _model()
    feats, lengths, targets, t_len = _batch()
    with pytest.raises(ValueError, match="feats"):
        model(feats[..., :3], lengths, targets, t_len)
    with pytest.raises(ValueError, match="feat_lengths"):
        model(feats, lengths * 10, targets, t_len)
    with pytest.raises(ValueError, match="feats"):
        model(feats * float("nan"), lengths, targets, t_len)
    with pytest.raises(ValueError, match="target_lengths"):
        model(feats, lengths, targets, t_len + 5)
    with pytest.raises(TypeError, match="targets"):
        model(feats, lengths, targets.float(), t_len)
    with pytest.raises(ValueError, match="targets"):  # label >= V (found by the new-user trial)
        model(feats, lengths, targets + V, t_len)
    with pytest.raises(ValueError, match="blank"):
        model(feats, lengths, targets * 0, t_len)
    with pytest.raises(ValueError, match="max_symbols_per_frame"):
        greedy_stream(model, feats[0], max_symbols_per_frame=0)
    with pytest.raises(ValueError, match="feats"):
        greedy_stream(model, feats)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (DECISIONS 13)")
def test_model_runs_on_cuda():
    model = _model().cuda()
    out = model(*[x.cuda() for x in _batch()])
    out.loss.backward()
    assert out.loss.device.type == "cuda"


class _ByoEncoder(torch.nn.Module):
    """An encoder of one's own: stacks 2 frames, no `subsampling` attribute."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(2 * F, 16)

    def forward(self, feats, lengths):
        B, T, _ = feats.shape
        x = torch.nn.functional.pad(feats, (0, 0, 0, T % 2)).reshape(B, -(-T // 2), 2 * F)
        return self.proj(x), (lengths + 1) // 2


def test_byo_encoder_without_subsampling_streams_with_the_argument():
    # trial 23 M1: greedy_stream used to fail with AttributeError: ... 'subsampling'
    m = _model()
    model = MonoAttnTransducer(_ByoEncoder(), m.predictor, m.joint, chunk_frames=4, downsample=2)
    feats, lengths, targets, t_len = _batch()
    model(feats, lengths, targets, t_len).loss.backward()  # training needs no subsampling
    assert model.subsampling is None
    with pytest.raises(ValueError, match="subsampling"):
        greedy_stream(model, feats[0])
    model = MonoAttnTransducer(
        _ByoEncoder(), m.predictor, m.joint, chunk_frames=4, downsample=2, subsampling=2
    )
    res = greedy_stream(model, feats[0])
    assert res.states.shape == (len(res.tokens) + 1, 16)
    assert _model().subsampling == 4  # read from ChunkedStreamingEncoder
    with pytest.raises(ValueError, match="subsampling"):
        MonoAttnTransducer(m.encoder, m.predictor, m.joint, chunk_frames=4, downsample=2,
                           subsampling=0)  # fmt: skip


@pytest.mark.parametrize("monotonic", [True, False])
def test_all_empty_targets_train(monotonic):
    # trial 23 M2: an all-empty target batch raised about the predictor's `tokens`
    model = _model(monotonic=monotonic)
    feats, lengths, _, _ = _batch()
    targets = torch.zeros(3, 0, dtype=torch.int64)
    out = model(feats, lengths, targets, torch.zeros(3, dtype=torch.int64))
    assert torch.isfinite(out.loss)
    out.loss.backward()
    if monotonic:
        assert out.posterior is not None
        assert out.posterior.shape[2] == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_feats_of_another_dtype_are_cast(dtype):
    # trial 23 L1: raw "mat1 and mat2 must have the same dtype" from linear.py
    model = _model()
    feats, lengths, targets, t_len = _batch()
    ref = model(feats, lengths, targets, t_len).loss
    out = model(feats.to(dtype), lengths, targets, t_len).loss
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref, atol=0.05, rtol=0.02)
    greedy_stream(model, feats[0].to(dtype))


def test_huge_feats_error_names_feats():
    # trial 23 L2: the error named the attention's internal `key`
    model = _model()
    feats, lengths, targets, t_len = _batch()
    with pytest.raises(ValueError, match="feats"):
        model(feats * 1e20, lengths, targets, t_len)


def test_blank_minus_one_means_last_label():
    # trial 23 L4: the README's `-1` = V-1 now holds for the model too
    torch.manual_seed(0)
    model = MonoAttnTransducer.build(F, V, d_model=16, enc_layers=1, pred_layers=1, num_heads=2,
                                     chunk_frames=4, downsample=2, blank=-1)  # fmt: skip
    assert model.blank == V - 1
    feats, lengths, _, t_len = _batch()
    targets = torch.randint(0, V - 1, (3, 4), generator=torch.Generator().manual_seed(1))
    model(feats, lengths, targets, t_len).loss.backward()
    with pytest.raises(ValueError, match="blank"):
        MonoAttnTransducer.build(F, V, chunk_frames=4, downsample=2, blank=-2)


def test_vocab_of_blank_only_raises():
    # trial 23 L5
    with pytest.raises(ValueError, match="vocab_size"):
        MonoAttnTransducer.build(F, 1, d_model=16, chunk_frames=4, downsample=2)


def test_alignment_argument_is_checked():
    # trial 23 L6: rows summing to 5 were accepted silently
    model = _model()
    feats, lengths, targets, t_len = _batch()
    out = model(feats, lengths, targets, t_len)
    assert out.alignment is not None
    model(feats, lengths, targets, t_len, alignment=out.alignment)  # valid: accepted
    with pytest.raises(ValueError, match="alignment"):
        model(feats, lengths, targets, t_len, alignment=out.alignment * 5)
    with pytest.raises(ValueError, match="alignment"):
        model(feats, lengths, targets, t_len, alignment=-out.alignment)
    with pytest.raises(ValueError, match="alignment"):
        model(feats, lengths, targets, t_len, alignment=out.alignment[:, :, :-1])
