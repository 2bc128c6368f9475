"""``JanusFedAvg``: Flower's FedAvg whose aggregation is server A of Janus-style secure
aggregation (spec §3, §7; issue 16). It never sees a client's model: it sums masked vectors with
B, verifies the result like any client, and publishes A's signed output with the next round's
train config so that clients verify it and rebuild the model themselves. Before the first round
it has B co-sign the initial model's digest (``ModelPin``), sent with every train message.

The module belongs to the extra ``[flower]`` (``optional-modules`` of the card): without flwr,
importing it raises an ImportError naming ``pip install 'janus-secagg[flower]'``.
"""

from logging import WARNING
from typing import cast

import numpy as np

from icml25_core.extras import requires_extra

from ..bench import default_cache_dir
from ..client import verify_aggregate, verify_model_pin
from ..commitment import CommitmentKey
from ..enrolment import Enrolment
from ..errors import ProtocolError
from ..keys import ServerKeys
from ..messages import AggA, ModelPin, ToA
from ..net import Remote
from ..quantize import dequantize
from ..server import ServerA
from ._arrays import flatten, model_digests, unflatten
from .mod import AGG_A_KEY, PIN_KEY, TO_A_KEY, _address

with requires_extra("janus-secagg", "flower"):
    from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord
    from flwr.common.logger import log
    from flwr.serverapp.strategy import FedAvg


class JanusFedAvg(FedAvg):
    """FedAvg with Janus-style verifiable secure aggregation; this process is server A.

    Parameters
    ----------
    a_keys : ServerKeys
        Server A's keys (the enrolment's ``a``).
    enrolment : Enrolment
        The operator-signed list: parameters, B's key and pinned certificate, the clients.
    b_address : tuple of (str, int) or str
        Server B's address (``janus-secagg serve-b``).
    client_cert, client_key : str, optional
        A's TLS client certificate for B, if B requires one.
    cache_dir : str, optional
        Folder of the generator cache (default ``$XDG_CACHE_HOME/janus-secagg``).
    **kwargs
        Passed to ``flwr.serverapp.strategy.FedAvg`` (e.g. ``fraction_train``,
        ``min_train_nodes``).

    Raises
    ------
    TypeError, ValueError
        On a bad argument, or `a_keys` that are not the enrolment's server A.

    Notes
    -----
    The global model is the weighted mean of the clients' trained models, exact to 2^-(f+1)
    (FedAvg semantics); weights must lie within ±C. A reply that the protocol refuses (a key
    not enrolled, a bad signature) is left out of the round with a warning.
    """

    def __init__(self, *, a_keys: ServerKeys, enrolment: Enrolment, b_address, client_cert=None,
                 client_key=None, cache_dir=None, **kwargs):  # fmt: skip
        if not isinstance(a_keys, ServerKeys):
            raise TypeError(f"`a_keys` must be ServerKeys, got {type(a_keys).__name__}")
        if not isinstance(enrolment, Enrolment):
            raise TypeError(f"`enrolment` must be an Enrolment, got {type(enrolment).__name__}")
        super().__init__(**kwargs)
        self.server = ServerA(enrolment.params, a_keys, enrolment=enrolment)
        self.enrolment, self.a_keys = enrolment, a_keys
        host, port = _address(b_address, "b_address")
        self.b = Remote.to_server(enrolment, "b", host, port, client_cert=client_cert,
                                  client_key=client_key)  # fmt: skip
        self.cache_dir = cache_dir or default_cache_dir()
        self._template: ArrayRecord | None = None
        self._pin: ModelPin | None = None
        self._last: AggA | None = None

    def _pin_model(self, server_round: int, arrays) -> ModelPin:
        """Sign the initial model's digests and have B co-sign them (once per deployment)."""
        size = int(flatten(arrays).size)
        if size != self.enrolment.params.dim:
            raise ValueError(f"the model has {size} values, the enrolment's JanusParams.dim is "
                             f"{self.enrolment.params.dim}")  # fmt: skip
        layout, model = model_digests(arrays)
        pin = self.b.pin_model(self.server.sign_model(layout, model, server_round))
        e = self.enrolment
        verify_model_pin(e.params, e.a, e.b, pin, layout, model)
        return pin

    def configure_train(self, server_round, arrays, config, grid):
        """FedAvg's train messages; their config carries the model pin both servers signed and,
        after the first round, A's signed aggregate of the last round.

        Clients verify both (``janus.model-pin``, ``janus.agg-a``) and rebuild the model from
        the aggregate themselves.
        """
        if self._pin is None:
            self._pin = self._pin_model(server_round, arrays)
            self.server.round_id = server_round
        self._template = arrays
        config = ConfigRecord(dict(config))
        config[PIN_KEY] = self._pin.to_bytes()
        if self._last is not None:
            config[AGG_A_KEY] = self._last.to_bytes()
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        """Aggregate the round as server A with server B; returns ``(arrays, metrics)``.

        Sums the masked vectors (A) and masks (B) over U = U_A ∩ U_B, verifies the aggregate
        like any client, and returns the weighted mean model; ``(None, None)`` when no reply
        is valid.

        Raises
        ------
        VerificationError
            If the aggregate does not open (a cheating B).
        ProtocolError
            If fewer than ``min_clients`` clients remain in U.
        """
        valid, _ = self._check_and_log_replies(replies, is_train=True, validate=False)
        if not valid:
            return None, None
        template = self._template
        assert template is not None  # configure_train ran first
        server = self.server
        for msg in valid:
            try:
                raw = cast(Array, msg.content["arrays"][TO_A_KEY]).numpy().tobytes()
                server.receive(ToA.from_bytes(raw))
            except (ProtocolError, ValueError, KeyError) as error:
                log(WARNING, "janus: reply of node %s left out: %s", msg.metadata.src_node_id,
                    error)  # fmt: skip
        bindings = self.b.bindings(server.authorize("bindings"))
        agg_b = self.b.aggregate(server.participants(bindings))
        agg_a = server.aggregate(server_round)
        params = self.enrolment.params
        ck = CommitmentKey.derive(params, cache_dir=self.cache_dir)
        X = verify_aggregate(
            params, ck, self.a_keys.public, self.enrolment.b, agg_a, agg_b,
            round_id=server_round, enrolled=self.enrolment.client_ids,
        )  # fmt: skip
        self._last = agg_a
        mean = dequantize(X, params)
        metrics = MetricRecord({"janus-participants": agg_a.count, "num-examples": int(X[-1])})
        return unflatten(np.asarray(mean), template), metrics
