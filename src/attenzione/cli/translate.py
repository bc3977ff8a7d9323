"""``attenzione translate``: English in, Italian out with the shipped model by default;
``--from it --to en`` (or any installed pair, :mod:`attenzione.translator.registry`) the other way.

Everything the user can get wrong is checked before the model is loaded: option ranges (where
they are parsed), the input's encoding (file and line named), whether the output can be
written, and whether the beam fits in memory. Translations are then streamed in input order:
to standard output each line as soon as it is done; to ``--output`` through a temporary file
renamed over it at the end (:mod:`attenzione.cli.output`), so that ``-i F -o F`` is safe and an
interrupted run leaves the output as it was, never truncated (a bar on stderr when it is a
terminal). A file's byte-order mark and line endings are kept.

A document (``--input report.docx --output rapporto.docx``: .docx, .odt, .html, .srt) is
read whole with :mod:`attenzione.documents`, its paragraphs translated with their inline
formatting as tags, and written back in its own format, atomically, once all is done.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import typer

from attenzione.cli.common import (
    at_least,
    check_argument_text,
    check_input_file,
    check_number_flags,
    check_search,
    check_steps,
    check_writable,
    fail,
    from_option,
    given,
    in_range,
    model_option,
    model_route,
    no_step_option,
    number_format_of,
    number_format_option,
    pipeline_of,
    raw_option,
    read_text,
    shortlist_option,
    tag_option,
    to_option,
    user_errors,
)
from attenzione.cli.output import replaced_text, signals_interrupt
from attenzione.cli.threads import apply_threads, threads_option

if TYPE_CHECKING:
    from attenzione.documents import Document
    from attenzione.translator.translator import Translation
    from attenzione.translator.workers import Workers

SAMPLING_OPTIONS = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p"}


def translate(
    ctx: typer.Context,
    text: list[str] = typer.Argument(None, help="Sentences to translate (or use --input / stdin)."),
    input: Path | None = typer.Option(
        None,
        "--input",
        "-i",
        help="File with one sentence per line ('-' = stdin), or a document to translate "
        "with its formatting: .docx, .odt, .html, .srt (needs --output).",
    ),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write translations here, one per line; for a document, the translated document "
        "(same format).",
    ),
    model: Path | None = model_option(),
    source: str | None = from_option(),
    target: str | None = to_option(),
    precision: str = typer.Option(
        "fp32", "--precision", "-p", help="fp32 (reference), bf16 or int8 (faster, approximate)."
    ),
    shortlist: bool = shortlist_option(),
    beam: int = typer.Option(
        4, "--beam", "-b", "--beam-size", help="Beam size (1 = greedy).", callback=at_least(1)
    ),
    sample: bool = typer.Option(False, "--sample", help="Sample instead of searching."),
    temperature: float = typer.Option(
        1.0, help="Sampling temperature (> 0).", callback=in_range(0, float("inf"), low_open=True)
    ),
    top_k: int = typer.Option(
        0, help="Sample only among the k most likely tokens (0 = off).", callback=at_least(0)
    ),
    top_p: float = typer.Option(
        1.0, help="Nucleus sampling threshold, in (0, 1].", callback=in_range(0, 1, low_open=True)
    ),
    seed: int | None = typer.Option(None, help="Seed for reproducible sampling."),
    length_penalty: float = typer.Option(
        1.0, help="Beam length penalty α: score = log p / length^α.", callback=at_least(0)
    ),
    n_best: int = typer.Option(
        1,
        help="Print the n best beam hypotheses with their scores (one text; the beam is "
        "widened to n if it is smaller).",
        callback=at_least(1),
    ),
    max_length: int | None = typer.Option(
        None,
        help="At most N new tokens a sentence, whatever its source's length (CTranslate2's "
        "max_decoding_length, transformers' max_new_tokens; never past the model's positions). "
        "Default: 1.5 × the source's tokens + 10.",
        callback=at_least(1),
        show_default=False,
    ),
    prefix: str = typer.Option(
        "",
        "--prefix",
        help="Words every translation begins with; the model continues after them (as "
        "CTranslate2's target_prefix).",
        show_default=False,
    ),
    batch_size: int = typer.Option(64, help="Sentences per decoding batch.", callback=at_least(1)),
    workers: int = typer.Option(
        0,
        help="Processes decoding batches side by side (0: two when there are 2+ cores and "
        "more than two batches; 1: this process alone). The same translations, faster.",
        callback=at_least(0),
    ),
    threads: int | None = threads_option(),
    no_step: list[str] = no_step_option(),
    raw: bool = raw_option(),
    tag: str | None = tag_option(),
    number_format: str = number_format_option(),
) -> None:
    """Translate sentences with a trained model."""
    with user_errors(), signals_interrupt():
        if not sample:
            ignored = [flag for name, flag in SAMPLING_OPTIONS.items() if given(ctx, name)]
            if ignored:
                verb = "applies" if len(ignored) == 1 else "apply"
                fail(f"{', '.join(ignored)} only {verb} with --sample")
        names = check_steps(no_step, raw)
        check_number_flags(number_format, names, raw)
        if n_best > 1 and sample:
            fail("--n-best lists beam search's hypotheses: drop --sample")
        document = _read_document(text, input, output, n_best)
        if prefix.strip() and document is not None:
            fail("--prefix is for sentences, not a document")
        check_argument_text([prefix])
        lines, newline, bom = _read_input(text, input) if document is None else ([], "\n", "")
        if n_best > 1 and len(lines) != 1:
            fail("--n-best works on one text at a time")
        if output is not None:
            check_writable(output, "--output")
        legs = model_route(model, source, target)
        directory = legs[-1]
        if len(legs) > 1 and (no_step or raw or tag is not None):
            fail(
                f"--no-step, --raw and --tag set one model's text steps; {source}→{target} "
                "is translated through another language by two models"
            )
        budget = apply_threads(threads)  # before torch is imported: it sets the wait policy
        from attenzione.config import search_config
        from attenzione.translator.translator import Translator

        search = search_config(
            beam,
            n_best,
            sample=sample,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            length_penalty=length_penalty,
        )
        if max_length is not None:  # a cap alone, as CTranslate2 and transformers read it
            search = replace(search, max_len_a=0.0, max_len_b=max_length)
        for leg in legs:
            check_search(leg, search, batch_size)  # a beam too wide: one line, now
        texts = len(document.segments) if document is not None else len(lines)
        n = worker_count(workers, texts, batch_size, n_best, budget) if len(legs) == 1 else 1
        # the workers load the model while this process does
        with _workers(directory, n, precision, shortlist, budget) as pool:
            loaded = [
                Translator.from_pretrained(
                    leg,
                    precision=precision,
                    shortlist=shortlist,
                    workers=pool,
                    number_format=number_format_of(number_format),
                )
                for leg in legs
            ]
            translator: Any = loaded[0]
            if len(loaded) == 2:
                from attenzione.translator.pivot import Pivot

                translator, steps, terms = Pivot(loaded[0], loaded[1]), None, None
            else:
                steps, terms = pipeline_of(translator, names, raw)
            translator.prefix_ids(prefix)  # a prefix the model cannot write: one line, now
            if document is not None and output is not None:
                translated = translator.translate_iter(
                    document.segments,
                    search=search,
                    terms=terms,
                    steps=steps,
                    tag=tag,
                    batch_size=batch_size,
                )
                _write_document(document, output, translated)
                return
            if n_best > 1:
                (result,) = translator.translate(
                    lines, search=search, terms=terms, steps=steps, tag=tag, prefix=prefix
                )
                for cand in result.candidates:  # a table of scores: no byte-order mark
                    typer.echo(f"{cand.score:8.4f}\t{cand.text}")
                return
            results = (
                r.text
                for r in translator.translate_iter(
                    lines,
                    search=search,
                    terms=terms,
                    steps=steps,
                    tag=tag,
                    prefix=prefix,
                    batch_size=batch_size,
                )
            )
            if output is None:
                sys.stdout.write(bom)
                _stream(results, sys.stdout, len(lines), bar=False, newline=newline)
                return
            with replaced_text(output) as f:  # renamed over --output once all is written
                f.write(bom)
                _stream(results, f, len(lines), bar=_terminal(sys.stderr), newline=newline)
            done = sum(1 for line in lines if line.strip())  # blank lines are not translations
            typer.echo(f"wrote {done} translations ({len(lines)} lines) to {output}", err=True)


def worker_count(asked: int, texts: int, batch_size: int, n_best: int, cores: int) -> int:
    """How many processes decode ``texts`` texts (:mod:`attenzione.translator.workers`; 1: this
    one).

    Workers need two batches at once to share, and a text streams in chunks of
    :data:`~attenzione.translator.translator.STREAM_CHUNK` lines, batched chunk by chunk: with fewer
    than two batches a chunk, or one text's n-best list, there is nothing to share, whatever was
    ``asked``. Otherwise ``asked`` (0: two when the run may use two threads, ``cores``, or more
    (:mod:`attenzione.cli.threads`) and at least a whole chunk of four batches or more; FLORES
    dev's 997 lines went 1.1× faster so, and five batches in all gained nothing:
    docs/benchmarks.md)."""
    from attenzione.translator.translator import STREAM_CHUNK

    per_chunk = -(-min(texts, STREAM_CHUNK) // batch_size)
    if n_best > 1 or per_chunk < 2:
        return 1
    if asked:
        return asked
    return 2 if cores >= 2 and texts >= STREAM_CHUNK and per_chunk >= 4 else 1


def _terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a progress bar redrawn into a log file is noise)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def _workers(
    directory: Path, n: int, precision: str, shortlist: bool, budget: int
) -> Iterator[Workers | None]:
    """``n`` worker processes to decode the batches in while the block runs (the ``budget``
    of threads, :mod:`attenzione.cli.threads`, shared out between them); None for one
    process. A worker that dies is a one-line error."""
    if n < 2:
        yield None
        return
    from attenzione.translator.workers import Workers, WorkerStopped

    threads = max(1, budget // n)
    with Workers(directory, n, threads=threads, precision=precision, shortlist=shortlist) as pool:
        try:
            yield pool
        except WorkerStopped as exc:
            fail(str(exc))


def _read_document(
    text: list[str] | None, input: Path | None, output: Path | None, n_best: int
) -> Document | None:
    """The document to translate when ``--input`` or ``--output`` names one (.docx, .odt,
    .html, .srt: a .txt file keeps the line-by-line streaming above), checked before any
    work: it exists, it is readable in its format, and the output is another file of the same
    format. An input file that is not UTF-8 text and has no document suffix (a .pdf) is
    refused here too, naming the formats there are."""
    from attenzione.documents import FORMATS, format_of, read_document

    def is_document(path: Path | None) -> bool:
        return path is not None and path.suffix.lower() in FORMATS.keys() - {".txt"}

    if input is None or str(input) == "-" or text:
        if is_document(output):
            fail(f"--output {output} is a document: give the document to translate as --input")
        return None
    check_input_file(input)
    if not is_document(input) and not is_document(output):
        if input.suffix.lower() not in FORMATS and not _is_utf8(input):
            format_of(input.name)  # raises the error that names the supported formats
        return None
    if output is None:
        fail(f"translating a document needs --output FILE (a {input.suffix} file)")
    if output.suffix.lower() != input.suffix.lower():
        fail(
            f"--input {input.name} and --output {output.name} must have the same suffix "
            "(a document is written back in its own format)"
        )
    if output.exists() and output.resolve() == input.resolve():
        fail(f"--output {output} is the input file: give another name")
    if n_best > 1:
        fail("--n-best works on one text at a time, not on a document")
    check_writable(output, "--output")
    return read_document(input.read_bytes(), input.name)


def _is_utf8(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _write_document(document: Document, output: Path, results: Iterable[Translation]) -> None:
    """Translate ``document``'s segments (a progress bar on a terminal) and write it to
    ``output`` atomically: a run killed halfway leaves no half-written document."""
    from tqdm import tqdm

    from attenzione.atomic import write_bytes

    translations = []
    quiet = not _terminal(sys.stderr)
    with tqdm(total=len(document.segments), unit="segment", disable=quiet, file=sys.stderr) as p:
        for result in results:
            translations.append(result.text)
            p.update(1)
    write_bytes(output, document.write(translations))
    typer.echo(f"wrote {output} ({len(translations)} segments translated)", err=True)


def _read_input(text: list[str] | None, input: Path | None) -> tuple[list[str], str, str]:
    """The lines to translate, from arguments, a file or stdin, checked to be UTF-8 text,
    and the line ending and byte-order mark to write them back with (the input's)."""
    if text and input is not None:
        fail("give sentences as arguments or --input, not both")
    if text:
        check_argument_text(list(text))
        return list(text), "\n", ""
    if input is not None and str(input) != "-":
        check_input_file(input)
        with open(input, "rb") as f:
            return read_text(f, str(input))
    if input is not None or not sys.stdin.isatty():
        return read_text(sys.stdin.buffer, "stdin")
    fail("nothing to translate: give a sentence, --input FILE, or pipe text in")


def _stream(
    results: Iterable[str], out: TextIO, total: int, *, bar: bool, newline: str = "\n"
) -> int:
    """Write each translation as it arrives (flushing per line), each ended with
    ``newline``; returns how many."""
    from tqdm import tqdm

    n = 0
    with tqdm(total=total, unit="line", disable=not bar, file=sys.stderr) as progress:
        for line in results:
            out.write(line + newline)
            out.flush()
            progress.update(1)
            n += 1
    return n
