"""Inline SVG figures for the HTML report: the lineage graph, scores per round and spend per
round. Drawn by hand so the page needs no script, library or network to show them."""

from __future__ import annotations

from html import escape

from harness_learning.harnesses.llm.models import short_model
from harness_learning.harnesses.store import ROLLBACK_POLICY
from harness_learning.report.model import RoundRecord, RunRecord

COLORS = {"adopted": "#1a7f37", "rejected": "#bf8700", "valid": "#0969da", "raced out": "#8250df",
          "invalid": "#cf222e", "kept": "#57606a", ROLLBACK_POLICY: "#0550ae", "seed": "#24292f"}
FONT = 'font-family="system-ui, sans-serif"'


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg role="img" aria-label="{escape(label)}" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {FONT}>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, size: int = 12, anchor: str = "middle",
          weight: str = "normal", fill: str = "#24292f", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}" {extra}>{escape(text)}</text>')


COL_W, ROW_H, TOP, LEFT = 150, 56, 92, 20
"""Lineage graph grid: column width, row height, top of row 0, left margin."""


class _Lineage:
    """The lineage graph's nodes and edges, placed on a grid of rounds x candidates."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.edges: list[str] = []
        self.heads: dict[str, float] = {}
        """x of the row-0 node where each version came into force (rollback arcs end there)."""

    def node(self, col: int, row: int, title: str, sub: str, kind: str,
             anchor: str = "") -> tuple[float, float]:
        """A box, linked to `#anchor`; returns its left edge and vertical middle."""
        x, y, w = LEFT + col * COL_W + 10, TOP + row * ROW_H, COL_W - 30
        box = (f'<g class="node {escape(kind)}"><rect x="{x}" y="{y}" width="{w}" '
               f'height="{ROW_H - 14}" rx="7" fill="white" stroke="{COLORS[kind]}" '
               f'stroke-width="{3 if row == 0 else 1.5}"/>'
               + _text(x + w / 2, y + 17, title, 12, weight="bold", fill=COLORS[kind])
               + _text(x + w / 2, y + 33, sub, 11, fill="#57606a") + "</g>")
        self.nodes.append(f'<a href="#{escape(anchor)}">{box}</a>' if anchor else box)
        return x, y + (ROW_H - 14) / 2

    def edge(self, start: tuple[float, float], end: tuple[float, float], kind: str) -> None:
        (x0, y0), (x1, y1) = (start[0] + COL_W - 30, start[1]), end
        main = kind in ("adopted", "kept")
        dash = "" if main else ' stroke-dasharray="4 3"'
        self.edges.append(f'<path d="M{x0:.1f},{y0:.1f} C{x0 + 20:.1f},{y0:.1f} {x1 - 20:.1f},'
                          f'{y1:.1f} {x1:.1f},{y1:.1f}" fill="none" stroke="'
                          f'{COLORS.get(kind, "#8c959f")}" stroke-width="{2.5 if main else 1.2}"'
                          f"{dash}/>")

    def arc(self, x_from: float, x_to: float) -> None:
        """A rollback's dashed arc over the top, back to the version it restored."""
        a, b = x_from + COL_W - 50, x_to + COL_W - 50
        self.edges.append(f'<path d="M{a:.1f},{TOP - 2} C{a:.1f},{TOP - 34} {b:.1f},{TOP - 34} '
                          f'{b:.1f},{TOP - 2}" fill="none" stroke="{COLORS[ROLLBACK_POLICY]}" '
                          'stroke-width="1.8" stroke-dasharray="5 3"/>')

    def column(self, col: int, rnd: RoundRecord, prev: tuple[float, float]) -> tuple[float, float]:
        """Round `rnd`'s column; returns the node of the version in force after it."""
        adopted = next((c for c in rnd.candidates if c.outcome == "adopted"), None)
        if rnd.kind == ROLLBACK_POLICY and rnd.decision:
            head = self.node(col, 0, "rollback", f"to {rnd.decision.chosen_sha[:8]}",
                             ROLLBACK_POLICY, f"round-{rnd.round}")
            if rnd.decision.chosen_sha in self.heads:
                self.arc(head[0], self.heads[rnd.decision.chosen_sha])
        elif adopted is not None:
            head = self.node(col, 0, f"{adopted.id} adopted", f"{(adopted.sha or '')[:8]} · "
                             f"{_f(adopted.proposal.selection_score)}", "adopted", adopted.id)
        else:
            head = self.node(col, 0, "kept", f"{rnd.chosen_sha[:8]} · {_f(rnd.current_score)}",
                             "kept", f"round-{rnd.round}")
        self.heads.setdefault(rnd.chosen_sha, head[0])
        self.edge(prev, head, "adopted" if adopted else "kept")
        for row, c in enumerate((c for c in rnd.candidates if c is not adopted), start=1):
            sub = (_f(c.proposal.selection_score) if c.proposal.valid
                   else (c.proposal.invalid_kind or "invalid")[:20])
            self.edge(prev, self.node(col, row, f"{c.id} {c.outcome}", sub, c.outcome, c.id),
                      c.outcome)
        return head


