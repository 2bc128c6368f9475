"""Reproduce the paper's headline properties, small, on real input (spec §4).

Janus-style FedAvg on Fashion-MNIST (Debian ``dataset-fashion-mnist``, read by
``icml25_core.fashion_mnist``): softmax regression (7 850 parameters), 20 clients split by
Dir(0.5) with flwr-datasets, 10 per round, 30 rounds, 30 % of each round's clients dropping
between A and B, servers A and B as real processes on loopback. The paper reports properties,
not numbers; the pass rules below were fixed before the first run.

Run by ``janus-secagg reproduce [--out reports]`` or ``nox -s reproduce -- janus-secagg``.
"""

import dataclasses
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from icml25_core import Claim, Report, fashion_mnist, progress

from . import __version__
from .bench import default_cache_dir, janus_client_cost
from .client import JanusClient
from .commitment import CommitmentKey
from .errors import VerificationError
from .keys import ClientKeys, ServerKeys
from .messages import AggA, AggB, Authorization
from .params import JanusParams
from .quantize import quantize
from .server import ServerA, ServerB
from .serving import start_server, stop_server
from .testing import Deployment, FaultyServerA, FaultyServerB

# Pass rules, fixed before the first run (spec §4); never moved after one.
ACC_GAP_PT = 0.5  # |acc(Janus) - acc(plaintext)| in percentage points
FAULTS = ("y", "r", "p_a", "c_u", "u_b")  # tamper Y, R, P_A; C_U off by one; B given another U
TIME_RATIO_MAX = 1.3  # time(n = 200) / time(n = 5) of one client
#: Issue 16 (hole 2) sends U itself in AggA and AggB: 8 bytes per participant in each. The
#: cost rule's byte part changed with it (was: the same bytes for all n), disclosed in a note.
DOWN_BYTES_PER_PARTICIPANT = 16
LIBRARY = "janus-secagg"


@dataclasses.dataclass(frozen=True)
class Settings:
    """Sizes of one run."""

    clients: int = 20
    per_round: int = 10
    rounds: int = 30
    train: int = 12_000
    dropout: float = 0.3
    local_steps: int = 5
    alpha: float = 0.5
    bench_dim: int = 10_000
    bench_ns: tuple = (5, 20, 50, 100, 200)
    repeats: int = 3
    seed: int = 0


DEFAULT = Settings()
FULL = Settings(train=60_000, rounds=60, repeats=5)


def load_data(settings: Settings):
    """Fashion-MNIST: `train` images sampled from the 60 000 (seeded) and the 10 000 test
    images, as float64 pixels in [0, 1] of shape (n, 784) and int64 labels."""
    images, labels = fashion_mnist("train")
    pick = np.random.default_rng(settings.seed).permutation(len(labels))[: settings.train]
    test_images, test_labels = fashion_mnist("test")

    def flat(x):
        return x.reshape(len(x), -1).astype(np.float64) / 255.0

    return flat(images[pick]), labels[pick], flat(test_images), test_labels


def partition(labels: np.ndarray, settings: Settings) -> list[np.ndarray]:
    """Dir(alpha) label partition into `clients` parts (flwr-datasets' DirichletPartitioner)."""
    from datasets import Dataset
    from flwr_datasets.partitioner import DirichletPartitioner

    partitioner = DirichletPartitioner(
        num_partitions=settings.clients, partition_by="label", alpha=settings.alpha,
        seed=settings.seed,
    )  # fmt: skip
    partitioner.dataset = Dataset.from_dict(
        {"label": labels.tolist(), "idx": list(range(len(labels)))}
    )
    return [np.asarray(partitioner.load_partition(i)["idx"]) for i in range(settings.clients)]


