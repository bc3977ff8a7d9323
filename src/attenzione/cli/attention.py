"""``attenzione attention``: heatmaps, an interactive page and one head explained."""

from __future__ import annotations

from pathlib import Path

import typer

from attenzione.cli.common import (
    at_least,
    check_argument_text,
    check_output_dir,
    check_search,
    fail,
    from_option,
    model_option,
    model_path,
    to_option,
    user_errors,
)
from attenzione.cli.threads import apply_threads, threads_option


def attention(
    sentence: str = typer.Argument(
        ..., help="The sentence to look inside (in the model's source language)."
    ),
    model: Path | None = model_option(),
    source: str | None = from_option(),
    target: str | None = to_option(),
    reference: str | None = typer.Option(
        None, "--reference", "-r", help="Teacher-force this translation instead of the model's."
    ),
    out: Path = typer.Option(Path("attention"), "--out", "-o", help="Directory for the files."),
    layer: int | None = typer.Option(
        None,
        "--layer",
        "-l",
        help="Layer of the large heatmaps and of --explain (0-based; default: the last).",
        callback=at_least(0),
    ),
    head: int | None = typer.Option(
        None,
        "--head",
        help="Head of the large heatmaps (default: the mean of the heads) and of --explain "
        "(default: head 0; it explains one head's computation).",
        callback=at_least(0),
    ),
    explain: bool = typer.Option(
        False, "--explain", help="Print one head's computation for one token, with real numbers."
    ),
    kind: str = typer.Option(
        "cross", "--kind", "-k", help="What --explain explains: encoder, decoder or cross."
    ),
    token: int = typer.Option(
        0, "--token", "-t", help="Query token that --explain explains.", callback=at_least(0)
    ),
    beam: int = typer.Option(
        4,
        "--beam",
        "-b",
        "--beam-size",
        help="Beam size for the translation.",
        callback=at_least(1),
    ),
    trace: bool = typer.Option(
        False,
        "--trace",
        help="Record the decoding step by step (each step's most likely pieces, the choice, "
        "the beam) into attention.html's player.",
    ),
    json_out: bool = typer.Option(
        False, "--json", help="With --trace: print the trace as JSON (and write no files)."
    ),
    prefix: str = typer.Option(
        "",
        "--prefix",
        help="Words the translation must begin with; the model continues after them.",
        show_default=False,
    ),
    ablate: list[str] = typer.Option(
        [],
        "--ablate",
        help="Switch a part off: KIND:LAYER.HEAD (KIND encoder, decoder or cross; LAYER, HEAD "
        "a number or *: cross:2.1, encoder:0.*, cross:*) or positions. Repeat or comma-separate.",
        show_default=False,
    ),
    top: int = typer.Option(
        10,
        "--top",
        help="With --trace: the most likely pieces listed a step.",
        callback=at_least(1),
    ),
    png: bool = typer.Option(True, "--png/--no-png", help="Write the PNG heatmaps."),
    threads: int | None = threads_option(),
) -> None:
    """Translate a sentence (or teacher-force --reference) and show every attention map."""
    with user_errors():
        if not sentence.strip():
            fail("the sentence is empty")
        if kind not in ("encoder", "decoder", "cross"):
            fail(f"--kind must be encoder, decoder or cross, not {kind!r}")
        if reference is not None and not reference.strip():
            fail("--reference is empty")
        check_argument_text(
            [sentence, prefix, *ablate] + ([reference] if reference is not None else [])
        )
        if json_out and not trace:
            fail("--json prints the trace: add --trace")
        if reference is not None and (trace or prefix.strip() or ablate):
            fail("--trace, --prefix and --ablate decode: they do not go with --reference")
        if not json_out:
            check_output_dir(out, "--out")
        directory = model_path(model, source, target)
        apply_threads(threads)  # before torch is imported: it sets the wait policy
        from attenzione.config import search_config
        from attenzione.translator.translator import Translator
        from attenzione.viz import save_heatmaps, save_html

        if reference is None:  # a beam too wide: one line, before the work
            check_search(directory, search_config(beam))
        translator = Translator.from_pretrained(directory)
        traced = None
        if trace or prefix.strip() or ablate:
            from attenzione.translator.ablation import parse_ablation

            parse_ablation(ablate, translator.model.config)  # a part it lacks: one line
            translator.prefix_ids(prefix)  # a prefix it cannot write: one line
            made = translator.trace(
                sentence, search=search_config(beam), prefix=prefix, ablate=ablate, top_k=top
            )
            maps = made.maps
            traced = made.to_dict() if trace else None
            if json_out:
                import json

                typer.echo(json.dumps(traced, ensure_ascii=False))
                return
        else:
            maps = translator.attention(sentence, reference, beam=beam)
        explained = None
        if explain:
            from attenzione.translator.explain import explain_head, explanation_data

            ex_layer = layer if layer is not None else maps.layers(kind) - 1
            ex_head = head if head is not None else 0
            ex = explain_head(maps, kind, ex_layer, ex_head, token)
            typer.echo(ex.format())
            typer.echo("")
            explained = explanation_data(maps, kind, ex_layer, ex_head, token)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        if png:
            written += save_heatmaps(maps, out, layer=layer, head=head)
        written.append(save_html(maps, out / "attention.html", explain=explained, trace=traced))
        label = "reference" if maps.teacher_forced else "translation"
        typer.echo(f"{label}: {maps.translation}")
        for path in written:
            typer.echo(f"wrote {path}")
