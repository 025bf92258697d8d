"""`harness-learn report`: the run as one self-contained HTML page. Styles and figures are inline
and nothing is loaded from anywhere, so the file opens from disk, offline, and can be mailed."""

from __future__ import annotations

import dataclasses
import json
from html import escape
from typing import Any

from harness_learning.harnesses.llm.models import short_model
from harness_learning.harnesses.store import ROLLBACK_POLICY
from harness_learning.report.model import (
    SPEND_COLUMNS,
    CandidateRecord,
    RoundRecord,
    RunRecord,
    spend_cell,
)
from harness_learning.report.svg import COLORS, lineage_svg, scores_svg, spend_svg

TRACE_CHARS = 3000
CSS = """
body{font:14px/1.45 system-ui,sans-serif;color:#24292f;margin:0;background:#f6f8fa}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 10px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}h4{font-size:13px;margin:10px 0 2px}.sub{color:#57606a}
.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:14px 16px;margin:10px 0;overflow-x:auto}
.facts{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.fact{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:8px 14px}
.fact b{display:block;font-size:18px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #eaeef2;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;border-radius:10px;padding:0 8px;color:#fff;font-size:12px;font-weight:600}
pre{background:#f6f8fa;border-radius:6px;padding:8px 10px;overflow-x:auto;font-size:12px;margin:6px 0;white-space:pre-wrap}
pre.diff .add{color:#116329;background:#dafbe1}pre.diff .del{color:#82071e;background:#ffebe9}
pre.diff .hunk{color:#0550ae}details{margin:4px 0}summary{cursor:pointer;color:#0969da}
svg{max-width:100%;height:auto;background:#fff}
"""


def render_html(run: RunRecord) -> str:
    body = [_header(run), '<h2 id="lineage">Lineage</h2><div class="card">', lineage_svg(run),
            "</div>", '<h2 id="scores">Scores</h2><div class="card">', scores_svg(run), "</div>",
            _test_table(run), '<h2 id="rounds">Rounds and candidates</h2>',
            *[_round(run, r) for r in run.rounds],
            '<h2 id="spend">Spend</h2><div class="card">', spend_svg(run), _spend_table(run),
            "</div>", _config(run)]
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<title>{escape(run.title)}</title><style>{CSS}</style></head>"
            f"<body><main>{''.join(body)}</main></body></html>")


def _header(run: RunRecord) -> str:
    cands = [c for r in run.rounds for c in r.candidates]
    counts = {k: sum(1 for c in cands if c.outcome == k) for k in COLORS if k in
              ("adopted", "rejected", "valid", "raced out", "invalid")}
    seed, last = (run.lineage[0], run.lineage[-1]) if run.lineage else (None, None)
    facts = [("task", run.task), ("solver", short_model(run.config.get("solver"))),
             ("proposer", short_model(run.config.get("proposer"))),
             ("policy", run.config.get("policy")),
             ("rounds", len([r for r in run.rounds if r.kind == "round"])),
             ("candidates", " · ".join(f"{v} {k}" for k, v in counts.items() if v) or "0"),
             ("current version", (run.current_sha or "-")[:12]),
             ("selection seed → now", f"{_f(seed.selection_score if seed else None)} → "
                                      f"{_f(last.selection_score if last else None)}"),
             ("tokens", f"{run.spent.get('tokens', 0):,}"),
             ("cost", spend_cell("cost_usd", run.spent))]
    facts += [tuple(line.split(": ", 1)) for line in run.failures.lines()]  # metric, tool errors
    if run.flags:
        facts.append(("flagged problems", run.flag_line().removeprefix("flagged problems: ")))
    cells = "".join(f'<div class="fact">{escape(k)}<b>{escape(str(v))}</b></div>' for k, v in facts)
    stop = run.stop_reason or "not finished (or still running)"
    return (f"<h1>Run report: {escape(run.run_dir.name)}</h1><div class=sub>{escape(run.title)} · "
            f"run id {escape(run.run_id)} · stopped: {escape(stop)}</div>"
            f'<div class="facts">{cells}</div>')


