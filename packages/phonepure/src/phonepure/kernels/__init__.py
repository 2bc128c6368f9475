"""Triton kernels (extra ``[triton]``); their PyTorch references live beside their callers."""
