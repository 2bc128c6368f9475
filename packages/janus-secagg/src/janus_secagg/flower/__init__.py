"""Flower integration (spec §3, §7): ``janus_mod`` for the ClientApp, ``JanusFedAvg`` for the
ServerApp (server A); server B runs as ``janus-secagg serve-b`` operated by another party.
Needs the ``[flower]`` extra (``flwr``), imported when first used."""

from .mod import janus_mod, make_janus_mod

__all__ = ["JanusFedAvg", "janus_mod", "make_janus_mod"]


def __getattr__(name: str):
    if name == "JanusFedAvg":
        from .strategy import _strategy_class

        return _strategy_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
