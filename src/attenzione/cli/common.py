"""Shared helpers for the CLI: turning user mistakes into one clear line, not a traceback.

Three kinds of mistakes are caught as early as possible, each as ``error: …`` on stderr and
exit status 2:

* a numeric option out of range — checked where it is parsed, by the option's callback
  (:func:`at_least`, :func:`in_range`), before anything is loaded;
* input that is not UTF-8 text (an argument, stdin, a file) — :func:`read_text` names
  the file and line;
* an output that cannot be written (missing or read-only directory, a directory where a file
  is wanted) — :func:`check_writable` runs before the work, not after an hour of it;

and everything our library raises for bad input (``ValueError``, missing files …) is printed
by :func:`user_errors` as the one line it was written to be.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import typer

Callback = Callable[[typer.Context, typer.CallbackParam, Any], Any]


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
    except (
        ValueError,  # includes UnicodeDecodeError
        FileNotFoundError,
        FileExistsError,
        IsADirectoryError,
        NotADirectoryError,
        PermissionError,
        KeyError,
    ) as exc:
        message = str(exc) if not isinstance(exc, KeyError) else f"unknown key {exc}"
        fail(message)
    except OSError as exc:  # the system's word: disk full, a file too large, read-only, …
        fail(os_error_message(exc))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (cli/output.py)
        typer.echo("interrupted", err=True)
        sys.exit(128 + getattr(exc, "signum", 2))  # the shell's status for the signal


def os_error_message(exc: OSError) -> str:
    """One line for an error the system reported (``No space left on device``), naming the
    file it was about when it says."""
    what = exc.strerror or str(exc) or type(exc).__name__
    return f"{exc.filename}: {what}" if exc.filename else what


def _name(param: typer.CallbackParam) -> str:
    return param.opts[0] if param.opts else str(param.name)  # the flag as the help lists it


def at_least(minimum: float) -> Callback:
    """An option callback: the value (when given) must be >= ``minimum``."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is not None and not ctx.resilient_parsing and value < minimum:
            fail(f"{_name(param)} must be >= {minimum:g}, got {value:g}")
        return value

    return check


