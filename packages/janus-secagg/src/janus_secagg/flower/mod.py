"""``janus_mod``: a Flower ClientApp mod that runs the client's side of Janus-style secure
aggregation around the train handler (spec §3, §7).

Before training it verifies the previous round's aggregate (A's ``AggA`` in the train config,
B's ``AggB`` fetched from B) and rebuilds the global model from it, so server A cannot hand
clients a model other than the verified aggregate (model-inconsistency attack). After training it
encodes the trained model (weights within ±C) with weight ``num-examples``, sends ``ToB`` to B
over TCP and returns ``ToA`` (and its public key) to A in place of the plaintext arrays.
"""

import functools

import numpy as np

from icml25_core.extras import requires_extra

from ..client import JanusClient
from ..commitment import CommitmentKey
from ..keys import ClientKeys, ServerPublicKeys
from ..messages import AggA, AggB
from ..net import Remote
from ..params import JanusParams
from ._arrays import flatten, unflatten

with requires_extra("janus-secagg", "flower"):
    from flwr.app import Array, ArrayRecord, ConfigRecord, MessageType

AGG_A_KEY = "janus.agg-a"
TO_A_KEY = "janus.to-a"
PUB_KEY = "janus.client-pub"
_STATE = "janus"


@functools.lru_cache(maxsize=4)
def _commitment_key(params: JanusParams, cache_dir) -> CommitmentKey:
    return CommitmentKey.derive(params, cache_dir=cache_dir)


def _client_keys(context, b: Remote) -> ClientKeys:
    """The node's Ed25519 key, kept in ``context.state``; registered with B on first use."""
    from nacl.signing import SigningKey

    state = context.state.get(_STATE)
    if state is None:
        keys = ClientKeys.generate()
        b.register(keys.public)
        context.state[_STATE] = ConfigRecord({"seed": bytes(keys.signing)})
        return keys
    return ClientKeys(SigningKey(state["seed"]))


def _train(msg, context, call_next, settings: dict):
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, context)
    b = Remote(settings["b_host"], settings["b_port"])
    template = msg.content["arrays"]
    config = msg.content["config"]
    params = JanusParams(dim=int(flatten(template).size), **settings.get("params", {}))
    ck = _commitment_key(params, settings.get("cache_dir"))
    client = JanusClient(params, _client_keys(context, b), settings["a_pub"], settings["b_pub"], ck)
    if AGG_A_KEY in config:
        agg_a = AggA.from_bytes(config[AGG_A_KEY])
        agg_b = b.fetch(agg_a.round_id, AggB)
        previous = int(config["server-round"]) - 1  # A may not replay an older aggregate
        msg.content["arrays"] = unflatten(client.finalize(agg_a, agg_b, previous), template)
    reply = call_next(msg, context)
    if reply.has_error():
        return reply
    trained = flatten(reply.content["arrays"])
    weight = int(reply.content["metrics"]["num-examples"])
    to_a, to_b = client.prepare(trained, weight, int(config["server-round"]))
    b.submit(to_b)
    reply.content["arrays"] = ArrayRecord(
        {TO_A_KEY: Array(np.frombuffer(to_a.to_bytes(), dtype=np.uint8).copy())}
    )
    reply.content["janus"] = ConfigRecord({PUB_KEY: client.keys.public.to_bytes()})
    return reply


def make_janus_mod(b_host: str, b_port: int, a_pub, b_pub, params=None, cache_dir=None):
    """A ``janus_mod`` with explicit settings (simulation, or a node's own configuration).

    Parameters
    ----------
    b_host, b_port : str, int
        Server B's address.
    a_pub, b_pub : ServerPublicKeys or bytes
        Server A's and B's public keys (``ServerPublicKeys.to_bytes()`` accepted).
    params : dict, optional
        ``JanusParams`` fields other than ``dim`` (taken from the model), e.g. ``{"clip": 8.0}``.
    cache_dir : str, optional
        Folder of the generator cache.
    """

    def as_keys(value, name):
        if isinstance(value, bytes | bytearray):
            return ServerPublicKeys.from_bytes(bytes(value))
        if not isinstance(value, ServerPublicKeys):
            raise TypeError(f"`{name}` must be ServerPublicKeys or bytes")
        return value

    try:
        port = int(b_port)
    except (TypeError, ValueError):
        raise ValueError(f"`b_port` must be a port number, got {b_port!r:.40}") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"`b_port` must be in [1, 65535], got {port}")
    settings = {
        "b_host": str(b_host), "b_port": port, "a_pub": as_keys(a_pub, "a_pub"),
        "b_pub": as_keys(b_pub, "b_pub"), "params": dict(params or {}), "cache_dir": cache_dir,
    }  # fmt: skip

    def mod(msg, context, call_next):
        return _train(msg, context, call_next, settings)

    return mod


def janus_mod(msg, context, call_next):
    """Flower ClientApp mod; reads B's address and the servers' keys from the run config.

    Run-config keys: ``janus-b-host``, ``janus-b-port``, ``janus-a-pub`` and ``janus-b-pub``
    (``ServerPublicKeys.to_bytes().hex()``). Use ``make_janus_mod`` where there is no run
    config (``run_simulation``).

    Raises
    ------
    VerificationError
        If the previous round's aggregate does not verify (the node then refuses to train).
    """
    rc = context.run_config
    settings = {
        "b_host": str(rc["janus-b-host"]), "b_port": int(rc["janus-b-port"]),
        "a_pub": ServerPublicKeys.from_bytes(bytes.fromhex(str(rc["janus-a-pub"]))),
        "b_pub": ServerPublicKeys.from_bytes(bytes.fromhex(str(rc["janus-b-pub"]))),
    }  # fmt: skip
    return _train(msg, context, call_next, settings)
