"""B's one-answer-per-round record survives a restart (issue 16, hole 4): in-process and after a
real SIGKILL of the process that answered."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from janus_secagg import (
    ClientKeys,
    ParticipantSet,
    ProtocolError,
    ServerA,
    ServerB,
    ServerKeys,
)
from janus_secagg.testing import random_codes


def test_a_restarted_b_refuses_the_rounds_it_answered(federation, params, tmp_path):
    state = tmp_path / "b-state.jsonl"

    def servers(p, ka, kb):
        return ServerA(p, ka), ServerB(p, kb, ka.public, state=state)

    fed = federation(4, servers)
    xs = random_codes(params, np.random.default_rng(3), 4)
    _, agg_b, _ = fed.run_round(1, xs)
    with pytest.raises(ValueError, match="in use by another server process"):
        ServerB(params, fed.kb, fed.ka.public, state=state)  # two live Bs on one record
    fed.B.close()
    restarted = ServerB(params, fed.kb, fed.ka.public, state=state)
    assert restarted.outputs[1] == agg_b
    assert restarted.round_id == 2
    replay = ParticipantSet(1, tuple(sorted(c.keys.client_id for c in fed.clients)), b"")
    with pytest.raises(ProtocolError, match="round 1 was already answered"):
        restarted.aggregate(replay)


def test_a_restarted_a_continues_at_the_next_round(federation, params, tmp_path):
    # trial finding (issue 16): a restarted serve-a opened round 1 while B was at round 5, and
    # no round could close again
    state = tmp_path / "a-state.jsonl"
    fed = federation(3, lambda p, ka, kb: (ServerA(p, ka, state=state), ServerB(p, kb, ka.public)))
    agg_a, _, _ = fed.run_round(1, random_codes(params, np.random.default_rng(5), 3))
    fed.A.close()
    restarted = ServerA(params, fed.ka, state=state)
    assert restarted.round_id == 2
    assert restarted.outputs[1] == agg_a
    restarted.close()
    with pytest.raises(ValueError, match="another configuration"):
        ServerA(params, ServerKeys.generate(), state=state)  # another A's record


def test_state_of_another_b_or_other_params_is_refused(federation, params, tmp_path):
    state = tmp_path / "b-state.jsonl"
    fed = federation(3, lambda p, ka, kb: (ServerA(p, ka), ServerB(p, kb, ka.public, state=state)))
    fed.run_round(1, random_codes(params, np.random.default_rng(4), 3))
    fed.B.close()
    other_b = ServerKeys.generate(box=True)
    with pytest.raises(ValueError, match="another configuration"):
        ServerB(params, other_b, fed.ka.public, state=state)
    other_params = type(params)(dim=params.dim + 1)
    with pytest.raises(ValueError, match="another configuration"):
        ServerB(other_params, fed.kb, fed.ka.public, state=state)


ROUND_THEN_KILL = """
import os, signal, sys
import numpy as np
import janus_secagg as js

folder = sys.argv[1]
params = js.JanusParams(dim=4)
ck = js.CommitmentKey.derive(params)
ka, kb = js.ServerKeys.generate(), js.ServerKeys.generate(box=True)
ka.save(os.path.join(folder, "a.key"))
kb.save(os.path.join(folder, "b.key"))
A = js.ServerA(params, ka)
B = js.ServerB(params, kb, ka.public, state=os.path.join(folder, "b-state.jsonl"))
for i in range(3):
    client = js.JanusClient(params, js.ClientKeys.generate(), ka.public, kb.public, ck)
    A.register(client.keys.public)
    B.register(client.keys.public)
    to_a, to_b = client.prepare(np.full(4, 0.1 * i), weight=1, round_id=1)
    A.receive(to_a)
    B.receive(to_b)
answer = B.aggregate(A.participants(B.bindings))
with open(os.path.join(folder, "answer.hex"), "w") as fh:
    fh.write(answer.to_bytes().hex())
os.kill(os.getpid(), signal.SIGKILL)  # no clean shutdown: only what was fsync'd survives
"""


@pytest.mark.slow
def test_b_killed_after_answering_refuses_the_round_when_restarted(params, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ROUND_THEN_KILL), str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr
    ka = ServerKeys.load(tmp_path / "a.key")
    kb = ServerKeys.load(tmp_path / "b.key")
    B = ServerB(type(params)(dim=4), kb, ka.public, state=tmp_path / "b-state.jsonl")
    answer = (tmp_path / "answer.hex").read_text()
    assert B.outputs[1].to_bytes().hex() == answer
    assert B.round_id == 2
    with pytest.raises(ProtocolError, match="round 1 was already answered"):
        B.aggregate(ParticipantSet(1, (1, 2, 3), b""))
    assert os.path.getsize(tmp_path / "b-state.jsonl") > 0


def test_serve_b_needs_a_state_file_or_an_explicit_no(run_main, tmp_path, params):
    # trial finding (issue 16): without --state-file a restarted B answered rounds again, and
    # nothing said so
    from janus_secagg.cli import main
    from janus_secagg.testing import Deployment

    args = [
        a for a in Deployment(tmp_path, params, 3).serve_args("b")[2:] if a != "--no-state-file"
    ]
    for extra, match in (
        ([], "needs --state-file"),
        (["--state-file", str(tmp_path / "missing" / "b.jsonl")], "does not exist"),
        (["--state-file", str(tmp_path / "b.jsonl"), "--no-state-file"], "not both"),
        (["--state-file", "/dev/null"], "not a regular file"),
    ):
        result = run_main(main, *args, *extra)
        assert result.code == 2
        assert match in result.err
    assert not (tmp_path / "missing").exists()


def test_a_without_its_record_joins_b_at_start_and_adopt_needs_the_submissions(params, ck):
    # third trial (issue 16): an A restarted without its record (or killed in a close) stayed
    # behind B for good
    from janus_secagg import Enrolment, JanusClient
    from janus_secagg.net import sync_with_b
    from nacl.signing import SigningKey

    class BAhead:
        host, port = "b.example", 1

        def open_round(self):
            return 3

    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    keys = [ClientKeys.generate() for _ in range(3)]
    e = Enrolment.create(SigningKey.generate(), params, ka.public, kb.public,
                         [k.public for k in keys])  # fmt: skip
    A, B = ServerA(params, ka, enrolment=e), ServerB(params, kb, ka.public, enrolment=e)
    for k in keys:
        to_a, to_b = JanusClient.from_enrolment(e, k, ck).prepare(np.zeros(params.dim), 1, 1)
        A.receive(to_a)
        B.receive(to_b)
    agg_b = B.aggregate(A.participants(B.bindings))
    lost = ServerA(params, ka, enrolment=e)  # A restarted: its submissions of round 1 are gone
    with pytest.raises(ProtocolError, match="no longer holds"):
        lost.adopt(agg_b)
    assert A.adopt(agg_b).ids == agg_b.ids  # the A that kept them adopts B's answer
    sync_with_b(lost, BAhead())
    assert lost.round_id == 3
