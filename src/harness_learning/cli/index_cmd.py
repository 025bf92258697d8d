"""`harness-learn index build|search`: a thin shell over `retrieval.build_index/open_index`."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from harness_learning.cli import index_app


class CorpusKind(StrEnum):
    hotpotqa_wiki = "hotpotqa-wiki"
    musique = "musique"
    twowiki = "2wiki"
    jsonl = "jsonl"


class Backend(StrEnum):
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
    corpus: Annotated[CorpusKind, typer.Option(help="Corpus layout of --input.")],
    input: Annotated[Path, typer.Option("--input", help="Corpus file or shard directory.")],
    out: Annotated[Path, typer.Option("--out", help="Index directory (replaced only on success).")],
    backend: Annotated[Backend, typer.Option(help="Which indexes to build.")] = Backend.bm25,
    limit: Annotated[int | None, typer.Option(help="Embed only the first N passages into Chroma.")] = None,
    device: Annotated[str, typer.Option(help="Embedding device: cpu, cuda, auto.")] = "cpu",
    chroma_url: Annotated[str | None, typer.Option(help="Chroma server URL (`chroma run`); default: embedded.")] = None,
    stemmer: Annotated[str, typer.Option(help="PyStemmer language, or 'none'.")] = "english",
    stopwords: Annotated[str, typer.Option(help="Stop-word list (en), or 'none'.")] = "en",
    batch_size: Annotated[int, typer.Option(help="Passages per Chroma batch.")] = 256,
    workers: Annotated[int | None, typer.Option(help="Processes tokenising for BM25 (default: one per CPU, at most 8).")] = None,
) -> None:
    """Build (or resume) an index and print a summary."""
    from harness_learning.retrieval import build_index
    from harness_learning.retrieval.jsonstream import CorpusError

    try:
        s = build_index(corpus.value, input, out, backend.value, stemmer=_none(stemmer),
                        stopwords=_none(stopwords), limit=limit, device=device,
                        chroma_url=chroma_url, batch_size=batch_size, workers=workers)
    except (CorpusError, ValueError, FileNotFoundError) as e:
        _fail(e)
    chroma = f", chroma holds {s.chroma_count:,}" if s.chroma_count is not None else ""
    typer.echo(f"built {s.out_dir}: {s.passages:,} passages, backends {'+'.join(s.backends)}"
               f"{chroma}, {s.seconds:.1f} s, {s.bytes_on_disk / 2**20:.1f} MiB on disk")


@index_app.command("search")
def search(
    index_dir: Annotated[Path, typer.Argument(help="An index directory written by `index build`.")],
    query: Annotated[str, typer.Argument()],
    k: Annotated[int, typer.Option("-k", help="How many passages.")] = 5,
    backend: Annotated[str, typer.Option(help="auto, bm25, chroma, hybrid or rank-bm25.")] = "auto",
    device: Annotated[str, typer.Option(help="Query embedding device for chroma/hybrid.")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Last line: a JSON list of hits.")] = False,
) -> None:
    """Print the top-k passages for QUERY."""
    from harness_learning.retrieval import open_index

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
