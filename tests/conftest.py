"""The test session computes as the CLI does (attenzione.threads): OpenMP threads that sleep
at barriers rather than spin, and no more torch threads than the cores other processes leave
free — so that on a busy machine a test takes a fair share longer, not ten times (issue 53).
It must run before anything imports torch: the wait policy is read when torch loads."""

from __future__ import annotations

import sys

from attenzione.threads import apply_threads

TORCH_WAS_LOADED = "torch" in sys.modules  # then the wait policy came too late
apply_threads(None)

# The user model folder (attenzione.translator.registry.default_user_dir) of the test session is
# its own, empty: models a developer installed never change what the tests see, and the tests'
# installs never land in theirs. (Test servers and CLI runs inherit it.)
import atexit  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

os.environ["XDG_DATA_HOME"] = _DATA_HOME = tempfile.mkdtemp(prefix="attenzione-test-data-")
atexit.register(shutil.rmtree, _DATA_HOME, ignore_errors=True)  # the session's own folder
os.environ.pop("ATTENZIONE_MODELS", None)
