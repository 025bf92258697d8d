"""Inline SVG figures for the HTML report: the lineage graph, scores per round and spend per
round. Drawn by hand so the page needs no script, library or network to show them."""

from __future__ import annotations

from html import escape

from harness_learning.graphs.runreport.model import ROLLBACK_POLICY, RunRecord, short_model

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


def lineage_svg(run: RunRecord) -> str:
    """One column per round. Row 0: the version in force after the round (the adopted
    candidate, the kept version or a rollback); below it the round's other candidates. Edges
    run from the version in force before the round to everything the round produced."""
    col_w, row_h, top, left = 150, 56, 92, 20
    rows = max([1] + [1 + sum(1 for c in r.candidates if c.outcome != "adopted")
                      for r in run.rounds])
    width = max(860, left * 2 + col_w * (len(run.rounds) + 1))
    height = top + rows * row_h + 20
    body = _title(left, f"Lineage of {run.task}", f"{run.models} · run {run.run_dir.name} · "
                  "thick: the version in force after each round; dashed: candidates not adopted")
    seed = run.lineage[0] if run.lineage else None
    nodes: list[str] = []
    edges: list[str] = []

    def node(col: int, row: int, title: str, sub: str, kind: str, cid: str = "") -> tuple[float, float]:
        x, y = left + col * col_w + 10, top + row * row_h
        link = f'<a href="#{cid}">' if cid else ""
        nodes.append(f'{link}<g class="node {escape(kind)}"><rect x="{x}" y="{y}" width="{col_w - 30}" '
                     f'height="{row_h - 14}" rx="7" fill="white" stroke="{COLORS[kind]}" '
                     f'stroke-width="{3 if row == 0 else 1.5}"/>'
                     + _text(x + (col_w - 30) / 2, y + 17, title, 12, weight="bold", fill=COLORS[kind])
                     + _text(x + (col_w - 30) / 2, y + 33, sub, 11, fill="#57606a")
                     + "</g>" + ("</a>" if cid else ""))
        return x, y + (row_h - 14) / 2

    for col in range(len(run.rounds) + 1):
        body.append(_text(left + col * col_w + col_w / 2 - 5, top - 8,
                          "seed" if col == 0 else f"round {run.rounds[col - 1].round}", 11,
                          fill="#57606a"))
    heads: dict[str, tuple[float, float]] = {}
    prev = node(0, 0, "seed", f"{seed.sha[:8]} · {_f(seed.selection_score)}" if seed else "-",
                "seed")
    if seed is not None:
        heads[seed.sha] = (prev[0], top)
    for col, rnd in enumerate(run.rounds, start=1):
        outs: list[tuple[float, float, str]] = []
        adopted = next((c for c in rnd.candidates if c.outcome == "adopted"), None)
        if rnd.kind == ROLLBACK_POLICY and rnd.decision:
            head = node(col, 0, "rollback", f"to {rnd.decision.chosen_sha[:8]}", ROLLBACK_POLICY,
                        f"round-{rnd.round}")
            target = heads.get(rnd.decision.chosen_sha)
            if target is not None:  # an arc back to the version it restored
                tx, hx = target[0] + col_w - 50, head[0] + col_w - 50
                edges.append(f'<path d="M{hx:.1f},{top - 2} C{hx:.1f},{top - 34} {tx:.1f},'
                             f'{top - 34} {tx:.1f},{top - 2}" fill="none" stroke="'
                             f'{COLORS[ROLLBACK_POLICY]}" stroke-width="1.8" stroke-dasharray="5 3"/>')
        elif adopted is not None:
            head = node(col, 0, f"{adopted.id} adopted",
                        f"{(adopted.sha or '')[:8]} · {_f(adopted.proposal.selection_score)}",
                        "adopted", adopted.id)
        else:
            head = node(col, 0, "kept", f"{rnd.chosen_sha[:8]} · {_f(rnd.current_score)}", "kept",
                        f"round-{rnd.round}")
        heads.setdefault(rnd.chosen_sha, (head[0], top))
        outs.append((*head, "adopted" if adopted else "kept"))
        others = [c for c in rnd.candidates if c is not adopted]
        for row, c in enumerate(others, start=1):
            outs.append((*node(col, row, f"{c.id} {c.outcome}",
                               _f(c.proposal.selection_score) if c.proposal.valid
                               else _reason_kind(c.reason), c.outcome, c.id), c.outcome))
        for x, y, kind in outs:
            dash = ' stroke-dasharray="4 3"' if kind not in ("adopted", "kept") else ""
            edges.append(f'<path d="M{prev[0] + col_w - 30:.1f},{prev[1]:.1f} C{prev[0] + col_w - 10:.1f},'
                         f'{prev[1]:.1f} {x - 20:.1f},{y:.1f} {x:.1f},{y:.1f}" fill="none" '
                         f'stroke="{COLORS.get(kind, "#8c959f")}" stroke-width="'
                         f'{2.5 if kind in ("adopted", "kept") else 1.2}"{dash}/>')
        prev = head
    return _svg(width, height, body + edges + nodes, "lineage graph")


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


def _reason_kind(reason: str) -> str:
    return (reason.split(":", 1)[0] or "invalid")[:20]
