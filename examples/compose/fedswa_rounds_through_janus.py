"""fedswa training whose client uploads go through janus-secagg's verifiable secure aggregation.

Five clients hold Dirichlet-skewed shares (alpha = 0.5) of scikit-learn's real handwritten
digits and train an MLP with FedMoSWA (``fedswa.local_update``). Each round, instead of sending
their model delta and control delta in the clear, the clients mask and commit them with Janus:
server A sums the masked updates, server B the masks, and a client checks the weighted mean
against the commitments before anyone uses it (``JanusClient.finalize``). The verified mean then
takes fedswa's own server rule (``fedswa.server_step`` on that one aggregated upload), and every
round is compared with the plain ``server_step`` on the clear uploads. Needs ``fedswa``,
``janus-secagg`` and scikit-learn; about 7 s.
"""

import time

import fedswa
import janus_secagg as js
import numpy as np
import torch

CLIENTS, SHARE, ROUNDS, STEPS, BATCH, ETA = 5, 240, 10, 25, 32, 0.3
# Janus's mean is exact to 2^-(f+1) with f = 16 fractional bits (JanusParams), plus float32 rounding
TOLERANCE = 2.0**-17 + 1e-6
MIN_ACCURACY = 0.8  # held-out digits after the rounds (chance: 0.1)


def flat(tensors: dict) -> np.ndarray:
    return torch.cat([t.reshape(-1) for t in tensors.values()]).double().numpy()


def unflat(vector: np.ndarray, like: dict) -> dict:
    out, start = {}, 0
    for name, t in like.items():
        out[name] = torch.as_tensor(vector[start : start + t.numel()], dtype=t.dtype).view_as(t)
        start += t.numel()
    return out


def model_at(state: fedswa.ServerState) -> torch.nn.Module:
    model = fedswa.mlp(64, 32, 10)
    model.load_state_dict(state.model_state)
    return model


class Janus:
    """The two Janus servers and one JanusClient per FL client, for updates of `dim` values."""

    def __init__(self, dim: int, clients: int):
        self.params = js.JanusParams(dim=dim)
        commitment_key = js.CommitmentKey.derive(self.params)  # hash-to-curve: the slow part
        keys_a, keys_b = js.ServerKeys.generate(), js.ServerKeys.generate(box=True)
        self.a = js.ServerA(self.params, keys_a)
        self.b = js.ServerB(self.params, keys_b, keys_a.public)
        self.clients = [
            js.JanusClient(
                self.params, js.ClientKeys.generate(), keys_a.public, keys_b.public, commitment_key
            )
            for _ in range(clients)
        ]
        for client in self.clients:
            self.a.register(client.keys.public)
            self.b.register(client.keys.public)

    def weighted_mean(self, vectors, weights, round_id: int) -> np.ndarray:
        """Each client's vector goes out masked and committed; the mean comes back verified."""
        for client, vector, weight in zip(self.clients, vectors, weights, strict=True):
            to_a, to_b = client.prepare(vector, weight=weight, round_id=round_id)
            self.a.receive(to_a)
            self.b.receive(to_b)
        agg_b = self.b.aggregate(self.a.participants(self.b.bindings))
        return self.clients[0].finalize(self.a.aggregate(round_id), agg_b)  # or raises


def main() -> None:
    torch.manual_seed(0)
    x, y = fedswa.load_digits()
    order = torch.randperm(len(y))
    train, test = order[:1400], order[1400:]
    shares = fedswa.dirichlet_fixed_size(y[train].numpy(), CLIENTS, 0.5, SHARE, replace=False)
    data = [(x[train][idx], y[train][idx]) for idx in shares]
    batches = [
        [(inputs[i : i + BATCH], labels[i : i + BATCH]) for i in range(0, SHARE, BATCH)]
        for inputs, labels in data
    ]

    net = fedswa.mlp(64, 32, 10)
    algo = fedswa.get_algorithm("fedmoswa")
    state = fedswa.ServerState(net.state_dict(), fedswa.zeros_like_params(net))
    controls = [fedswa.zeros_like_params(net) for _ in range(CLIENTS)]
    size = sum(t.numel() for t in net.state_dict().values())
    start = time.perf_counter()
    janus = Janus(2 * size, CLIENTS)  # the model delta, then the control delta
    print(f"{size} parameters, {CLIENTS} clients, Janus set-up {time.perf_counter() - start:.1f} s")

    accuracy = fedswa.accuracy(model_at(state), x[test], y[test])
    print(f"round  max |secure - plain|  test accuracy\n{0:5}  {'':20}  {accuracy:13.3f}")
    for round_id in range(1, ROUNDS + 1):
        uploads = []
        for k in range(CLIENTS):
            control = fedswa.ClientControl(state.control, controls[k])
            upload = fedswa.local_update(
                model_at(state), batches[k], steps=STEPS, eta=ETA, rho=algo.rho,
                control=control, num_examples=SHARE,
            )  # fmt: skip
            uploads.append(upload)
            controls[k] = upload.new_control
        vectors = [np.concatenate([flat(u.delta), flat(u.control_delta)]) for u in uploads]
        mean = janus.weighted_mean(vectors, [u.num_examples for u in uploads], round_id)
        aggregated = fedswa.LocalResult(
            delta=unflat(mean[:size], uploads[0].delta),
            new_control=None,
            control_delta=unflat(mean[size:], uploads[0].control_delta),
            local_control_delta=None,
            num_examples=1,
            lr_sum=0.0,
            loss=0.0,
            steps=0,
        )
        plain = fedswa.server_step(state, uploads, gamma=algo.gamma, alpha=algo.alpha)
        state = fedswa.server_step(state, [aggregated], gamma=algo.gamma, alpha=algo.alpha)
        gap = max(
            (state.model_state[n] - w).abs().max().item() for n, w in plain.model_state.items()
        )
        accuracy = fedswa.accuracy(model_at(state), x[test], y[test])
        print(f"{round_id:5}  {gap:20.2e}  {accuracy:13.3f}")
        assert gap <= TOLERANCE, f"round {round_id}: the secure mean is {gap:.2e} off the plain one"
    assert accuracy >= MIN_ACCURACY, f"FedMoSWA through Janus reached only {accuracy:.3f}"


if __name__ == "__main__":
    main()
