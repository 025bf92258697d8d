"""`harness-learn index build|search`: a thin shell over `retrieval.build_index/open_index`."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path

import typer

from graphs.cli import index_app


class CorpusKind(str, Enum):
    hotpotqa_wiki = "hotpotqa-wiki"
    musique = "musique"
    twowiki = "2wiki"
    jsonl = "jsonl"


class Backend(str, Enum):
    bm25 = "bm25"
    chroma = "chroma"
    both = "both"


def _fail(e: Exception) -> None:
    typer.secho(f"error: {e}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2) from e


def _none(value: str) -> str | None:
    return None if value.lower() in ("", "none", "off") else value


@index_app.command("build")
def build(
    corpus: CorpusKind = typer.Option(..., help="Corpus layout of --input."),
    input: Path = typer.Option(..., "--input", help="Corpus file or shard directory."),  # noqa: A002
    out: Path = typer.Option(..., "--out", help="Index directory (replaced only on success)."),
    backend: Backend = typer.Option(Backend.bm25, help="Which indexes to build."),
    limit: int | None = typer.Option(None, help="Embed only the first N passages into Chroma."),
    device: str = typer.Option("cpu", help="Embedding device: cpu, cuda, auto."),
    chroma_url: str | None = typer.Option(None, help="Chroma server URL (`chroma run`); default: embedded."),
    stemmer: str = typer.Option("english", help="PyStemmer language, or 'none'."),
    stopwords: str = typer.Option("en", help="Stop-word list (en), or 'none'."),
    batch_size: int = typer.Option(256, help="Passages per Chroma batch."),
) -> None:
    """Build (or resume) an index and print a summary."""
    from retrieval import build_index
    from retrieval.jsonstream import CorpusError

    try:
        s = build_index(corpus.value, input, out, backend.value, stemmer=_none(stemmer),
                        stopwords=_none(stopwords), limit=limit, device=device,
                        chroma_url=chroma_url, batch_size=batch_size)
    except (CorpusError, ValueError, FileNotFoundError) as e:
        _fail(e)
    chroma = f", chroma holds {s.chroma_count:,}" if s.chroma_count is not None else ""
    typer.echo(f"built {s.out_dir}: {s.passages:,} passages, backends {'+'.join(s.backends)}"
               f"{chroma}, {s.seconds:.1f} s, {s.bytes_on_disk / 2**20:.1f} MiB on disk")


@index_app.command("search")
def search(
    index_dir: Path = typer.Argument(..., help="An index directory written by `index build`."),
    query: str = typer.Argument(...),
    k: int = typer.Option(5, "-k", help="How many passages."),
    backend: str = typer.Option("auto", help="auto, bm25, chroma, hybrid or rank-bm25."),
    device: str = typer.Option("cpu", help="Query embedding device for chroma/hybrid."),
    as_json: bool = typer.Option(False, "--json", help="Last line: a JSON list of hits."),
) -> None:
    """Print the top-k passages for QUERY."""
    from retrieval import open_index

    try:
        hits = open_index(index_dir, backend, device=device).search(query, k)
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    for rank, p in enumerate(hits, 1):
        text = p.text if len(p.text) <= 200 else p.text[:197] + "..."
        typer.echo(f"{rank:>2}. [{p.score:.3f}] {p.title} (id {p.id})\n    {text}")
    if as_json:
        typer.echo(json.dumps([{"title": p.title, "text": p.text, "score": p.score, "id": p.id}
                               for p in hits], ensure_ascii=False))
