"""A person steering a run from outside it: read whether it waits at the approval gate, and roll
it back to an earlier version. A rollback is a decision in the log (policy "rollback"), so the
lineage, `show`, `report`, `eval` and `load_harness(run_dir)` all see the version it made current."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_learning.graphs.adapter.checkpoints import has_checkpoints, open_checkpointer
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.graph import build_adapter_graph
from harness_learning.graphs.adapter.run import THREAD, load_config
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.store import ROLLBACK_POLICY, Decision, LineageStep, LogStore

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot


@contextlib.asynccontextmanager
async def adapter_app(run_dir: str | Path, *, exclusive: bool = False,
                      store: str = "") -> AsyncIterator[CompiledStateGraph | None]:
    """The run's adapter graph on its checkpoints (None when the run never started).
    `exclusive`: to change the run, which a PostgreSQL run refuses while another process
    drives it (see `graphs.adapter.checkpoints`). `store`: the log store URL the user gave
    (`--store`), instead of the one config.json names."""
    config = load_config(run_dir)
    if store:
        config = config.replace(store=store)
    run = RunDir(run_dir)
    if not has_checkpoints(run, config.store):
        yield None
        return
    async with AdapterContext.from_config(config) as ctx:
        store = await ctx.aget("store")
        async with open_checkpointer(run, store, exclusive=exclusive) as saver:
            yield build_adapter_graph(ctx).compile(checkpointer=saver)


async def _snapshot(app: CompiledStateGraph | None) -> StateSnapshot | None:
    snapshot = await app.aget_state(THREAD) if app is not None else None
    return snapshot if snapshot is not None and snapshot.values else None


def pending_approval(run_dir: str | Path, store: str = "") -> dict[str, Any] | None:
    """What the approval gate asks (round, candidate, diff, scores), or None if it waits not."""

    async def read() -> dict[str, Any] | None:
        async with adapter_app(run_dir, store=store) as app:
            snapshot = await _snapshot(app)
        if snapshot is None:
            return None
        asks = [i.value for task in snapshot.tasks for i in task.interrupts]
        return asks[0] if asks else None

    return asyncio.run(read())


def resolve_version(store: LogStore, lineage: list[LineageStep], version: str) -> tuple[str, str]:
    """A version named by the round that put it in force (`0`/`seed`, `2`) or by a sha prefix of
    any stored version; returns (sha, how it was named)."""
    key = version.strip().lower().removeprefix("round").strip()
    if key == "seed":
        key = "0"
    if key.isdigit() and len(key) < 6:
        steps = [s for s in lineage if s.round == int(key)]
        if not steps:
            rounds = ", ".join(str(s.round) for s in lineage)
            raise ValueError(f"no round {key} in the lineage (rounds: {rounds})")
        return steps[-1].sha, f"round {key}'s version"
    if len(key) < 6:
        raise ValueError(f"version {version!r}: give a round number or at least 6 hex digits of a sha")
    shas = [v.sha for v in store.iter_versions() if v.sha.startswith(key)]
    if len(shas) != 1:
        raise ValueError(f"version {version!r} matches {len(shas)} stored versions; give more of "
                         "its sha (`harness-learn show RUN` lists them)")
    return shas[0], f"version {shas[0][:12]}"


def rollback(run_dir: str | Path, version: str, reason: str = "", store: str = "") -> Decision:
    """Make an earlier version current, as a decision after the last round. Refused while the
    run is unfinished (it would keep its own current version): resume it to its end first."""
    return asyncio.run(_rollback(Path(run_dir), version, reason, store))


async def _rollback(run_dir: Path, version: str, reason: str, store_url: str) -> Decision:
    async with adapter_app(run_dir, exclusive=True, store=store_url) as app:
        snapshot = await _snapshot(app)
        if snapshot is not None and snapshot.next:
            raise ValueError(f"{run_dir} is not finished (next: {', '.join(snapshot.next)}); "
                             "roll back once it has stopped: `harness-learn resume` runs it to "
                             "its end")
        with RunDir(run_dir).open_store(store_url or None) as store:
            decision = _record_rollback(store, version, reason)
        if snapshot is not None:  # the checkpoint agrees, for Studio and any later resume
            await app.aupdate_state(THREAD, {"current_sha": decision.chosen_sha,
                                             "round": decision.round + 1}, as_node="finish")
    return decision


def _record_rollback(store: LogStore, version: str, reason: str) -> Decision:
    lineage = store.lineage()
    if not lineage:
        raise ValueError("the run has no versions yet")
    sha, named = resolve_version(store, lineage, version)
    current = lineage[-1]
    if sha == current.sha:
        raise ValueError(f"{named} ({sha[:12]}) is already the current version")
    score = next((s.selection_score for s in reversed(lineage) if s.sha == sha), None)
    number = max([d.round for d in store.iter_decisions()] + [0]) + 1
    text = f"rolled back to {named} by a person" + (f": {reason}" if reason else "")
    decision = Decision(number, current.sha, sha, ROLLBACK_POLICY, text,
                        {"current": current.selection_score, "chosen": score})
    store.put_decision(decision)
    store.append_event("rollback", {"round": number, "from": current.sha, "to": sha,
                                    "reason": reason})
    return decision
