"""Flower integration (spec §3, §7): ``janus_mod`` for the ClientApp, ``JanusFedAvg`` for the
ServerApp (server A); server B runs as ``janus-secagg serve-b`` operated by another party.
``janus_secagg.flower.app`` is the example app of ``examples/flower-app/``.

The package belongs to the extra ``[flower]`` (``optional-modules`` of the card): without flwr,
importing it raises an ImportError naming ``pip install 'janus-secagg[flower]'``;
``import janus_secagg`` never imports it."""

from ._arrays import model_digests
from .mod import janus_mod, make_janus_mod
from .strategy import JanusFedAvg

__all__ = ["JanusFedAvg", "janus_mod", "make_janus_mod", "model_digests"]
