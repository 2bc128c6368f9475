"""Kernels of the FINOLA scan: the fused Triton step (``scan_triton``, extra ``[triton]``) beside
the PyTorch reference step in :mod:`finola.functional`."""
