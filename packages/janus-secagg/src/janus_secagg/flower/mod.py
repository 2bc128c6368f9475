"""``janus_mod``: a Flower ClientApp mod that runs the client's side of Janus-style secure
aggregation around the train handler (spec §3, §7; issue 16).

Verification cannot be skipped. Every train message must carry the first-round model pin that
both servers signed (``janus.model-pin``): in that round the received model must hash to it, in
every round its layout must. From the next round on, the message must carry A's signed aggregate
of the previous round (``janus.agg-a``); the mod fetches B's, verifies both (refusing a U that
leaves this node out after it submitted) and trains on the verified aggregate, never on the
arrays A sent. A node refuses to train otherwise (``UnverifiedModelError``, ``ExcludedError``,
``VerificationError``). After training it encodes the trained model (weights within ±C) with
weight ``num-examples``, sends ``ToB`` to B and returns ``ToA`` to A in place of the arrays.

The trust anchors come from the node's own configuration, never from the run config (which the
party running the ServerApp controls): the operator's public key, the enrolment file (servers'
keys, B's pinned TLS certificate, parameters), the node's key file and B's address.
"""

import functools

import numpy as np

from icml25_core.extras import requires_extra

from ..bench import default_cache_dir
from ..client import JanusClient, verify_model_pin
from ..commitment import CommitmentKey
from ..enrolment import Enrolment
from ..errors import UnverifiedModelError
from ..keys import ClientKeys
from ..messages import AggA, AggB, ModelPin
from ..net import Remote
from ..params import JanusParams
from ._arrays import flatten, model_digests, unflatten

with requires_extra("janus-secagg", "flower"):
    from flwr.app import Array, ArrayRecord, ConfigRecord, MessageType

AGG_A_KEY = "janus.agg-a"
PIN_KEY = "janus.model-pin"
TO_A_KEY = "janus.to-a"
_STATE = "janus"  # context.state record: the last round this node submitted


@functools.lru_cache(maxsize=4)
def _commitment_key(params: JanusParams, cache_dir) -> CommitmentKey:
    return CommitmentKey.derive(params, cache_dir=cache_dir)


def _previous_aggregate(client, config, b: Remote, round_id: int, submitted: bool):
    """The verified mean of round `round_id` - 1 (raises if it is missing or does not verify)."""
    if AGG_A_KEY not in config:
        raise UnverifiedModelError(
            f"round {round_id}: the train message holds no aggregate of round {round_id - 1} "
            f"(`{AGG_A_KEY}`): this node trains only on a model it verified"
        )
    agg_a = AggA.from_bytes(config[AGG_A_KEY])
    agg_b = b.fetch(agg_a.round_id, AggB)
    return client.finalize(agg_a, agg_b, round_id - 1, submitted=submitted)


def _train(msg, context, call_next, settings: dict):
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, context)
    enrolment: Enrolment = settings["enrolment"]
    keys = settings["keys"](context) if callable(settings["keys"]) else settings["keys"]
    b: Remote = settings["b"]
    template = msg.content["arrays"]
    config = msg.content["config"]
    round_id = int(config["server-round"])
    params = enrolment.params
    size = int(flatten(template).size)
    if size != params.dim:
        raise ValueError(f"the model has {size} values, the enrolment's JanusParams.dim is "
                         f"{params.dim}")  # fmt: skip
    if PIN_KEY not in config:
        raise UnverifiedModelError(f"the train message holds no model pin (`{PIN_KEY}`)")
    pin = ModelPin.from_bytes(config[PIN_KEY])
    if round_id < pin.round_id:
        raise UnverifiedModelError(f"round {round_id} precedes the pinned round {pin.round_id}")
    layout, model = model_digests(template)
    verify_model_pin(params, enrolment.a, enrolment.b, pin, layout,
                     model if round_id == pin.round_id else None)  # fmt: skip
    ck = _commitment_key(params, settings["cache_dir"])
    client = JanusClient.from_enrolment(enrolment, keys, ck)
    if round_id > pin.round_id:
        state = context.state.get(_STATE)
        submitted = state is not None and int(state["submitted"]) == round_id - 1
        mean = _previous_aggregate(client, config, b, round_id, submitted)
        msg.content["arrays"] = unflatten(mean, template)
    reply = call_next(msg, context)
    if reply.has_error():
        return reply
    trained = flatten(reply.content["arrays"])
    weight = int(reply.content["metrics"]["num-examples"])
    to_a, to_b = client.prepare(trained, weight, round_id)
    b.submit(to_b)
    context.state[_STATE] = ConfigRecord({"submitted": round_id})
    reply.content["arrays"] = ArrayRecord(
        {TO_A_KEY: Array(np.frombuffer(to_a.to_bytes(), dtype=np.uint8).copy())}
    )
    return reply


