"""PMD / RMD kernels: the Python reference (:mod:`.pmd_ref`), the numpy batched path
(:mod:`.pmd_numpy`), the optional native package ``ranknovo_kernels`` and the tied row attention
(:mod:`.row_attention`)."""

from __future__ import annotations

from types import ModuleType

__all__ = ["native_module"]


def native_module() -> ModuleType | None:
    """The native package ``ranknovo_kernels`` (``kernels/ranknovo``), or None when absent."""
    try:
        import ranknovo_kernels
    except ImportError:
        return None
    return ranknovo_kernels
