"""The test session computes as the CLI does (attenzione.threads): OpenMP threads that sleep
at barriers rather than spin, and no more torch threads than the cores other processes leave
free — so that on a busy machine a test takes a fair share longer, not ten times (issue 53).
It must run before anything imports torch: the wait policy is read when torch loads."""

from __future__ import annotations

import sys

from attenzione.threads import apply_threads

TORCH_WAS_LOADED = "torch" in sys.modules  # then the wait policy came too late
apply_threads(None)