def _round(run: RunRecord, rnd: RoundRecord) -> str:
    d = rnd.decision
    anchor = f'id="round-{rnd.round}"'
    if rnd.kind == ROLLBACK_POLICY and d is not None:
        return (f'<div class="card" {anchor}><h3>Round {rnd.round}: {_badge(ROLLBACK_POLICY)} to '
                f"{escape(d.chosen_sha[:12])}</h3><div>{escape(d.reason)}</div>"
                f"<div class=sub>from {escape(d.current_sha[:12])}</div></div>")
    head = (f"<h3>Round {rnd.round}</h3><div>decision: <b>{escape(d.reason if d else 'in progress')}"
            f"</b> · policy {escape(d.policy if d else '-')}</div><div class=sub>version in force "
            f"{escape(rnd.current_sha[:12])} · feedback score {_f(rnd.feedback_score)} · selection "
            f"score {_f(rnd.current_score)}</div>")
    rows = "".join(
        f'<tr><td><a href="#{c.id}">{escape(c.id)}</a></td><td>{escape(c.proposal.origin)}</td>'
        f"<td>{_badge(c.outcome)}</td>"
        f'<td class=num>{_f(c.proposal.selection_score)}</td><td class=num>{_f(c.proposal.reward)}</td>'
        f"<td class=num>{c.tokens:,}</td><td>{escape(c.reason[:200])}</td></tr>" for c in rnd.candidates)
    table = ("<table><tr><th>candidate</th><th>from</th><th>outcome</th><th class=num>selection</th>"
             f"<th class=num>reward</th><th class=num>Proposer tokens</th><th>reason</th></tr>"
             f"{rows}</table>")
    feedback = _details(f"feedback problems of the version in force ({len(rnd.feedback)})",
                        _results(rnd.feedback))
    report = _details("the report the Proposer saw", f"<pre>{escape(_report(rnd))}</pre>")
    if rnd.memory:
        report += _details(f"the run memory the Proposer was given ({len(rnd.memory)} earlier "
                           "candidates)", f"<pre>{escape(chr(10).join(rnd.memory))}</pre>")
    report += _details("the Proposer's whole prompt", _prompt(rnd))
    if rnd.round in run.left_out:  # the learned choice tried fewer arms than it could
        report += f"<div class=sub>learned choice: {escape(run.left_out[rnd.round])}</div>"
    cands = "".join(_candidate(c, run.experience.get(c.id)) for c in rnd.candidates)
    return f'<div class="card" {anchor}>{head}{table}{report}{feedback}{cands}</div>'


def _candidate(c: CandidateRecord, used: dict | None = None) -> str:
    """A candidate's card; `used`: the experience-library entries it came from or was shown."""
    from harness_learning.report.terminal import used_lines

    p = c.proposal
    facts = (f"parent {escape((p.parent_sha or '')[:12])} · version {escape((c.sha or 'none')[:12])}"
             f" · {p.prompt_tokens:,}+{p.completion_tokens:,} tokens · {p.latency_s:.1f}s · "
             f"finish {escape(str(p.finish_reason))} · model {escape(p.model)}")
    diff = (f'<pre class="diff">{_diff_html(c.diff)}</pre>' if c.diff
            else "<div class=sub>no diff: the edit did not apply</div>")
    parts = json.dumps(p.reward_parts, sort_keys=True, default=str)
    return (f'<div id="{escape(c.id)}" class="candidate"><h3>{escape(c.id)} {_badge(c.outcome)}</h3>'
            f"<div>{escape(c.reason)}</div><div class=sub>{facts}</div>"
            + "".join(f"<div class=sub>experience: {escape(line)}</div>"
                      for line in used_lines(used or {})) + diff
            + _details("Proposer reply", f"<pre>{escape(p.completion)}</pre>")
            + _details(f"per-problem selection results ({len(c.results)})", _results(c.results))
            + _details("reward parts", f"<pre>{escape(parts)}</pre>") + "</div>")


