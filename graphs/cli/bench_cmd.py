"""CLI commands (registered on import)."""


# --- bench bm25 (retrieval) -------------------------------------------------------------
import json as _json  # noqa: E402
import os as _os  # noqa: E402
import sys as _sys  # noqa: E402
from pathlib import Path as _Path  # noqa: E402
from typing import Annotated as _Annotated  # noqa: E402

import typer as _typer  # noqa: E402

from graphs.cli import bench_app as _bench_app  # noqa: E402


@_bench_app.command("bm25")
def bench_bm25(
    passages: _Annotated[int, _typer.Option(help="Synthetic corpus size.")] = 1_000_000,
    queries: _Annotated[int, _typer.Option(help="Timed 8-word queries.")] = 200,
    ref_passages: _Annotated[int, _typer.Option(help="rank-bm25 reference subset size.")] = 100_000,
    ref_queries: _Annotated[int, _typer.Option(help="rank-bm25 reference queries.")] = 20,
    recall: _Annotated[bool, _typer.Option("--recall/--no-recall", help="Recall on the real samples.")] = True,
    chroma: _Annotated[bool, _typer.Option("--chroma/--no-chroma", help="Chroma and hybrid rows.")] = True,
    device: _Annotated[str, _typer.Option(help="Embedding device for the recall rows.")] = "cpu",
    cache: _Annotated[str | None, _typer.Option(help="Keep/reuse the recall indexes here.")] = None,
    recall_questions: _Annotated[int | None, _typer.Option(help="Recall on the first N questions only (their closed corpus).")] = None,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """BM25 at scale vs rank-bm25, a 5.23M projection, and recall@k on MuSiQue and 2Wiki."""
    from retrieval.bench import recall as recall_bench
    from retrieval.bench import report, scale

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    figures = scale.run(passages, queries, ref_passages, ref_queries, log=log)
    print(report.scale_table(figures), flush=True)
    if recall:
        data = _os.environ.get("HARNESS_LEARNING_DATA") or str(
            _Path(__file__).resolve().parents[3] / "shared" / "data")
        backends = ("bm25", "chroma", "hybrid") if chroma else ("bm25",)
        figures["recall"] = recall_bench.run(data, backends, device=device, cache=cache,
                                             questions=recall_questions, log=log)
        print(report.recall_table(figures["recall"]))
    if as_json:
        print(_json.dumps(figures))
