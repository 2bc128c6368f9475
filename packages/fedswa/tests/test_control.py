"""ControlStore: per-client controls keyed by id, zeros for new clients, state_dict round trip."""

import pytest
import torch
from fedswa import ControlStore, accuracy, label_entropy, zeros_like_params


def test_new_clients_start_at_zero_and_copies_are_returned():
    store = ControlStore(zeros_like_params(torch.nn.Linear(3, 2)))
    c = store.get("site-7")
    assert set(c) == {"weight", "bias"}
    assert all(float(v.abs().sum()) == 0 for v in c.values())
    c["weight"] += 1  # the store keeps its own copy
    assert float(store.get("site-7")["weight"].abs().sum()) == 0
    assert "site-7" not in store


def test_state_dict_round_trip():
    store = ControlStore({"w": torch.zeros(2)})
    store.put(3, {"w": torch.tensor([1.0, -1.0])})
    store.put(1, {"w": torch.tensor([0.5, 0.5])})
    other = ControlStore({"w": torch.zeros(2)})
    other.load_state_dict(store.state_dict())
    assert other.client_ids() == [1, 3]
    assert torch.equal(other.get(3)["w"], torch.tensor([1.0, -1.0]))


@pytest.mark.parametrize(
    ("control", "error", "match"),
    [
        ({"v": torch.zeros(2)}, ValueError, "keys differ"),
        ({"w": torch.zeros(3)}, ValueError, "shapes differ"),
        ({"w": torch.tensor([float("inf"), 0.0])}, ValueError, "NaN or infinity"),
        ({"w": [0.0, 0.0]}, TypeError, "must be a Tensor"),
        ([torch.zeros(2)], TypeError, "mapping"),
    ],
)
def test_control_store_rejects_bad_input(control, error, match):
    store = ControlStore({"w": torch.zeros(2)})
    with pytest.raises(error, match=match):
        store.put(0, control)


def test_control_store_rejects_an_empty_template():
    with pytest.raises(ValueError, match="`template` is empty"):
        ControlStore({})


def test_zeros_like_params_rejects_non_modules():
    with pytest.raises(TypeError, match="`model`"):
        zeros_like_params({"w": torch.zeros(2)})


def test_accuracy_and_entropy_reject_bad_input():
    with pytest.raises(ValueError, match="`x` and `y`"):
        accuracy(torch.nn.Linear(2, 2), torch.zeros(3, 2), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="`labels`"):
        label_entropy([], [[0]])
