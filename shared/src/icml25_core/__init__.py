"""icml25-core: the thin numpy-only core shared by the icml25 libraries."""

from icml25_core._version import __version__
from icml25_core.backend import BACKEND_ENV, BACKENDS, available_backends, select_backend
from icml25_core.checkpoint import ResultStore, source_fingerprint
from icml25_core.datasets import fashion_mnist, read_idx
from icml25_core.extras import missing_extra_message, requires_extra
from icml25_core.processes import (
    end_process,
    free_port,
    port_listening,
    process_group,
    wait_until,
)
from icml25_core.progress import progress
from icml25_core.report import Claim, Report, Verdict, load_reports, summary_table
from icml25_core.resources import data_path
from icml25_core.seeding import as_generator, jax_key, seed_everything, spawn_seeds
from icml25_core.validation import (
    check_array,
    check_choice,
    check_consistent_length,
    check_device,
    check_scalar,
    check_tensor,
)

__all__ = [
    "__version__",
    # seeding
    "as_generator",
    "jax_key",
    "seed_everything",
    "spawn_seeds",
    # kernel backends
    "BACKENDS",
    "BACKEND_ENV",
    "available_backends",
    "select_backend",
    # validation
    "check_array",
    "check_choice",
    "check_consistent_length",
    "check_scalar",
    "check_device",
    "check_tensor",
    # reproduce reports
    "Claim",
    "Report",
    "Verdict",
    "load_reports",
    "summary_table",
    # progress and resumable runs
    "progress",
    "ResultStore",
    "source_fingerprint",
    # multi-process runs
    "end_process",
    "free_port",
    "port_listening",
    "process_group",
    "wait_until",
    # modules that belong to an optional extra
    "missing_extra_message",
    "requires_extra",
    # bundled data and datasets
    "data_path",
    "fashion_mnist",
    "read_idx",
]