def _results(results: list[Any]) -> str:
    if not results:
        return "<div class=sub>not evaluated</div>"
    rows = []
    for e in (ev.result for ev in results):
        trace = json.dumps([dataclasses.asdict(c) for c in e.calls], indent=1, default=str)
        if len(trace) > TRACE_CHARS:
            trace = trace[:TRACE_CHARS] + f"\n… ({len(trace) - TRACE_CHARS:,} more characters)"
        error = f"{e.error_kind}: {e.error}" if e.error_kind else ""
        rows.append(f"<tr><td>{escape(e.problem_id)}</td><td>{escape(str(e.answer)[:120])}</td>"
                    f"<td class=num>{_f(e.score)}</td><td>{escape(error[:200])}</td>"
                    f"<td class=num>{e.tokens:,}</td><td>{_details(f'trace ({len(e.calls)} calls)', f'<pre>{escape(trace)}</pre>')}</td></tr>")
    return ("<table class=results><tr><th>problem</th><th>answer</th><th class=num>score</th>"
            f"<th>error</th><th class=num>tokens</th><th>trace</th></tr>{''.join(rows)}</table>")


def _test_table(run: RunRecord) -> str:
    if not run.test_scores:
        return ("<div class=sub>No held-out test scores yet: <code>harness-learn eval "
                f"{escape(str(run.run_dir))}</code> measures them.</div>")
    rows = "".join(f"<tr><td>{s.round}</td><td>{escape(s.sha[:12])}</td><td class=num>"
                   f"{_f(s.selection_score)}</td><td class=num>{_f(run.test_scores.get(s.sha))}</td>"
                   f"<td class=num>{len(run.test_results.get(s.sha, []))}</td></tr>"
                   for s in run.lineage)
    shown: set[str] = set()
    traces = ""
    for s in run.lineage:
        if s.sha in shown:
            continue
        shown.add(s.sha)
        results = run.test_results.get(s.sha, [])
        traces += _details(f"held-out test results of {s.sha[:12]} (round {s.round}, "
                           f"{len(results)} problems)", _results(results))
    return ('<div class="card"><table id="test-scores"><tr><th>round</th><th>version in force</th>'
            "<th class=num>selection</th><th class=num>test</th><th class=num>test problems</th></tr>"
            f"{rows}</table>{traces}</div>")


def _spend_table(run: RunRecord) -> str:
    rows = "".join("<tr><td>" + str(r.round) + "</td>" + "".join(
        f"<td class=num>{spend_cell(k, r.spend)}</td>" for _, k in SPEND_COLUMNS) + "</tr>"
        for r in run.rounds if r.kind != ROLLBACK_POLICY)
    total = "".join(f"<td class=num><b>{spend_cell(k, run.spent)}</b></td>"
                    for _, k in SPEND_COLUMNS)
    head = "".join(f"<th class=num>{escape(h)}</th>" for h, _ in SPEND_COLUMNS)
    return (f"<table id=spend-table><tr><th>round</th>{head}</tr>{rows}<tr><td><b>all (incl. test)"
            f"</b></td>{total}</tr></table>")


def _config(run: RunRecord) -> str:
    text = json.dumps(run.config, indent=2, sort_keys=True, default=str)
    return f'<h2 id="config">Configuration</h2><div class="card"><pre>{escape(text)}</pre></div>'


def _prompt(rnd: RoundRecord) -> str:
    """Every message the round's Proposer calls were given (one prompt per round)."""
    prompt = rnd.candidates[0].proposal.prompt if rnd.candidates else None
    if not isinstance(prompt, list):
        return f"<pre>{escape(str(prompt or '(none)'))}</pre>"
    return "".join(f"<h4>{escape(str(m.get('role', '?')))}</h4><pre>{escape(str(m.get('content', '')))}</pre>"
                   for m in prompt if isinstance(m, dict))


def _report(rnd: RoundRecord) -> str:
    return rnd.candidates[0].report if rnd.candidates else "(no Proposer call this round)"


def _diff_html(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        cls = ("hunk" if line.startswith("@@") else "add" if line.startswith("+")
               and not line.startswith("+++") else "del" if line.startswith("-")
               and not line.startswith("---") else "")
        out.append(f'<span class="{cls}">{escape(line)}</span>' if cls else escape(line))
    return "\n".join(out)


def _details(summary: str, content: str) -> str:
    return f"<details><summary>{escape(summary)}</summary>{content}</details>"


def _badge(kind: str) -> str:
    return f'<span class="badge" style="background:{COLORS.get(kind, "#57606a")}">{escape(kind)}</span>'


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
