"""``python -m attenzione`` = the ``attenzione`` command (also what ``torchrun -m`` starts)."""

import sys

try:
    from attenzione.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line is imported: one line, as later
    sys.stderr.write("interrupted\n")
    raise SystemExit(130) from None

if __name__ == "__main__":  # not again in a worker process spawned from it
    main()
