"""A live terminal view of an adaptation run: round, candidates, problems done, spend."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from harness_learning.cli._common import console
from harness_learning.cli.candidate_outcomes import count_outcomes, describe_counts, outcome
from harness_learning.harnesses.text_safety import for_rich, for_terminal


def _cell(text: str, width: int) -> str:
    """A table cell of a run's own text (a reason may quote a harness's error): one line of
    at most `width` characters, shown as written (rich markup escaped, escape codes gone)."""
    return for_rich(for_terminal(text, newlines=False)[:width])


class LiveView:
    """The run's live display: a header, this round's candidates and, on a terminal, a bar of
    the Solver calls spent against the estimate's bound; and, unless `lines` is off (`--json`),
    one line per judged candidate printed above it, which stays in a log or a pipe."""

    def __init__(self, config, *, bound: int = 0, spent_before: int = 0,
                 lines: bool = True) -> None:
        self.config = config
        self.round = 0
        self.stage = "starting"
        self.problems_done = 0
        self.tokens = 0
        self.calls = 0
        self.solver_calls = spent_before
        """Solver calls the run has made, this process's added to what the log held."""
        self.bound = bound
        self.lines = lines
        self.scores: list[float] = []
        self.candidates: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self._live = Live(self._render(), console=console, refresh_per_second=4, transient=True)

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._live.__exit__(*exc)

    def on_progress(self, kind: str, data: dict) -> None:
        if kind == "problem":
            self.problems_done += 1
            self.tokens += data.get("tokens", 0)
            self.calls += data.get("calls", 0)
            self.solver_calls += data.get("solver_calls", 0)
            if data.get("score") is not None:
                self.scores.append(data["score"])
        elif kind == "candidate":
            self.candidates.append(data)
            spent = data.get("spent") or {}
            self.solver_calls = max(self.solver_calls, spent.get("solver_calls", 0))
            if self.lines:
                console.print(candidate_line(data), markup=False, highlight=False,
                              soft_wrap=True)  # one line in a log, however long
        self._live.update(self._render())

    def on_update(self, node: str, update: dict) -> None:
        self.stage = node
        if node == "sample":
            self.round += 1
            self.candidates = []
            self.scores = []
        elif node == "select":
            for r in update.get("rounds", []):
                counts = describe_counts(count_outcomes(r.get("candidates", [])))
                console.print(Text(for_terminal(f"round {r['round']}: {r['decision']} "
                                                f"(candidates: {counts})"), style="bold"))
        self._live.update(self._render())

    def _render(self) -> Group:
        mean = sum(self.scores) / len(self.scores) if self.scores else 0.0
        head = Text(f"round {self.round}/{self.config.rounds} · {self.stage} · problems done "
                    f"{self.problems_done} · mean so far {mean:.3f} · tool calls {self.calls} · "
                    f"tokens {self.tokens:,} · {time.monotonic() - self.started:.0f}s")
        if self.candidates:
            head.append(f"\ncandidates so far: {describe_counts(count_outcomes(self.candidates))}")
        parts: list[Any] = [head]
        if self.bound and console.is_terminal:  # a bar draws nothing in a log or a pipe
            parts += [Text(f"Solver calls {self.solver_calls:,} of at most ~{self.bound:,} "
                           "(the estimate)"),
                      ProgressBar(total=self.bound,
                                  completed=min(self.solver_calls, self.bound), width=40)]
        table = Table("cand", "outcome", "selection", "reward", "reason", box=None)
        for c in self.candidates:
            score = c.get("selection_score")
            table.add_row(str(c["index"]), outcome(c),
                          "-" if score is None else f"{score:.3f}", f"{c['reward']:.3f}",
                          _cell(c.get("invalid_reason") or "", 60))
        return Group(*parts, table)

    def rounds_table(self, final: dict) -> Table:
        table = Table(title="adaptation rounds")
        for col in ("round", "feedback", "current sel.", "candidates valid", "outcomes",
                    "best cand.", "adopted", "decision"):
            table.add_column(col)
        for r in final.get("rounds", []):
            cands = r.get("candidates", [])
            valid = [c for c in cands if c.get("valid")]
            best = max((c["selection_score"] for c in valid), default=None)
            cur = r.get("current_selection_score")
            table.add_row(str(r["round"]), f"{r.get('feedback_score', 0):.3f}",
                          "-" if cur is None else f"{cur:.3f}", f"{len(valid)}/{len(cands)}",
                          describe_counts(count_outcomes(cands)),
                          "-" if best is None else f"{best:.3f}",
                          "yes" if r.get("adopted") else "no",
                          _cell(r.get("decision", ""), 50))
        return table


def candidate_line(data: dict[str, Any]) -> str:
    """One judged candidate, for a log: `round 1 · candidate 2 · operator:interpreter · valid ·
    selection 0.625 vs current 0.500 · spent: Solver calls 34, Proposer calls 3`. Its origin
    and invalid kind are the run's own text: shown as written, safe for a terminal."""
    verdict = outcome(data)
    if verdict not in ("valid", "raced_out", "pending"):
        verdict = f"invalid ({verdict})"
    parts = [f"round {data.get('round')}", f"candidate {data.get('index')}",
             str(data.get("origin") or "proposer"), verdict]
    score, current = data.get("selection_score"), data.get("parent_score")
    if score is not None:
        parts.append(f"selection {score:.3f} vs current "
                     + ("-" if current is None else f"{current:.3f}"))
    spent = data.get("spent")
    if spent:
        parts.append(f"spent: Solver calls {spent.get('solver_calls', 0):,}, Proposer calls "
                     f"{spent.get('proposer_calls', 0):,}")
    return for_terminal(" · ".join(parts), newlines=False)
