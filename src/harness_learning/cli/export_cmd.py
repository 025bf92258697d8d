"""`harness-learn export`: one version of a run as a plain harness file, to keep, review, put
under version control or run elsewhere (`harness-learn run --harness FILE.py`,
`load_harness("FILE.py")`) without the run directory.

The version is chosen as everywhere else a run's version is named (`graphs.serving.harness_source`:
`current`, `best` or a sha prefix); the file is that version's source under a comment header
saying where it came from: the run, its task and Solver, the round, the scores and the full
version id (the source's sha256, so `sha256` of the file's body checks it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness_learning.cli import app
from harness_learning.cli._common import console
from harness_learning.cli.errors import EXIT_USAGE, CliError
from harness_learning.cli.show_cmd import StoreOption
from harness_learning.harnesses.text_safety import for_rich, for_storage, for_terminal

if TYPE_CHECKING:
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.graphs.serving.harness_source import HarnessSource


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by `adapt`.")],
    out_file: Annotated[Path, typer.Option("--out", help="The harness file (.py) to write.")],
    version: Annotated[str, typer.Option(help="current (the version in force), best (the "
                                              "adopted chain's highest selection score) or a "
                                              "version sha prefix (`show` lists them).")] = "current",
    force: Annotated[bool, typer.Option(help="Overwrite an existing --out file.")] = False,
    standalone: Annotated[bool, typer.Option(help=(
        "A standalone LangGraph file: the building blocks the version imports are inlined and "
        "a `make_graph(chat_model, python=..., search=..., tools=...)` is added, so it imports "
        "only LangGraph, langchain-core and the standard library and runs over the chat model "
        "(and code runner) you pass."))] = False,
    store: StoreOption = "",  # given (its callback), the run's PostgreSQL log is opened
) -> None:
    """Write one version of a run as a harness file with a header saying where it came from."""
    from harness_learning.graphs.serving.harness_source import resolve_harness
    from harness_learning.harnesses.rundir import RunDir

    if out_file.exists() and not force:
        raise CliError(f"{out_file} exists", "pass --force to overwrite it, or another --out",
                       EXIT_USAGE)
    RunDir.open(run_dir)  # a missing run is one line naming config.json, not "not a seed"
    try:
        found = resolve_harness(run_dir, version)
    except LookupError as exc:
        raise CliError(str(exc.args[0] if exc.args else exc),
                       f"`harness-learn show {run_dir}` lists the versions; --version takes "
                       "current, best or a sha prefix", EXIT_USAGE) from exc
    header = export_header(run_dir, found, version, out_file)
    body = found.source
    if standalone:
        body = _standalone(found.source)
        header = [f"# use it: {USE_LINE}" if line.startswith("# run it:") else line
                  for line in header]
    limit = getattr(found.config, "line_limit", None)
    if not standalone and limit is not None and \
            len(header) + len(found.source.splitlines()) > limit:
        header = header[:1]  # a harness near the run's line limit stays loadable
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(for_storage("\n".join(header) + "\n" + body), encoding="utf-8")
    console.print(f"exported version {for_rich(found.sha[:12])} of {for_rich(run_dir)} to "
                  f"{for_rich(out_file)}{' (standalone)' if standalone else ''}")
    if standalone:
        console.print(for_rich(f"use it: {USE_LINE}"), soft_wrap=True)
    elif found.config is not None:
        console.print(for_rich(f"run it: {for_terminal(run_line(found.config, out_file))}"),
                      soft_wrap=True)


USE_LINE = ("make_graph(chat_model, python=run_code, search=search, tools=[...])"
            ".invoke({'question': ...})['answer'], with your chat model and, where the harness "
            "calls them, your sandboxed code runner, search and tools")


def _standalone(source: str) -> str:
    """The version as a standalone LangGraph file, or one line saying why it cannot be."""
    from harness_learning.harnesses.standalone import StandaloneError, standalone_source

    try:
        return standalone_source(source)
    except StandaloneError as exc:
        raise CliError(f"cannot export this version standalone: {exc}",
                       "export it without --standalone and run it with harness-learn run",
                       EXIT_USAGE) from exc


def export_header(run_dir: Path, found: HarnessSource, asked: str,
                  out_file: Path) -> list[str]:
    """The comment lines above the source: the first alone names the run and the version (kept
    when the whole header would push the file over the run's line limit)."""
    facts = _version_facts(run_dir, found.sha)
    config = found.config
    rounds = facts["in_force"]
    where = (f"in force after round{'s' * (len(rounds) > 1)} {', '.join(map(str, rounds))}"
             if rounds else "never adopted")
    scores = [f"{name} {value:.3f}" for name, value in
              (("selection", facts["selection"]), ("test", facts["test"])) if value is not None]
    lines = [
        f"# Exported by `harness-learn export` from run {run_dir}, version {found.sha} ({asked})",
        f"# task {config.task} · Solver {config.solver} · proposed in round {facts['round']}, "
        f"{where}",
        f"# scores: {', '.join(scores) or 'none measured'} (selection: mean over the round's "
        "selection problems; test: held out, `harness-learn eval`)",
        f"# run it: {run_line(config, out_file)}",
    ]
    live = [ref for ref in [config.metric or "", *config.tools] if ref.startswith("live:")]
    if live:
        lines.append(f"# (add {', '.join(live)}: given to adapt() as Python objects)")
    # Each stays one comment line, whatever a run directory's config.json holds: a line break
    # in a task name would start a line of code in the exported harness.
    return [for_terminal(line, newlines=False) for line in lines]


def run_line(config: AdaptConfig, out_file: Path) -> str:
    """The `harness-learn run` command for the exported file with the run's own task, metric
    and tools (each quoted for a POSIX shell): without its tools a harness calling them is
    refused, and without its metric it would be scored by the task's default."""
    import shlex

    words = ["harness-learn", "run", "--task", config.task, "--harness", str(out_file)]
    if config.metric and not config.metric.startswith("live:"):
        words += ["--metric", config.metric]
    for ref in config.tools:
        if not ref.startswith("live:"):
            words += ["--tools", ref]
    return shlex.join(words)


def _version_facts(run_dir: Path, sha: str) -> dict[str, Any]:
    """Round, adopted rounds and mean scores of one version, read from the run's log."""
    from harness_learning.harnesses.rundir import RunDir
    from harness_learning.report.model import mean_score

    with RunDir(run_dir).open_store() as store:
        record = store.get_version(sha)
        steps = [s for s in store.lineage() if s.sha == sha]
        selection = next((s.selection_score for s in reversed(steps)
                          if s.selection_score is not None), None)
        if selection is None:
            selection = mean_score(list(store.iter_evaluations(sha, "selection")))
        test = mean_score(list(store.iter_evaluations(sha, "test")))
    return {"round": record.round if record is not None else "?", "selection": selection,
            "test": test, "in_force": [s.round for s in steps]}
