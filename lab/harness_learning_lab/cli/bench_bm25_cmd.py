"""`harness-learn bench bm25`: BM25 at scale against rank-bm25 (on a Zipf corpus, or one fitted
to the QA samples), and recall@k on the real samples (lab code, loaded lazily)."""

import json as _json
import sys as _sys
from pathlib import Path as _Path
from typing import Annotated as _Annotated

import typer as _typer

from harness_learning.cli import bench_app as _bench_app


@_bench_app.command("bm25")
def bench_bm25(
    passages: _Annotated[int, _typer.Option(help="Synthetic corpus size (HotpotQA's abstracts: 5233329).")] = 1_000_000,
    queries: _Annotated[int, _typer.Option(help="Timed queries (top-10 each).")] = 200,
    ref_passages: _Annotated[int, _typer.Option(help="rank-bm25 reference subset size.")] = 100_000,
    ref_queries: _Annotated[int, _typer.Option(help="rank-bm25 reference queries.")] = 20,
    fit_samples: _Annotated[bool, _typer.Option(
        "--fit-samples/--no-fit-samples",
        help="Draw the corpus from a fit to the three QA sample corpora (HARNESS_LEARNING_DATA) "
             "after the index's tokenizer: their rank-frequency law, vocabulary growth (Heaps) "
             "and passage lengths; prints the fit. Off: 50k Zipf words, ~60-word passages.")] = False,
    queries_from_samples: _Annotated[bool, _typer.Option(
        "--queries-from-samples/--no-queries-from-samples",
        help="Time the sample questions (drawn with replacement), each term replaced by the "
             "fitted corpus's word of the same frequency rank. Needs --fit-samples.")] = False,
    scaling: _Annotated[bool, _typer.Option(
        "--scaling/--no-scaling",
        help="Also build at 1/4 and 1/2 of --passages for a linear projection to 5.23M.")] = True,
    workdir: _Annotated[str | None, _typer.Option(
        help="Keep the corpus, queries and full-size index here (default: a temporary folder, removed).")] = None,
    recall: _Annotated[bool, _typer.Option("--recall/--no-recall", help="Recall on the real samples.")] = True,
    chroma: _Annotated[bool, _typer.Option("--chroma/--no-chroma", help="Chroma and hybrid rows.")] = True,
    device: _Annotated[str, _typer.Option(help="Embedding device for the recall rows.")] = "cpu",
    cache: _Annotated[str | None, _typer.Option(help="Keep/reuse the recall indexes here.")] = None,
    recall_questions: _Annotated[int | None, _typer.Option(help="Recall on the first N questions only (their closed corpus).")] = None,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """BM25 at scale vs rank-bm25 (measured, or projected to 5.23M), and recall@k on MuSiQue and 2Wiki."""
    from harness_learning_lab.bench.retrieval import recall as recall_bench
    from harness_learning_lab.bench.retrieval import report, scale

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    if queries_from_samples and not fit_samples:
        print("error: --queries-from-samples maps question words to the fitted corpus's ranks; "
              "add --fit-samples", file=_sys.stderr)
        raise _typer.Exit(2)
    fitted = None
    if fit_samples:
        from harness_learning.evals.samples import DataDirUnset
        from harness_learning_lab.bench.retrieval.fit import fit_samples as fit_to_samples

        try:
            fitted = fit_to_samples()
        except (DataDirUnset, FileNotFoundError) as e:
            print(f"error: --fit-samples needs the QA samples: {e}", file=_sys.stderr)
            raise _typer.Exit(2) from None
    if workdir:
        _Path(workdir).mkdir(parents=True, exist_ok=True)
    figures = scale.run(passages, queries, ref_passages, ref_queries, workdir=workdir, log=log,
                        fitted=fitted, sample_queries=queries_from_samples, scaling=scaling)
    if figures.get("corpus"):
        print(report.fit_table(figures["corpus"]), flush=True)
    print(report.scale_table(figures), flush=True)
    if recall:
        from harness_learning.evals.samples import data_dir

        data = str(data_dir())
        backends = ("bm25", "chroma", "hybrid") if chroma else ("bm25",)
        figures["recall"] = recall_bench.run(data, backends, device=device, cache=cache,
                                             questions=recall_questions, log=log)
        print(report.recall_table(figures["recall"]))
    if as_json:
        print(_json.dumps(figures))
