"""Kernels of leaps-ctmc: each op's readable reference beside its fast forms."""
