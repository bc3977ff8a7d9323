"""``python -m attenzione`` = the ``attenzione`` command (also what ``torchrun -m`` starts)."""

from attenzione.cli import main

if __name__ == "__main__":  # not again in a worker process spawned from it
    main()
