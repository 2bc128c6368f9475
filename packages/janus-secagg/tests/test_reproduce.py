"""The reproduce end to end at a tiny size: real Fashion-MNIST, server processes, four claims."""

import json

import pytest
from janus_secagg import reproduce

TINY = reproduce.Settings(
    clients=6, per_round=5, rounds=2, train=600, bench_dim=64, bench_ns=(5, 8), repeats=1
)


@pytest.mark.slow
def test_tiny_run_writes_report_with_four_claims(tmp_path):
    report = reproduce.run(out=tmp_path, settings=TINY)
    md, js = report.write(tmp_path)
    data = json.loads(js.read_text())
    assert len(data["claims"]) == 4
    verdicts = [c["verdict"] for c in data["claims"]]
    assert verdicts[1] == "reproduced"  # exactness is a property, not a statistic
    assert verdicts[2] == "reproduced"  # every fault detected by every client
    assert (tmp_path / "janus-secagg.png").exists()
    assert "Janus-style" in md.read_text()


def test_partition_covers_every_sample():
    import numpy as np

    labels = np.repeat(np.arange(10), 30)
    parts = reproduce.partition(labels, TINY)
    assert len(parts) == TINY.clients
    assert sorted(np.concatenate(parts).tolist()) == list(range(300))


def test_local_update_decreases_loss():
    import numpy as np

    rng = np.random.default_rng(0)
    X, y = rng.random((50, 784)), rng.integers(0, 10, 50)
    theta = np.zeros(7850)
    step = reproduce.local_update(theta, X, y, TINY)
    z = reproduce._logits(theta + step, X)
    loss = -np.mean(z[np.arange(50), y] - np.log(np.exp(z).sum(1)))
    assert loss < np.log(10)