def language_code(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """An option callback: a language code such as ``en`` or ``pt-BR`` (letters, "-", "_")."""
    if value is not None and not ctx.resilient_parsing:
        if not re.fullmatch(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*", value):
            fail(f"{_name(param)} must be a language code such as en or it, got {value!r}")
        value = value.lower()
    return value


def in_range(low: float, high: float, *, low_open: bool = False) -> Callback:
    """An option callback: ``low <= value <= high`` (``low < value`` with ``low_open``)."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is None or ctx.resilient_parsing:
            return value
        ok = (value > low if low_open else value >= low) and value <= high
        if not ok:
            bracket = "(" if low_open else "["
            fail(f"{_name(param)} must be in {bracket}{low:g}, {high:g}], got {value:g}")
        return value

    return check


def no_step_option() -> Any:
    """``--no-step NAME``, as ``translate``, ``evaluate`` and ``serve`` take it."""
    return typer.Option(
        None,
        "--no-step",
        help="Switch off a text step or a ranking term by name (repeatable): "
        + ", ".join(_step_names())
        + ". See docs/pipeline.md.",
        show_default=False,
    )


def tag_option() -> Any:
    """``--tag NAME``: the corpus tag to translate with (a model trained with tags)."""
    return typer.Option(
        None,
        "--tag",
        help="Read the input as the corpus tagged NAME was read in training, and so translate "
        "into its kind of text (a model trained with --data PATH:WEIGHT:TAG; its info.json "
        "lists its tags). Default: the model's default_tag, usually none.",
        show_default=False,
    )


def raw_option() -> Any:
    """``--raw``: the model's own output, no text step and no ranking term."""
    return typer.Option(
        False,
        "--raw",
        help="The model alone: no text step and no ranking term (beam search ranks by the "
        "model's length-normalised log-prob).",
    )


def _step_names() -> list[str]:
    """Every text step's name and every switch of the search's registry, as --no-step takes
    them (read without importing torch)."""
    return [*STEP_NAMES, *term_names()]


def term_names() -> list[str]:
    """The switches of the search's registry (its ranking terms and ``doubled-marks``), read
    from :mod:`attenzione.search.registry`, which imports no torch."""
    from attenzione.search.registry import switches

    return list(switches())


# kept here (and checked against attenzione.pipeline by a test) so that --help does not import
# torch
STEP_NAMES = (
    "normalize", "carry", "capitals", "title-case", "split", "continuation", "number-format",
    "numbers", "inline-tags", "names",
)  # fmt: skip


def check_steps(no_step: list[str] | None, raw: bool) -> list[str]:
    """The names given to ``--no-step``, checked (before the model is loaded)."""
    names = list(no_step or [])
    terms = term_names()
    unknown = [n for n in names if n not in STEP_NAMES and n not in terms]
    if unknown:
        fail(
            f"--no-step {unknown[0]}: not a text step or a ranking term; the steps are "
            f"{', '.join(STEP_NAMES)}; the terms are {', '.join(terms)}"
        )
    if raw and names:
        fail("--raw already switches every step off: drop --no-step")
    return names


def pipeline_of(translator: Any, no_step: list[str], raw: bool) -> tuple[Any, Any]:
    """The (pipeline, ranking terms) ``--no-step`` and ``--raw`` ask of a loaded translator."""
    from attenzione.pipeline import Pipeline
    from attenzione.search.registry import Terms

    if raw:
        return Pipeline.build(()), Terms.none()
    steps = [n for n in translator.pipeline.names if n not in no_step]
    terms = translator.terms.without(n for n in no_step if n in translator.terms)
    return Pipeline.build(steps), terms


def number_format_option() -> Any:
    """``--number-format``, as ``translate``, ``evaluate`` and ``serve`` take it."""
    from attenzione.config import NUMBER_FORMATS

    choices = ("model", *NUMBER_FORMATS)

    def check(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
        if not ctx.resilient_parsing and value not in choices:
            fail(f"{_name(param)} must be one of {', '.join(choices)}, not {value!r}")
        return value

    return typer.Option(
        "model",
        help="How to write the source's numbers: comma (1.234,5: Italian), point (1,234.5: "
        "English), keep (as the model wrote them), or model (what its training targets did; "
        "the shipped model: comma). Off with --no-step number-format.",
        callback=check,
    )


def shortlist_option() -> Any:
    """``--shortlist/--no-shortlist``, as ``translate``, ``evaluate`` and ``serve`` take it:
    whether the translator uses its model's vocabulary shortlist (``Translator.use_shortlist``;
    a model without one decodes the same either way)."""
    return typer.Option(
        True,
        "--shortlist/--no-shortlist",
        help="Score only the target pieces the model's vocabulary shortlist lists for the "
        "sources, if the model has one (faster, approximate).",
    )


def check_number_flags(number_format: str, no_step: list[str], raw: bool) -> None:
    """Asking for a number format with the number-format step off is an error (before the
    model is loaded)."""
    if number_format != "model" and (raw or "number-format" in no_step):
        fail("--number-format is the number-format step's: drop it or keep the step on")


def number_format_of(number_format: str) -> str | None:
    """What ``--number-format`` gives the translator to load (None for ``model``: its own)."""
    return None if number_format == "model" else number_format


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the user set parameter ``name`` (on the command line or the environment)."""
    source = ctx.get_parameter_source(name)  # typer may carry its own copy of click's enum
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def check_argument_text(texts: list[str]) -> None:
    """Arguments that were not UTF-8 reach Python with lone surrogates: say which one."""
    for i, text in enumerate(texts, start=1):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            fail(f"argument {i} is not valid UTF-8 text (a byte at character {exc.start + 1})")


BOM = "\ufeff"


def read_text(stream: BinaryIO, name: str) -> tuple[list[str], str, str]:
    """``stream``'s UTF-8 lines, the line ending it uses (its first: "\r\n" for a Windows
    file, else "\n") and its byte-order mark ("" if none; not part of the first line), so
    that what is written back keeps both; a bad byte is reported as ``name:line: …``."""
    data = stream.read()
    bom = BOM if data.startswith(BOM.encode("utf-8")) else ""
    data = data[3:] if bom else data
    first = data.find(b"\n")
    newline = "\r\n" if first > 0 and data[first - 1 : first] == b"\r" else "\n"
    lines = []
    for no, raw in enumerate(data.splitlines(), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            fail(
                f"{name}:{no}: not valid UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1})"
            )
    return lines, newline, bom


def check_input_file(path: Path, what: str = "input file") -> None:
    """Fail now if ``path`` is not a file that can be read: missing, a directory, unreadable."""
    if path.is_dir():
        fail(f"{what} {path} is a directory; give a file")
    if not path.is_file():
        fail(f"{what} {path} does not exist")
    if not os.access(path, os.R_OK):
        fail(f"{what} {path}: permission denied")


def check_writable(path: Path, what: str) -> None:
    """Fail now (not after the work) if file ``path`` cannot be created or replaced."""
    if path.is_dir():
        fail(f"{what} {path} is a directory; give a file name")
    parent = path.parent
    if not parent.is_dir():
        fail(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        fail(f"{what} {path}: permission denied (cannot write in {parent})")


def check_output_dir(path: Path, what: str) -> None:
    """Fail now if directory ``path`` is a file or cannot be created/written."""
    if path.exists() and not path.is_dir():
        fail(f"{what} {path} is a file, not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        fail(f"{what} {path}: permission denied (cannot write in {existing})")


def _within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it (both resolved: links followed)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def check_model_out(out: Path, *, force: bool, keep: dict[str, Path] | None = None) -> None:
    """Fail now, before any work, unless ``--out`` may receive a model directory: a new or
    empty folder, or (with ``force``) a model directory, which is replaced — keeping what the
    user added to it. ``keep`` names what the command reads (``{"the run": RUN}``): ``--out``
    may neither be nor hold one of them (replacing it would delete the input)."""
    from attenzione import atomic
    from attenzione.translator.model_dir import is_complete

    check_output_dir(out, "--out")
    for what, path in (keep or {}).items():
        if path.exists() and _within(path, out):
            where = "is" if path.resolve() == out.resolve() else "holds"
            fail(f"--out {out} {where} {what} ({path}): give another --out")
    if out.is_dir() and not out.is_symlink() and any(out.iterdir()):
        if not is_complete(out):
            fail(f"--out {out} is a folder that holds other files: choose a new one")
        if not force:
            fail(f"--out {out} holds a model already: --force replaces it")
    try:
        atomic.check_replaceable(out, is_complete)
    except (OSError, ValueError) as exc:
        fail(f"--out: {exc}")


def model_option() -> Any:
    """``--model DIR``: a model directory instead of the installed model of the pair."""
    return typer.Option(
        None,
        "--model",
        "-m",
        help="Model directory (default: the installed model of --from/--to, en→it).",
    )


def from_option() -> Any:
    """``--from CODE``: the source language; picks the installed model of the pair."""
    return typer.Option(
        None,
        "--from",
        help="Source language (en, it, …): use the installed model of that pair "
        "(`attenzione models` lists them). Default: en, or what --to leaves.",
        callback=language_code,
    )


def to_option() -> Any:
    """``--to CODE``: the target language, as ``--from``."""
    return typer.Option(
        None,
        "--to",
        help="Target language, as --from. Default: it, or what --from leaves.",
        callback=language_code,
    )


def model_path(model: Path | None, source: str | None, target: str | None) -> Path:
    """The model directory a command uses: ``--model`` as given (checked against ``--from``
    / ``--to`` when they are given too), else the installed model of the pair
    (:func:`attenzione.translator.registry.find`: English→Italian when neither is given)."""
    from attenzione.translator.registry import find, pair_of

    if model is None:
        return find(source, target).path
    _not_a_run(model)
    if source is not None or target is not None:
        have = pair_of(model)
        for asked, has, flag in ((source, have[0], "--from"), (target, have[1], "--to")):
            if asked is not None and asked != has:
                fail(f"{flag} {asked}: the model at {model} translates {have[0]}→{have[1]}")
    return model


def model_route(model: Path | None, source: str | None, target: str | None) -> list[Path]:
    """The model directories a command translates with: ``[--model]``, or the installed model
    of the pair, or — when none translates it but two do through another language
    (:func:`attenzione.translator.registry.route`) — those two, in order."""
    from attenzione.translator.registry import UnknownPair, route

    if model is not None or source is None or target is None:
        return [model_path(model, source, target)]
    try:
        return [m.path for m in route(source, target)]
    except UnknownPair as exc:
        fail(str(exc))
        raise  # fail exits; this keeps the type checker content


def _not_a_run(model: Path) -> None:
    """``--model RUN`` names a training run's directory (splits, tokenizers, best/, last/),
    not a model: say which of its model directories to give instead."""
    if not model.is_dir() or (model / "config.json").exists():
        return
    # the names of attenzione.translator.model_dir, spelled out: --help must not import torch
    for name in ("best", "last"):
        if (model / name / "config.json").is_file():
            fail(
                f"--model {model} is a training run, not a model directory: give --model "
                f"{model / name} (its {'best dev score' if name == 'best' else 'last save'})"
            )


def check_search(directory: Path, search: Any, batch_size: int = 1) -> None:
    """Refuse now, before any long work, a beam or n-best list wider than the model at
    ``directory`` can search on this machine: the request is made as the translator will make
    it (:meth:`attenzione.translator.request.Request.checked`), one line naming the widest
    beam it allows. A directory without a config is left to the loader."""
    from attenzione.translator.bounds import bounds_for
    from attenzione.translator.model_dir import read_config
    from attenzione.translator.request import Request

    if (directory / "config.json").is_file():
        Request(search=search, batch_size=batch_size).checked(bounds_for(read_config(directory)))
