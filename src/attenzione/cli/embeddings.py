"""`attenzione embeddings` (placeholder until the GloVe commands land)."""

import typer

app = typer.Typer(help="Explore word embeddings (GloVe).", no_args_is_help=True)
