"""``python -m attenzione`` = the ``attenzione`` command (also what ``torchrun -m`` starts)."""

from attenzione.cli import main

main()