def _logits(theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    W, b = theta[: 784 * 10].reshape(784, 10), theta[784 * 10 :]
    return X @ W + b


def step_size(X: np.ndarray) -> float:
    """1/L for softmax cross-entropy: L <= λ_max(X̃ᵀX̃ / n) / 2 with X̃ = [X, 1] (the softmax
    Hessian in the logits is diag(p) − ppᵀ ⪯ I/2), so full-batch GD with this step descends."""
    Xb = np.hstack([X, np.ones((len(X), 1))])
    return 2.0 / float(np.linalg.eigvalsh(Xb.T @ Xb / len(X))[-1])


def local_update(theta, X, y, settings: Settings, lr: float | None = None) -> np.ndarray:
    """Full-batch gradient descent on softmax cross-entropy with step `lr` (default: the
    client's own 1/L, ``step_size``); returns local − global, shape (7 850,)."""
    lr = step_size(X) if lr is None else lr
    local = theta.copy()
    onehot = np.eye(10)[y]
    for _ in range(settings.local_steps):
        z = _logits(local, X)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) / len(y)
        grad = np.concatenate([(X.T @ g).ravel(), g.sum(axis=0)])
        local -= lr * grad
    return local - theta


def accuracy(theta, X, y) -> float:
    return float((_logits(theta, X).argmax(axis=1) == y).mean())


class _Network:
    """Servers A and B as processes on loopback (own process groups), a throwaway deployment:
    operator-signed enrolment of the clients, TLS with pinned certificates (issue 16)."""

    def __init__(self, params: JanusParams, rounds: int, clients: int):
        self.params = params
        self.tmp = tempfile.TemporaryDirectory()
        self.deployment = Deployment(Path(self.tmp.name), params, clients)
        common = ["--rounds", str(rounds), "--linger", "60"]
        self.procs = []
        try:
            folder = Path(self.tmp.name)
            b_state = ["--state-file", str(folder / "b-state.jsonl")]
            b_proc, b_port = start_server(self.deployment.serve_args("b", *common, *b_state))
            self.procs.append(b_proc)
            a_state = ["--state-file", str(folder / "a-state.jsonl")]
            a_proc, a_port = start_server(
                self.deployment.serve_args("a", "--b-port", str(b_port), *common, *a_state)
            )
            self.procs.append(a_proc)
        except BaseException:
            self.close()
            raise
        self.a, self.b = self.deployment.remote("a", a_port), self.deployment.remote("b", b_port)
        self.a_keys = self.deployment.ka

    def close(self) -> None:
        for proc in self.procs:
            stop_server(proc)
        self.tmp.cleanup()


def federated_run(settings: Settings, data, parts, params, ck):
    """30 rounds of FedAvg twice on the same clients, sampling and dropouts: plaintext weighted
    mean, and Janus-style through the two server processes with every sampled client verifying.
    """
    X, y, Xt, yt = data
    rng = np.random.default_rng(settings.seed + 1)
    steps = [step_size(X[idx]) for idx in parts]
    net = _Network(params, settings.rounds, settings.clients)
    try:
        clients = net.deployment.janus_clients(ck)
        theta_j = np.zeros(params.dim)
        theta_p = np.zeros(params.dim)
        rows = []
        for t in progress(range(1, settings.rounds + 1), desc="rounds", unit="round"):
            sampled = rng.choice(settings.clients, settings.per_round, replace=False)
            dropped = set(
                rng.choice(sampled, round(settings.dropout * len(sampled)), replace=False)
            )
            kept = [int(i) for i in sampled if i not in dropped]
            updates, codes, weights, plain = {}, {}, {}, {}
            for i in sampled:
                idx = parts[i]
                updates[i] = local_update(theta_j, X[idx], y[idx], settings, steps[i])
                plain[i] = local_update(theta_p, X[idx], y[idx], settings, steps[i])
                weights[i] = len(idx)
                codes[i] = quantize(updates[i], weights[i], params)
                to_a, to_b = clients[i].prepare(updates[i], weights[i], t)
                net.a.submit(to_a)
                if i not in dropped:
                    net.b.submit(to_b)
            net.a.close_round(Authorization.sign(net.a_keys, params.context, "close", t))
            agg_a, agg_b = net.a.fetch(t, AggA), net.b.fetch(t, AggB)
            sums = [clients[i].verify(agg_a, agg_b, submitted=i not in dropped) for i in sampled]
            exact = all(
                np.array_equal(s.astype(np.int64), sum(codes[i] for i in kept)) for s in sums
            )
            mean = clients[kept[0]].finalize(agg_a, agg_b)
            w = [weights[i] for i in kept]
            reference = np.average(
                np.clip([updates[i] for i in kept], -params.clip, params.clip), axis=0, weights=w
            )
            exact_mean = np.average([updates[i] for i in kept], axis=0, weights=w)
            step_gap = accuracy(theta_j + mean, Xt, yt) - accuracy(theta_j + exact_mean, Xt, yt)
            theta_j = theta_j + mean
            theta_p = theta_p + np.average([plain[i] for i in kept], axis=0, weights=w)
            rows.append({
                "round": t,
                "participants": len(kept),
                "exact": bool(exact),
                "max_mean_error": float(np.abs(mean - reference).max()),
                "acc_janus": accuracy(theta_j, Xt, yt),
                "acc_plain": accuracy(theta_p, Xt, yt),
                "step_acc_gap": float(step_gap),
            })  # fmt: skip
    finally:
        net.close()
    return rows, theta_j, clients