def lineage_svg(run: RunRecord) -> str:
    """One column per round. Row 0: the version in force after the round (the adopted
    candidate, the kept version or a rollback); below it the round's other candidates. Edges
    run from the version in force before the round to everything the round produced."""
    rows = max([1] + [1 + sum(1 for c in r.candidates if c.outcome != "adopted")
                      for r in run.rounds])
    width = max(860, LEFT * 2 + COL_W * (len(run.rounds) + 1))
    body = _title(LEFT, f"Lineage of {run.task}", f"{run.models} · run {run.run_dir.name} · "
                  "thick: the version in force after each round; dashed: candidates not adopted")
    for col in range(len(run.rounds) + 1):
        body.append(_text(LEFT + col * COL_W + COL_W / 2 - 5, TOP - 8,
                          "seed" if col == 0 else f"round {run.rounds[col - 1].round}", 11,
                          fill="#57606a"))
    graph = _Lineage()
    seed = run.lineage[0] if run.lineage else None
    prev = graph.node(0, 0, "seed", f"{seed.sha[:8]} · {_f(seed.selection_score)}" if seed
                      else "-", "seed")
    if seed is not None:
        graph.heads[seed.sha] = prev[0]
    for col, rnd in enumerate(run.rounds, start=1):
        prev = graph.column(col, rnd, prev)
    return _svg(width, TOP + rows * ROW_H + 20, body + graph.edges + graph.nodes, "lineage graph")


def scores_svg(run: RunRecord) -> str:
    """Selection score of the version in force per round, each candidate's selection score, and
    the held-out test score of each version in force where `harness-learn eval` measured it."""
    w, h, ml, mr, mt, mb = 860, 340, 64, 170, 56, 52
    n = max(1, len(run.lineage) - 1)
    x = lambda r: ml + (w - ml - mr) * (r / n)  # noqa: E731
    y = lambda s: mt + (h - mt - mb) * (1 - s)  # noqa: E731
    body = _title(ml - 40, f"Scores per round on {run.task}", f"{run.models} · run "
                  f"{run.run_dir.name} · selection: the dev problems the policy judged on; "
                  "test: held-out problems")
    for tick in (0, 0.25, 0.5, 0.75, 1):
        body.append(f'<line x1="{ml}" x2="{w - mr}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                    'stroke="#d0d7de" stroke-width="1"/>')
        body.append(_text(ml - 8, y(tick) + 4, f"{tick:.2f}", 11, "end"))
    rollbacks = {r.round for r in run.rounds if r.kind == ROLLBACK_POLICY}
    for step in run.lineage:
        label = f"{step.round} (rollback)" if step.round in rollbacks else str(step.round)
        body.append(_text(x(step.round), h - mb + 18, label, 11))
    body.append(_text((ml + w - mr) / 2, h - 10, "round (0 = seed)", 12))
    body.append(_text(16, (mt + h - mb) / 2, "mean score", 12,
                      extra=f'transform="rotate(-90 16 {(mt + h - mb) / 2:.1f})"'))
    for rnd in run.rounds:
        for c in rnd.candidates:
            if c.proposal.selection_score is not None:
                body.append(f'<circle cx="{x(rnd.round):.1f}" cy="{y(c.proposal.selection_score):.1f}" '
                            f'r="4" fill="{COLORS[c.outcome]}" opacity="0.55"><title>{escape(c.id)} '
                            f'{c.outcome} {c.proposal.selection_score:.3f}</title></circle>')
    series = [("selection (in force)", "#0969da",
               [(s.round, s.selection_score) for s in run.lineage]),
              ("test (held out)", "#1a7f37",
               [(s.round, run.test_scores.get(s.sha)) for s in run.lineage])]
    legend_y = mt + 6
    for (name, color, points), dash in zip(series, ("", ' stroke-dasharray="7 4"'), strict=True):
        pts = [(x(r), y(v)) for r, v in points if v is not None]
        if not pts:
            continue
        body.append(f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in pts)}" '
                    f'fill="none" stroke="{color}" stroke-width="2.5"{dash}/>')
        body += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="{5.5 if dash else 4}" fill="none" '
                 f'stroke="{color}" stroke-width="2"/>' for a, b in pts]
        body += [f'<line x1="{w - mr + 16}" x2="{w - mr + 40}" y1="{legend_y}" y2="{legend_y}" '
                 f'stroke="{color}" stroke-width="2.5"{dash}/>',
                 _text(w - mr + 46, legend_y + 4, name, 11, "start")]
        legend_y += 20
    body += [f'<circle cx="{w - mr + 28}" cy="{legend_y}" r="4" fill="#8c959f"/>',
             _text(w - mr + 46, legend_y + 4, "candidates", 11, "start")]
    return _svg(w, h, body, "scores per round")


