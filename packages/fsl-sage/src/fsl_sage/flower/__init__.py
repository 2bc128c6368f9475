"""FSL-SAGE on Flower (needs ``pip install fsl-sage[flower]``; simulation: ``[simulation]``).

The ServerApp hosts the S-server and the F-server and drives the protocol with its own
``@app.main()`` loop on ``grid.send_and_receive`` (probe / train / evaluate messages), not a
Strategy; the ClientApp keeps the client model, its Adam state and the aux model in
``context.state``. Build both with :func:`make_server_app` / :func:`make_client_app`, or point
``flwr run`` at ``fsl_sage.flower.server_app:app`` and ``fsl_sage.flower.client_app:app``.

This package and :mod:`~fsl_sage.flower.config` import without flwr; ``records``,
``client_app`` and ``server_app`` belong to the extra ``[flower]`` and ``simulation`` to
``[simulation]`` (``optional-modules`` of the card): they import flwr at their top and, without
it, raise an ImportError naming the ``pip install`` command.
"""

from .config import FlowerConfig, build_split, load_partition, load_test

__all__ = ["FlowerConfig", "build_split", "load_partition", "load_test"]