def fault_run(params, ck, updates, weights) -> dict[str, int]:
    """For each fault: honest clients on the real updates; count those that detect it."""
    detected = {}
    for fault in FAULTS:
        ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
        A = (
            FaultyServerA(params, ka, fault)
            if fault in ("y", "p_a", "c_u", "u_b")
            else ServerA(params, ka)
        )
        B = (
            FaultyServerB(params, kb, ka.public, fault)
            if fault == "r"
            else ServerB(params, kb, ka.public)
        )
        clients = [
            JanusClient(params, ClientKeys.generate(), ka.public, kb.public, ck) for _ in updates
        ]
        for client, u, w in zip(clients, updates, weights, strict=True):
            A.register(client.keys.public)
            B.register(client.keys.public)
            to_a, to_b = client.prepare(u, w, 1)
            A.receive(to_a)
            B.receive(to_b)
        agg_b = B.aggregate(A.participants(B.bindings))
        agg_a = A.aggregate(1)
        count = 0
        for client in clients:
            try:
                client.verify(agg_a, agg_b)
            except VerificationError:
                count += 1
        detected[fault] = count
    return detected


def plot(rows, costs, out: Path) -> str:
    """``janus-secagg.png``: per-client time and bytes against n; test accuracy per round."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [c["n"] for c in costs]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    axes[0].plot(ns, [c["prepare_s"] for c in costs], "o-", label="prepare (mask + commit)")
    axes[0].plot(ns, [c["finalize_s"] for c in costs], "s-", label="finalize (verify)")
    axes[0].set(xscale="log", xlabel="clients n", ylabel="seconds per client",
                title="Per-client time, l = 10 000")  # fmt: skip
    axes[0].set_ylim(bottom=0)
    axes[0].legend()
    axes[1].plot(ns, [c["up_bytes"] / 1e3 for c in costs], "o-", label="up (ToA + ToB)")
    axes[1].plot(ns, [c["down_bytes"] / 1e3 for c in costs], "s-", label="down (AggA + AggB)")
    axes[1].set(xscale="log", xlabel="clients n", ylabel="kB per client", title="Per-client bytes")
    axes[1].set_ylim(bottom=0)
    axes[1].legend()
    axes[2].plot(
        [r["round"] for r in rows], [100 * r["acc_plain"] for r in rows], label="plaintext"
    )
    axes[2].plot([r["round"] for r in rows], [100 * r["acc_janus"] for r in rows], "--",
                 label="Janus-style")  # fmt: skip
    axes[2].set(xlabel="round", ylabel="test accuracy (%)", title="FedAvg on Fashion-MNIST")
    axes[2].legend()
    for ax in axes[:2]:
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
    fig.tight_layout()
    name = f"{LIBRARY}.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def run(full: bool = False, out="reports", settings: Settings | None = None) -> Report:
    """Measure the four properties of spec §4 and return the report.

    Parameters
    ----------
    full : bool, default=False
        All 60 000 training images and 60 rounds instead of 12 000 and 30.
    out : str or Path, default="reports"
        Folder of the plot.
    settings : Settings, optional
        Explicit sizes (tests use tiny ones); overrides `full`.

    Returns
    -------
    icml25_core.Report
        Four claims (accuracy, exactness, verifiability, constant per-client cost).
    """
    if settings is None:
        settings = FULL if full else DEFAULT
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    data = load_data(settings)
    parts = partition(data[1], settings)
    params = JanusParams(dim=784 * 10 + 10)
    ck = CommitmentKey.derive(params, cache_dir=default_cache_dir())
    rows, theta, _ = federated_run(settings, data, parts, params, ck)
    X, y = data[0], data[1]
    fault_clients = range(5)
    updates = [local_update(theta, X[parts[i]], y[parts[i]], settings) for i in fault_clients]
    detected = fault_run(params, ck, updates, [len(parts[i]) for i in fault_clients])
    bench_params = JanusParams(dim=settings.bench_dim)
    bench_ck = CommitmentKey.derive(bench_params, cache_dir=default_cache_dir())
    costs = [
        janus_client_cost(bench_params, bench_ck, n, settings.repeats)
        for n in progress(settings.bench_ns, desc="per-client cost", unit="n")
    ]
    figure = plot(rows, costs, out)
    return build_report(
        settings, params, rows, detected, costs, figure, time.perf_counter() - start
    )


def build_report(settings, params, rows, detected, costs, figure, runtime_s) -> Report:
    tol = 2.0 ** -(params.frac_bits + 1)
    acc_j, acc_p = rows[-1]["acc_janus"], rows[-1]["acc_plain"]
    gap = 100 * abs(acc_j - acc_p)
    worst = max(r["max_mean_error"] for r in rows)
    exact = sum(r["exact"] for r in rows)
    per_round = settings.per_round
    caught = sum(detected[f] == 5 for f in FAULTS)
    ratio = costs[-1]["time_s"] / costs[0]["time_s"]
    same_up = len({c["up_bytes"] for c in costs}) == 1
    down_base = costs[0]["down_bytes"] - DOWN_BYTES_PER_PARTICIPANT * costs[0]["n"]
    down_linear = all(
        c["down_bytes"] == down_base + DOWN_BYTES_PER_PARTICIPANT * c["n"] for c in costs
    )
    report = Report(
        library=LIBRARY,
        title="Janus-style dual-server verifiable secure aggregation (Pu et al., ICML 2025)",
        setup={
            "data": f"Fashion-MNIST (Debian dataset-fashion-mnist): {settings.train} training "
            "images, 10 000 test images",
            "model": "softmax regression, 7 850 parameters, 5 local full-batch GD steps of "
            "size 1/L (each client's own smoothness bound)",
            "federation": f"{settings.clients} clients, Dir({settings.alpha}) via flwr-datasets, "
            f"{per_round} per round, {settings.rounds} rounds, "
            f"{round(settings.dropout * per_round)} per round drop between A and B",
            "servers": "A and B as separate processes on 127.0.0.1 (janus-secagg serve-a/b), TLS "
            "pinned by the operator-signed enrolment of the clients",
            "params": f"C = {params.clip}, f = {params.frac_bits}, t = {params.min_clients}, "
            f"W_max = 2^20, BLS12-381 G1 Pedersen (py-arkworks-bls12381)",
            "machine": f"{platform.machine()}, {platform.system()}, janus-secagg {__version__}",
        },
        figures=[figure],
        runtime_s=runtime_s,
    )
    report.claims.append(Claim.judge(
        "Tolerable accuracy impact of secure aggregation (fixed-point encoding)",
        "'tolerable impact' (abstract; no number available)",
        f"final test accuracy {100 * acc_j:.2f} % (Janus) vs {100 * acc_p:.2f} % (plaintext), "
        f"gap {gap:.3f} pt; worst per-round error of the mean {worst:.2e}",
        gap <= ACC_GAP_PT and worst <= tol,
        f"gap <= {ACC_GAP_PT} pt and every round's mean within 2^-(f+1) = {tol:.2e}",
    ))  # fmt: skip
    report.claims.append(Claim.judge(
        "Exact aggregation despite dropouts",
        "exact sum; dropouts tolerated (abstract)",
        f"Y - R == sum of encodings bitwise in {exact}/{len(rows)} rounds, verified by every "
        f"sampled client, with 30 % dropping between A and B",
        exact == len(rows),
        "all rounds bit-exact",
    ))  # fmt: skip
    report.claims.append(Claim.judge(
        "Verifiability: a cheating server is detected",
        "detects aggregation tampering and model-inconsistency attacks (abstract)",
        f"{caught}/{len(FAULTS)} faults detected by 5/5 clients "
        f"({', '.join(f'{f}: {detected[f]}/5' for f in FAULTS)})",
        caught == len(FAULTS),
        "5/5 faults, each detected by every client",
    ))  # fmt: skip
    report.claims.append(Claim.judge(
        "Per-client cost constant in the number of clients",
        "client cost independent of n (abstract)",
        f"bytes per client {costs[0]['up_bytes']} up for every n in {list(settings.bench_ns)}, "
        f"{down_base} + {DOWN_BYTES_PER_PARTICIPANT} n down ({costs[0]['down_bytes']} at "
        f"n = {costs[0]['n']}, {costs[-1]['down_bytes']} at n = {costs[-1]['n']}); "
        f"time(n={costs[-1]['n']}) / time(n={costs[0]['n']}) = {ratio:.2f}",
        same_up and down_linear and ratio <= TIME_RATIO_MAX,
        f"same upload bytes for all n, download = constant + {DOWN_BYTES_PER_PARTICIPANT} n "
        f"bytes (U in both aggregates), time ratio <= {TIME_RATIO_MAX} (l = {settings.bench_dim})",
        note="in-process servers; the other n - 1 clients send u = -C (zero codes)",
    ))  # fmt: skip
    table = [
        "| n | prepare (s) | finalize (s) | up (B) | down (B) |",
        "| --- | --- | --- | --- | --- |",
    ]
    table += [
        f"| {c['n']} | {c['prepare_s']:.3f} | {c['finalize_s']:.3f} | {c['up_bytes']} | "
        f"{c['down_bytes']} |"
        for c in costs
    ]
    last = rows[-min(10, len(rows)) :]
    spread = 100 * (max(r["acc_plain"] for r in last) - min(r["acc_plain"] for r in last))
    step = 100 * max(abs(r["step_acc_gap"]) for r in rows)
    report.notes.append(
        "Diagnostic (not a verdict): the plaintext run's test accuracy moves by "
        f"{spread:.2f} pt across its last {len(last)} rounds (non-IID client sampling), the "
        "scale at which two FedAvg trajectories can drift apart. The encoding's own effect, "
        "measured per round on the same model (global + Janus mean vs global + exact float "
        f"mean), is at most {step:.3f} pt over all rounds."
    )
    report.tables["Per-client cost (l = 10 000, median of repeats)"] = "\n".join(table)
    report.notes.append(
        "Setup change disclosed: the first run used a fixed step 0.5, above full-batch GD's "
        "stability limit 2/L on raw pixels (the plaintext run oscillated by up to 14 pt between "
        "rounds); it measured a 1.23 pt final gap (74.49 % vs 73.26 %) and failed the accuracy "
        "rule. The step is now each client's 1/L; the pass rule is unchanged."
    )
    report.notes.append(
        "Pass rule changed with the protocol (issue 16, disclosed): clients now receive the "
        "participant set U itself, signed by both servers, so that an excluded client can "
        "tell; download grows by 16 bytes per participant, and the byte part of the cost rule "
        "went from 'the same bytes for all n' to 'the same upload, and download = constant + "
        "16 n'. Computation and upload stay constant in n."
    )
    report.notes.append(
        "Janus-style reconstruction: the paper body and code were not available; the protocol "
        "follows the properties of the abstract (see the README)."
    )
    return report


def main(out="reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write ``<out>/janus-secagg.{md,json}`` and the plot.

    Returns
    -------
    tuple of pathlib.Path
        The markdown report and the JSON one beside it.
    """
    report = run(full=full, out=out)
    print(report.to_markdown())
    return report.write(out)
