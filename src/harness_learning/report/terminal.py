"""`harness-learn show`: a run in the terminal (rich renderables, so pipes get plain text)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from harness_learning.harnesses.store import ROLLBACK_POLICY
from harness_learning.harnesses.text_safety import for_rich, for_terminal
from harness_learning.report.model import (
    SPEND_COLUMNS,
    CandidateRecord,
    RunRecord,
    spend_cell,
)

STYLES = {"adopted": "bold green", "rejected": "yellow", "valid": "cyan", "raced out": "magenta",
          "invalid": "red", ROLLBACK_POLICY: "bold blue", "kept": "dim"}


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def run_summary(run: RunRecord) -> RenderableType:
    """Heading, lineage tree, round table, spend."""
    head = Text(for_terminal(run.title), style="bold")
    stop = f"stopped: {run.stop_reason}" if run.stop_reason else "not finished (or still running)"
    current = (run.current_sha or "")[:12]
    flagged = [Text(run.flag_line(), style="bold red")] if run.flags else []
    facts = Text(for_terminal(f"{stop} · current version {current} · log {run.log}"))
    return Group(head, facts, *flagged,
                 *failure_lines(run), Text(""), lineage_tree(run), Text(""), rounds_table(run), Text(""),
                 *memory_lines(run), *experience_lines(run), spend_table(run))


def memory_lines(run: RunRecord) -> list[Text]:
    """Per round, the run memory its Proposer was given (earlier candidates, most informative
    first); nothing for rounds that had none."""
    out: list[Text] = []
    for rnd in run.rounds:
        if rnd.memory:
            out.append(Text(f"round {rnd.round}: the Proposer was shown {len(rnd.memory)} "
                            "earlier candidate(s)", style="bold"))
            out += [Text("  " + for_terminal(line, newlines=False)) for line in rnd.memory]
    return [*out, Text("")] if out else []


def experience_lines(run: RunRecord) -> list[Text]:
    """Per candidate, the experience-library entry it came from and the entries its prompt
    showed as past successes, then the arms the learned choice left out; nothing for a run
    without a library."""
    out = [Text(for_terminal(f"{pid}: {line}", newlines=False))
           for pid, used in sorted(run.experience.items()) for line in used_lines(used)]
    out += [Text(for_terminal(line, newlines=False)) for _, line in sorted(run.left_out.items())]
    return [Text("experience library", style="bold"), *out, Text("")] if out else []


def used_lines(used: dict) -> list[str]:
    lines = [f"came from entry {used['from'][:12]}"] if used.get("from") else []
    if used.get("shown"):
        lines.append("was shown past successes " + ", ".join(i[:12] for i in used["shown"]))
    return lines


def failure_lines(run: RunRecord) -> list[Text]:
    """One line each for the problems the user's metric failed on and the user's tools' raised
    calls (count and first message), so neither passes silently; none when nothing failed."""
    return [Text(for_terminal(line), style="yellow") for line in run.failures.lines()]


def lineage_tree(run: RunRecord) -> Tree:
    """The seed, then per round what was in force and what each candidate became."""
    seed = run.lineage[0].sha if run.lineage else "?"
    tree = Tree(Text(f"seed {seed[:12]}  selection {fmt(run.lineage[0].selection_score)}"
                     f"{_test(run, seed)}", style="bold") if run.lineage else Text("no versions"))
    node = tree
    for rnd in run.rounds:
        decided = rnd.decision
        if rnd.kind == ROLLBACK_POLICY and decided is not None:
            node = node.add(Text(f"round {rnd.round}: rollback to {decided.chosen_sha[:12]} · "
                                 f"{for_terminal(decided.reason)}", style=STYLES[ROLLBACK_POLICY]))
            continue
        branch = node.add(Text(f"round {rnd.round}: "
                               f"{for_terminal(decided.reason) if decided else 'in progress'}"))
        # The adopted candidate last: the chain goes on below it, after its round's others.
        for c in sorted(rnd.candidates, key=lambda c: c.outcome == "adopted"):
            label = f"{c.id} {c.outcome}"
            if c.sha:
                label += f" {c.sha[:12]}"
            label += f" · selection {fmt(c.proposal.selection_score)} · reward " \
                     f"{fmt(c.proposal.reward)}"
            if c.outcome != "adopted":
                label += f" · {_short(c.reason, 70)}"
            leaf = branch.add(Text(label, style=STYLES.get(c.outcome, "")))
            if c.outcome == "adopted":
                leaf.label = Text(f"{label}{_test(run, c.sha or '')}", style=STYLES["adopted"])
                node = leaf
    return tree


def rounds_table(run: RunRecord) -> Table:
    table = Table(title="candidates per round", title_justify="left")
    for col in ("round", "candidate", "from", "outcome", "selection", "reward", "tokens",
                "reason"):
        table.add_column(col, overflow="fold")
    for rnd in run.rounds:
        if rnd.kind == ROLLBACK_POLICY and rnd.decision is not None:
            table.add_row(str(rnd.round), "-", "-", Text("rollback", STYLES[ROLLBACK_POLICY]),
                          fmt((rnd.decision.scores or {}).get("chosen")), "-", "0",
                          _cell(rnd.decision.reason, 60))
            continue
        table.add_row(str(rnd.round), "current", "-", Text("in force", "dim"),
                      fmt(rnd.current_score),
                      "-", "-", f"feedback score {fmt(rnd.feedback_score)}")
        for c in rnd.candidates:
            table.add_row("", c.id, c.proposal.origin, Text(c.outcome, STYLES.get(c.outcome, "")),
                          fmt(c.proposal.selection_score), fmt(c.proposal.reward),
                          f"{c.tokens:,}", _cell(c.reason, 60))
    return table


def spend_table(run: RunRecord) -> Table:
    """Per round and in all (the held-out test included): calls, tokens and $ of each role."""
    table = Table(title="spend", title_justify="left")
    for col in ("round", *(heading for heading, _ in SPEND_COLUMNS)):
        table.add_column(col, justify="right")
    for rnd in run.rounds:
        if rnd.kind == ROLLBACK_POLICY:
            continue
        table.add_row(str(rnd.round), *(spend_cell(key, rnd.spend) for _, key in SPEND_COLUMNS))
    table.add_row("all", *(spend_cell(key, run.spent) for _, key in SPEND_COLUMNS), style="bold")
    return table


def candidate_detail(run: RunRecord, c: CandidateRecord) -> RenderableType:
    """`show --candidate ID`: outcome, diff, the Proposer's report, per-problem results."""
    p = c.proposal
    head = Text(for_terminal(f"{c.id} (round {p.round}, candidate {c.index}, from {p.origin}) · "
                             f"{c.outcome} · {c.reason}"),
                style=STYLES.get(c.outcome, "bold"))
    facts = Text(f"parent {(p.parent_sha or '')[:12]} · version {(c.sha or 'none')[:12]} · "
                 f"selection {fmt(p.selection_score)} · reward {fmt(p.reward)} · "
                 f"{p.prompt_tokens:,}+{p.completion_tokens:,} tokens · {p.latency_s:.1f}s · "
                 f"finish {for_terminal(p.finish_reason, newlines=False)}")
    diff: RenderableType = (Syntax(for_terminal(c.diff), "diff", word_wrap=True) if c.diff
                            else Text("(no diff: the edit did not apply)", style="dim"))
    parts: list[RenderableType] = [head, facts, Text("\ndiff", style="bold"), diff,
                                   Text("\nreport the Proposer saw", style="bold"),
                                   Text(for_terminal(c.report or "(none logged)"))]
    parts += [Text(for_terminal(f"experience: {line}")) for line in
              used_lines(run.experience.get(c.id) or {})]
    if not c.diff:
        parts += [Text("\nProposer reply", style="bold"), Text(for_terminal(p.completion))]
    parts += [Text(""), results_table(f"per-problem selection results of {c.id}", c.results)]
    return Group(*parts)


def results_table(title: str, results: list[Any]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("problem", "answer", "score", "error", "tool calls", "tokens"):
        table.add_column(col, overflow="fold")
    for e in (ev.result for ev in results):
        table.add_row(_cell(e.problem_id, 80), _cell(e.answer, 40), fmt(e.score),
                      _cell(f"{e.error_kind}: {e.error}" if e.error_kind else "", 50),
                      str(len(e.calls)), f"{e.tokens:,}")
    if not results:
        table.add_row("(none: never evaluated)", "", "", "", "", "")
    return table


def _test(run: RunRecord, sha: str) -> str:
    score = run.test_scores.get(sha)
    return "" if score is None else f" · test {score:.3f}"


def _short(text: object, width: int) -> str:
    """One line of at most `width` characters a terminal may show as is (`for_terminal`)."""
    text = " ".join(for_terminal(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(text: object, width: int) -> str:
    """`_short` for a table cell, which rich reads as markup: a harness's `[/]` is shown, not
    parsed."""
    return for_rich(_short(text, width))
