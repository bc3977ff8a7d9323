"""``--threads N``, the option of every command that computes; the policy behind it is
:mod:`attenzione.threads`."""

from __future__ import annotations

from typing import Any

import typer

from attenzione.cli.common import at_least
from attenzione.threads import apply_blas_threads, apply_threads, default_threads

__all__ = ["apply_blas_threads", "apply_threads", "default_threads", "threads_option"]


def threads_option() -> Any:
    """``--threads N``, as every command that computes takes it."""
    return typer.Option(
        None,
        "--threads",
        help="Threads to compute with (default: the cores other processes leave free, at "
        "least 1; OMP_NUM_THREADS if set).",
        callback=at_least(1),
        show_default=False,
    )