def _address(value, name: str) -> tuple[str, int]:
    if isinstance(value, str):
        value = tuple(value.rpartition(":")[::2])
    try:
        host, port_text = value
        port = int(port_text)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be (host, port) or 'host:port', got {value!r:.60}"
        ) from None
    if not host or not 1 <= port <= 65535:
        raise ValueError(f"`{name}` must be (host, port) with port in [1, 65535], got {value!r}")
    return str(host), port


def make_janus_mod(b_address, enrolment: Enrolment, keys, *, client_cert=None, client_key=None,
                   cache_dir=None):  # fmt: skip
    """A ``janus_mod`` with explicit settings (simulation, or a node configured in code).

    Parameters
    ----------
    b_address : tuple of (str, int) or str
        Server B's address, ``(host, port)`` or ``"host:port"``.
    enrolment : Enrolment
        The operator-signed list, loaded with ``Enrolment.load(path, operator)``.
    keys : ClientKeys or callable
        This node's enrolled key, or ``keys(context) -> ClientKeys`` (one mod for the nodes of
        a simulation, e.g. by ``context.node_config["partition-id"]``).
    client_cert, client_key : str, optional
        PEM files of this node's TLS client certificate, if B requires one.
    cache_dir : str, optional
        Folder of the generator cache (default ``$XDG_CACHE_HOME/janus-secagg``).

    Raises
    ------
    TypeError, ValueError
        On a bad argument.
    """
    if not isinstance(enrolment, Enrolment):
        raise TypeError(f"`enrolment` must be an Enrolment, got {type(enrolment).__name__}")
    if not (isinstance(keys, ClientKeys) or callable(keys)):
        raise TypeError(f"`keys` must be ClientKeys or a callable, got {type(keys).__name__}")
    host, port = _address(b_address, "b_address")
    settings = {
        "enrolment": enrolment, "keys": keys, "cache_dir": cache_dir or default_cache_dir(),
        "b": Remote.to_server(enrolment, "b", host, port, client_cert=client_cert,
                              client_key=client_key),
    }  # fmt: skip

    def mod(msg, context, call_next):
        return _train(msg, context, call_next, settings)

    return mod


@functools.lru_cache(maxsize=8)
def _node_settings(items: tuple) -> dict:
    nc = dict(items)
    missing = [k for k in ("janus-enrolment", "janus-operator", "janus-key-file",
                           "janus-b-address") if k not in nc]  # fmt: skip
    if missing:
        raise ValueError(f"janus_mod: the node config lacks {', '.join(missing)} (set them "
                         "with flower-supernode --node-config)")  # fmt: skip
    enrolment = Enrolment.load(nc["janus-enrolment"], str(nc["janus-operator"]))
    host, port = _address(str(nc["janus-b-address"]), "janus-b-address")
    return {
        "enrolment": enrolment,
        "keys": ClientKeys.load(nc["janus-key-file"], name="janus-key-file"),
        "cache_dir": str(nc.get("janus-cache-dir") or default_cache_dir()),
        "b": Remote.to_server(enrolment, "b", host, port,
                              client_cert=nc.get("janus-tls-cert") or None,
                              client_key=nc.get("janus-tls-key") or None),
    }  # fmt: skip


def janus_mod(msg, context, call_next):
    """Flower ClientApp mod; reads its settings from the node config.

    Node-config keys (``flower-supernode --node-config``): ``janus-enrolment`` (path),
    ``janus-operator`` (the operator's verify key, hex), ``janus-key-file`` (this node's key,
    ``janus-secagg keygen --role client``), ``janus-b-address`` (``host:port``); optional
    ``janus-tls-cert`` / ``janus-tls-key`` (a client certificate for B) and
    ``janus-cache-dir``. Use ``make_janus_mod`` where there is no node config.

    Raises
    ------
    UnverifiedModelError
        If the model pin or the previous round's aggregate is missing, or the model is not
        the pinned one (the node then refuses to train).
    ExcludedError
        If the previous round's U leaves out this node although it submitted.
    VerificationError
        If the previous round's aggregate does not verify.
    EnrolmentError, ValueError
        If the node config is incomplete or the enrolment is not the operator's.
    """
    items = tuple(sorted((k, v) for k, v in context.node_config.items() if k.startswith("janus-")))
    return _train(msg, context, call_next, _node_settings(items))
