"""How many threads a command computes with: what the machine can spare, not one per core.

torch starts one OpenMP thread per core, and every operator ends at a barrier where the
threads wait for one another. On a machine whose cores other processes keep busy, one of
those threads is often parked by the scheduler, and the others wait for it at every barrier:
on a 2-core machine with both cores busy, 60 training steps of the tests' tiny model took
108.8 s at 2 threads against 2.1 s at 1 (issue 53). Two levers, both set here:

* **the count** — :func:`default_threads` counts the cores this process may use that other
  processes are not running on now (:func:`running_elsewhere`: the kernel's count of runnable
  processes, not the load average, which lags a minute behind and counted the previous
  command of a script as busy), at least one; ``OMP_NUM_THREADS`` (what ``torchrun`` sets for
  several processes a machine, or a user's explicit choice) wins;
* **the wait** — ``OMP_WAIT_POLICY=PASSIVE`` makes a thread that waits at a barrier sleep
  instead of spinning on a core another process needs. It is read once, when torch loads
  OpenMP, so :func:`apply_threads` sets it (unless the environment already says) before it
  first imports torch — but only where it pays: when there are more threads than free cores,
  or for a long-running process (``serve``) whose machine may get busy later. Measured with
  one core of two kept busy by a training run: 60 tiny steps at 2 threads took 2.4–14.5 s
  without it and 0.45–0.98 s with it; on an idle machine it costs: 30 sentences one at a time
  at 2 threads took 15.5 s with it against 10.6–10.9 s spinning.

Every command that computes calls :func:`apply_threads` with its ``--threads`` (None: the
default) before anything imports torch, and so does the trainer (``num_threads``); the
option itself is :func:`attenzione.cli.threads.threads_option`.
"""

from __future__ import annotations

import os
import sys
import time

_TORCH_DEFAULT: int | None = None  # torch's own count (one per physical core), read once


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def running_elsewhere() -> int | None:
    """The processes running or ready to run now besides this one: the kernel's count of
    runnable tasks (``/proc/loadavg``), the least of five samples over ~40 ms so that a
    passing process (a shell between commands) is not counted; None where there is none."""
    counts = []
    try:
        for _ in range(5):
            with open("/proc/loadavg", encoding="ascii") as fh:
                counts.append(int(fh.read().split()[3].split("/")[0]) - 1)
            time.sleep(0.01)
    except (OSError, ValueError, IndexError):
        return None
    return max(0, min(counts))


def free_cores() -> int:
    """The usable cores other processes are not running on now (at least one); where the
    system has no runnable count, the 1-minute load average, rounded (no load average: all)."""
    cores = usable_cores()
    busy = running_elsewhere()
    if busy is None:
        try:
            busy = int(os.getloadavg()[0] + 0.5)
        except (OSError, AttributeError):
            busy = 0
    return max(1, min(cores, cores - busy))


def _omp_threads() -> int | None:
    """``OMP_NUM_THREADS`` when it names a count (torchrun's, or the user's, choice)."""
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(asked) if asked.isdigit() and int(asked) >= 1 else None


def default_threads() -> int:
    """The threads to compute with when none are asked: ``OMP_NUM_THREADS`` if set, else
    :func:`free_cores`."""
    return _omp_threads() or free_cores()


def passive_wait() -> bool:
    """Make OpenMP threads sleep, not spin, while they wait (``OMP_WAIT_POLICY=PASSIVE``),
    unless the environment already chooses; True if it is in time (torch not yet loaded)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return "torch" not in sys.modules


def apply_threads(n: int | None, *, long_running: bool = False) -> int:
    """Compute with ``n`` torch threads (None: :func:`default_threads`, at most torch's own
    count); returns the count. First sets the wait policy (:func:`passive_wait`) if there are
    more threads than free cores, or for a ``long_running`` process."""
    global _TORCH_DEFAULT
    free = free_cores()  # sampled once: it takes ~40 ms
    wanted = n if n is not None else (_omp_threads() or free)
    if long_running or wanted > free:
        passive_wait()
    import torch

    if _TORCH_DEFAULT is None:
        _TORCH_DEFAULT = torch.get_num_threads()
    threads = n if n is not None else min(wanted, _TORCH_DEFAULT)
    if threads < 1:
        raise ValueError(f"--threads must be >= 1, got {threads}")
    torch.set_num_threads(threads)
    return threads


def apply_blas_threads(n: int | None) -> int:
    """Compute with ``n`` threads in numpy's BLAS (None: :func:`default_threads`), for the
    commands that compute with numpy, not torch (``embeddings``). The BLAS reads its count
    when numpy loads it: once numpy is imported this changes nothing."""
    threads = n if n is not None else default_threads()
    if "numpy" not in sys.modules:
        for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(threads)
    return threads
