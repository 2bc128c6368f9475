"""Bad input to the lattice entry points raises a clear error naming the argument (spec 5)."""

import pytest
import torch
from monoattn_transducer import (
    RNNTLoss,
    emission_posterior,
    normalization_counts,
    rnnt_lattice,
    rnnt_loss,
)

B, T, U, V = 2, 4, 3, 5


def _ok():
    x = torch.randn(B, T, U + 1, V)
    y = torch.tensor([[1, 2, 3], [4, 1, 0]])
    return {"logits": x, "targets": y, "logit_lengths": torch.tensor([4, 3]),
            "target_lengths": torch.tensor([3, 2])}  # fmt: skip


def _nan():
    x = torch.randn(B, T, U + 1, V)
    x[1, 2, 0, 3] = float("nan")
    return x


def _inf():
    x = torch.randn(B, T, U + 1, V)
    x[0, 0, 0, 0] = float("-inf")
    return x


BAD = [
    ({"logits": torch.randn(B, T, V)}, ValueError, "logits"),
    ({"logits": torch.randn(B, T, U + 2, V)}, ValueError, "logits"),
    ({"logits": _nan()}, ValueError, "logits"),
    ({"logits": _inf()}, ValueError, "logits"),
    (
        {
            "logits": torch.randn(0, T, U + 1, V),
            "targets": torch.zeros(0, U, dtype=torch.int64),
            "logit_lengths": torch.zeros(0, dtype=torch.int64),
            "target_lengths": torch.zeros(0, dtype=torch.int64),
        },
        ValueError,
        "logits",
    ),
    ({"logits": torch.randn(B, T, U + 1, V).int()}, TypeError, "logits"),
    ({"logits": [[1.0]]}, TypeError, "logits"),
    ({"targets": torch.tensor([[1.0, 2, 3], [4, 1, 0]])}, TypeError, "targets"),
    ({"targets": torch.tensor([[1, 2, 5], [4, 1, 0]])}, ValueError, "targets"),
    ({"targets": torch.tensor([[1, -1, 3], [4, 1, 0]])}, ValueError, "targets"),
    ({"targets": torch.tensor([[1, 0, 3], [4, 1, 0]])}, ValueError, "blank"),
    ({"targets": torch.tensor([[1, 2, 3]])}, ValueError, "targets"),
    ({"logit_lengths": torch.tensor([5, 3])}, ValueError, "logit_lengths"),
    ({"logit_lengths": torch.tensor([0, 3])}, ValueError, "logit_lengths"),
    ({"logit_lengths": torch.tensor([4.0, 3.0])}, TypeError, "logit_lengths"),
    ({"logit_lengths": torch.tensor([4])}, ValueError, "logit_lengths"),
    ({"target_lengths": torch.tensor([-1, 2])}, ValueError, "target_lengths"),
    ({"target_lengths": torch.tensor([4, 2])}, ValueError, "target_lengths"),
]


@pytest.mark.parametrize(("change", "err", "name"), BAD)
@pytest.mark.parametrize("fn", ["loss", "module", "posterior"])
def test_lattice_entry_points_reject_bad_input(fn, change, err, name):
    args = {**_ok(), **change}
    call = {
        "loss": lambda: rnnt_loss(**args),
        "module": lambda: RNNTLoss()(**args),
        "posterior": lambda: emission_posterior(**args),
    }[fn]
    with pytest.raises(err, match=name):
        call()


def test_padding_beyond_target_lengths_is_ignored():
    args = _ok()
    a = rnnt_loss(**args, reduction="none")
    args["targets"] = torch.tensor([[1, 2, 3], [4, 1, 77]])  # out of range, but padding
    torch.testing.assert_close(rnnt_loss(**args, reduction="none"), a)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"reduction": "avg"}, "reduction"), ({"normalize": "utt"}, "normalize"),
     ({"backend": "cuda"}, "backend"), ({"blank": 7}, "blank"), ({"blank": -2}, "blank")],
)  # fmt: skip
def test_loss_unknown_options_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        rnnt_loss(**_ok(), **kwargs)


def test_unfused_requires_log_probs():
    with pytest.raises(ValueError, match="log-probabilities"):
        rnnt_loss(**_ok(), fused_log_softmax=False)


def test_rnnt_lattice_bad_input():
    bl, em = torch.randn(B, T, U + 1), torch.randn(B, T, U)
    tl, ul = torch.tensor([4, 3]), torch.tensor([3, 2])
    with pytest.raises(ValueError, match="emit_lp"):
        rnnt_lattice(bl, em[:, :, :2], tl, ul)
    with pytest.raises(ValueError, match="blank_lp"):
        rnnt_lattice(bl * float("nan"), em, tl, ul)
    with pytest.raises(ValueError, match="blank_lp"):
        rnnt_lattice(bl[:0], em[:0], tl[:0], ul[:0])
    with pytest.raises(ValueError, match="target_lengths"):
        rnnt_lattice(bl, em, tl, ul + 2)


def test_normalization_counts_and_bad_input():
    c = normalization_counts(torch.tensor([4, 3]), torch.tensor([3, 0]))
    assert (int(c["frames"]), int(c["tokens"]), int(c["utterances"])) == (7, 3, 2)
    with pytest.raises(ValueError, match="target_lengths"):
        normalization_counts(torch.tensor([4, 3]), torch.tensor([-1, 0]))


def test_normalization_counts_mismatched_sizes_raise():
    # trial 23 M3: a batch-bookkeeping bug used to give silently wrong counts
    with pytest.raises(ValueError, match="target_lengths"):
        normalization_counts(torch.tensor([5, 4]), torch.tensor([3]))
    with pytest.raises(ValueError, match="target_lengths"):
        normalization_counts(torch.tensor([5]), torch.tensor([3, 1]))
