"""Shared helpers for the CLI: turning user mistakes into one clear line, not a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

import typer

_F = TypeVar("_F", bound=Callable[..., object])


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (no traceback)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Report the errors a user can cause (bad file, bad value) as one line on stderr.

    ValueError, FileNotFoundError and friends are what our library raises for bad input; they
    carry a message written for the user, so the CLI prints it and exits with status 2.
    """
    try:
        yield
    except (ValueError, FileNotFoundError, IsADirectoryError, PermissionError, KeyError) as exc:
        message = str(exc) if not isinstance(exc, KeyError) else f"unknown key {exc}"
        fail(message)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