def spend_svg(run: RunRecord) -> str:
    """Tokens per round, Solver and Proposer stacked."""
    w, h, ml, mr, mt, mb = 860, 270, 64, 190, 52, 46
    rounds = [r for r in run.rounds if r.kind != ROLLBACK_POLICY]
    peak = max([1] + [r.spend["solver_tokens"] + r.spend["proposer_tokens"] for r in rounds])
    bar = (w - ml - mr) / max(1, len(rounds))
    y = lambda v: mt + (h - mt - mb) * (1 - v / peak)  # noqa: E731
    body = [*_title(ml - 40, f"Tokens per round on {run.task}",
                    f"{run.models} · run {run.run_dir.name}"),
            _text((ml + w - mr) / 2, h - 8, "round", 12),
            _text(16, (mt + h - mb) / 2, "tokens", 12,
                  extra=f'transform="rotate(-90 16 {(mt + h - mb) / 2:.1f})"')]
    for tick in (0, 0.5, 1):
        body.append(_text(ml - 8, y(peak * tick) + 4, f"{int(peak * tick):,}", 11, "end"))
        body.append(f'<line x1="{ml}" x2="{w - mr}" y1="{y(peak * tick):.1f}" '
                    f'y2="{y(peak * tick):.1f}" stroke="#d0d7de"/>')
    for i, rnd in enumerate(rounds):
        x0 = ml + i * bar + bar * 0.2
        solver, proposer = rnd.spend["solver_tokens"], rnd.spend["proposer_tokens"]
        body.append(f'<rect x="{x0:.1f}" y="{y(solver):.1f}" width="{bar * 0.6:.1f}" '
                    f'height="{y(0) - y(solver):.1f}" fill="#0969da"><title>solver {solver:,}</title></rect>')
        body.append(f'<rect x="{x0:.1f}" y="{y(solver + proposer):.1f}" width="{bar * 0.6:.1f}" '
                    f'height="{y(solver) - y(solver + proposer):.1f}" fill="#bf8700">'
                    f'<title>proposer {proposer:,}</title></rect>')
        body.append(_text(x0 + bar * 0.3, h - mb + 16, str(rnd.round), 11))
    for j, (name, color) in enumerate((("Solver", "#0969da"), ("Proposer", "#bf8700"))):
        body += [f'<rect x="{w - mr + 16}" y="{mt + j * 20}" width="14" height="10" fill="{color}"/>',
                 _text(w - mr + 36, mt + j * 20 + 9, f"{name} ({short_model(run.config.get(name.lower()))})",
                       11, "start")]
    return _svg(w, h, body, "tokens per round")


def _title(x: float, title: str, subtitle: str) -> list[str]:
    return [_text(x, 20, title, 14, "start", "bold"),
            _text(x, 37, subtitle, 11, "start", fill="#57606a")]


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"

