"""Kernels of reframe-cache: the fused SMAPE reduction (``smape_triton``, extra ``[triton]``).

The readable reference is :func:`reframe_cache.metrics.naive_smape`; the public op is
:func:`reframe_cache.metrics.smape`, which validates and dispatches.
"""
