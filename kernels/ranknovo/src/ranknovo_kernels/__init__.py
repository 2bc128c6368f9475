"""Native batched PMD / RMD of ranknovo (C++ with OpenMP, pybind11).

``pmd_batch(q_ids, q_len, t_ids, t_len, masses, unit)`` and ``rmd_batch(...)``; see README.md.
The library ``ranknovo`` validates the inputs before calling these functions.
"""

from ._C import num_threads, pmd_batch, rmd_batch

__all__ = ["num_threads", "pmd_batch", "rmd_batch"]
