"""``JanusFedAvg``: Flower's FedAvg whose aggregation is server A of Janus-style secure
aggregation (spec §3, §7). It never sees a client's model: it sums masked vectors with B,
verifies the result like any client, and publishes A's signed output with the next round's
train config so that clients verify it and rebuild the model themselves.

The module belongs to the extra ``[flower]`` (``optional-modules`` of the card): without flwr,
importing it raises an ImportError naming ``pip install 'janus-secagg[flower]'``.
"""

from typing import cast

import numpy as np

from icml25_core.extras import requires_extra

from ..client import verify_aggregate
from ..commitment import CommitmentKey
from ..keys import ClientPublicKey, ServerKeys, ServerPublicKeys
from ..messages import AggA, ToA
from ..net import Remote
from ..params import JanusParams
from ..quantize import dequantize
from ..server import ServerA
from ._arrays import unflatten
from .mod import AGG_A_KEY, PUB_KEY, TO_A_KEY

with requires_extra("janus-secagg", "flower"):
    from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord
    from flwr.serverapp.strategy import FedAvg


class JanusFedAvg(FedAvg):
    """FedAvg with Janus-style verifiable secure aggregation; this process is server A.

    Parameters
    ----------
    a_keys : ServerKeys
        Server A's keys (its public half goes to the clients and to B).
    b_address : tuple of (str, int)
        Server B's address (``janus-secagg serve-b``).
    b_pub : ServerPublicKeys
        Server B's public keys.
    params : dict, optional
        ``JanusParams`` fields other than ``dim`` (taken from the model).
    cache_dir : str, optional
        Folder of the generator cache.
    **kwargs
        Passed to ``flwr.serverapp.strategy.FedAvg`` (e.g. ``fraction_train``,
        ``min_train_nodes``).

    Notes
    -----
    The global model is the weighted mean of the clients' trained models, exact to 2^-(f+1)
    (FedAvg semantics); weights must lie within ±C. Clients are registered on first sight of
    their key (trust on first use).
    """

    def __init__(self, *, a_keys: ServerKeys, b_address, b_pub: ServerPublicKeys, params=None,
                 cache_dir=None, **kwargs):  # fmt: skip
        if not isinstance(a_keys, ServerKeys):
            raise TypeError(f"`a_keys` must be ServerKeys, got {type(a_keys).__name__}")
        if not isinstance(b_pub, ServerPublicKeys):
            raise TypeError(f"`b_pub` must be ServerPublicKeys, got {type(b_pub).__name__}")
        super().__init__(**kwargs)
        self.a_keys, self.b_pub = a_keys, b_pub
        self.b = Remote(*b_address)
        self.janus_params = dict(params or {})
        self.cache_dir = cache_dir
        self.server: ServerA | None = None
        self._template: ArrayRecord | None = None
        self._last: AggA | None = None

    def configure_train(self, server_round, arrays, config, grid):
        """FedAvg's train messages, their config carrying A's signed aggregate of the last round.

        Clients verify that aggregate (``janus.agg-a``) and rebuild the model from it themselves.
        """
        self._template = arrays
        config = ConfigRecord(dict(config))
        if self._last is not None:
            config[AGG_A_KEY] = self._last.to_bytes()
        return super().configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        """Aggregate the round as server A with server B; returns ``(arrays, metrics)``.

        Registers each replying client's key, sums the masked vectors (A) and masks (B) over
        U = U_A ∩ U_B, verifies the aggregate like any client, and returns the weighted mean model;
        ``(None, None)`` when no reply is valid.

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
        dim = int(sum(template[k].numpy().size for k in template))
        params = JanusParams(dim=dim, **self.janus_params)
        if self.server is None:
            self.server = ServerA(params, self.a_keys, round_id=server_round)
        server = self.server
        for msg in valid:
            key = msg.content["janus"][PUB_KEY]
            if not isinstance(key, bytes):
                raise TypeError(f"client key must be bytes, got {type(key).__name__}")
            server.register(ClientPublicKey.from_bytes(key))
            raw = cast(Array, msg.content["arrays"][TO_A_KEY]).numpy().tobytes()
            server.receive(ToA.from_bytes(raw))
        agg_b = self.b.aggregate(server.participants(self.b.bindings()))
        agg_a = server.aggregate(server_round)
        ck = CommitmentKey.derive(params, cache_dir=self.cache_dir)
        X = verify_aggregate(
            params, ck, self.a_keys.public, self.b_pub, agg_a, agg_b, round_id=server_round
        )
        self._last = agg_a
        mean = dequantize(X, params)
        metrics = MetricRecord({"janus-participants": agg_a.count, "num-examples": int(X[-1])})
        return unflatten(np.asarray(mean), self._template), metrics
