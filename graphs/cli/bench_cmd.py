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


# --- bench round, bench racing (adapter) -------------------------------------------------
@_bench_app.command("round")
def bench_round(
    latency: _Annotated[list[float] | None, _typer.Option(help="Seconds per call; the first is the main point, the last the stress point.")] = None,
    candidates: _Annotated[int, _typer.Option(help="Candidates of the round.")] = 8,
    problems: _Annotated[int, _typer.Option(help="Selection problems per candidate.")] = 64,
    slots: _Annotated[int, _typer.Option(help="Concurrent requests the simulated endpoint serves.")] = 64,
    transport: _Annotated[str, _typer.Option(help="Solver transport: direct or litellm.")] = "direct",
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """One QA-shaped round (8 x 64 x 5 Solver calls) through the real stack against the simulated endpoint."""
    from graphs.bench import round as round_bench

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    figures = round_bench.run(tuple(latency or (1.0, 0.1)), candidates, problems, slots,
                              transport=transport, log=log)
    print(round_bench.table(figures), flush=True)
    if as_json:
        print(_json.dumps(figures))


@_bench_app.command("racing")
def bench_racing(
    seeds: _Annotated[int, _typer.Option(help="Simulated rounds per scenario.")] = 4000,
    problems: _Annotated[int, _typer.Option(help="Selection problems per round.")] = 64,
    rho: _Annotated[float, _typer.Option(help="Correlation of candidates' outcomes on a problem.")] = 0.5,
    frontier: _Annotated[bool, _typer.Option(help="Also sweep staged schedules: the best worst-case P(best) any of them reaches at >= 2x fewer calls.")] = False,
    adaptive: _Annotated[bool, _typer.Option(help="Also compare fully adaptive allocation (top-two Thompson sampling, a paired chase) with staged racing: P(best) and wall time.")] = False,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """Racing vs full evaluation on simulated candidates with known accuracies: calls and P(best)."""
    from graphs.bench import racing as racing_bench

    figures = racing_bench.simulate(seeds=seeds, problems=problems, rho=rho)
    print(racing_bench.table(figures), flush=True)
    if frontier:
        from graphs.bench import racing_frontier

        figures["frontier"] = racing_frontier.sweep(seeds=seeds, problems=problems, rho=rho)
        print(racing_frontier.table(figures["frontier"]), flush=True)
    if adaptive:
        from graphs.bench import racing_adaptive

        figures["adaptive"] = racing_adaptive.compare(seeds=seeds, problems=problems, rho=rho)
        print(racing_adaptive.table(figures["adaptive"]), flush=True)
    if as_json:
        print(_json.dumps(figures))


# --- bench reliability (fault and hostile-input suite) ----------------------------------
@_bench_app.command("reliability")
def bench_reliability(
    kills: _Annotated[int, _typer.Option(help="SIGKILLs of the adapter process.")] = 5,
    seed: _Annotated[int, _typer.Option(help="Seed of the kill delays.")] = 0,
    keep: _Annotated[str | None, _typer.Option(help="Keep the scenarios' run directories here.")] = None,
    as_json: _Annotated[bool, _typer.Option("--json", help="Last line: a JSON object of figures.")] = False,
) -> None:
    """Hostile harness code, bad Proposer output, endpoint faults, kills and bad data: figures."""
    import tempfile

    from graphs.reliability.bench import run_all, table

    def log(msg: str) -> None:
        print(msg, file=_sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="hl-reliability-") as tmp:
        figures = run_all(_Path(keep or tmp), kills=kills, seed=seed, log=log)
    print(table(figures), flush=True)
    if as_json:
        print(_json.dumps(figures))
