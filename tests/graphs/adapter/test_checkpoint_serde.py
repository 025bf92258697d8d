"""A checkpoint is data: a run directory whose checkpoints.sqlite names a callable (here
`os.system` and `subprocess.check_call`, told to create a marker file) is refused by `approve`
and `resume` with one line naming the file, and the callable is never called. LangGraph's
serializer as configured by default does call it (checked first, so the crafted file is known
to be live); the adapter's own checkpoints, interrupt and answer included, still load (an
honest run end to end: tests/graphs/test_approval_cli.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosqlite
import ormsgpack
import pytest
from cli_run import cli, error_line
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    JsonPlusSerializer,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command, Interrupt

from harness_learning.graphs.adapter.checkpoint_serde import (
    CheckpointRefused,
    CheckpointSerializer,
)
from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.run import THREAD, prepare
from harness_learning.harnesses.rundir import RunDir


def payloads(marker: Path) -> dict[str, ormsgpack.Ext]:
    """Checkpoint values naming a callable that creates `marker` when revived."""
    return {
        "os.system": ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, ormsgpack.packb(
            ["os", "system", f"touch {marker}"])),
        "subprocess.check_call": ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, ormsgpack.packb(
            ["subprocess", "check_call", [["touch", str(marker)]]])),
    }


def crafted_run(run_dir: Path, value: ormsgpack.Ext) -> RunDir:
    """A run directory as someone might hand it over: a valid config.json and a
    checkpoints.sqlite whose latest checkpoint carries `value`, written as LangGraph would."""
    prepare(AdaptConfig(task="rg:basic_arithmetic", run_dir=str(run_dir), rounds=1,
                        approval=True))  # config.json as `adapt` writes it
    run = RunDir(run_dir)

    async def write() -> None:
        async with aiosqlite.connect(str(run.checkpoints)) as conn:
            saver = AsyncSqliteSaver(conn, serde=JsonPlusSerializer())
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"run_dir": value, "round": 1}
            checkpoint["channel_versions"] = {"run_dir": 1, "round": 1}
            config = {"configurable": {**THREAD["configurable"], "checkpoint_ns": ""}}
            await saver.aput(config, checkpoint, {"source": "loop", "step": 1}, {})

    asyncio.run(write())
    return run


def stored_values(run: RunDir) -> list[tuple[str, bytes]]:
    async def read() -> list[tuple[str, bytes]]:
        async with aiosqlite.connect(str(run.checkpoints)) as conn:
            rows = await conn.execute_fetchall("SELECT type, checkpoint FROM checkpoints")
        return [(kind, bytes(blob)) for kind, blob in rows]

    return asyncio.run(read())


@pytest.mark.parametrize("name", ["os.system", "subprocess.check_call"])
def test_a_checkpoint_naming_a_callable_is_refused_and_never_called(name, tmp_path):
    marker = tmp_path / "ran"
    (stored,) = stored_values(crafted_run(tmp_path / "run", payloads(marker)[name]))

    JsonPlusSerializer(allowed_msgpack_modules=True).loads_typed(stored)  # LangGraph's default
    assert marker.exists(), "the crafted checkpoint is live: a permissive load runs it"
    marker.unlink()

    where = str(tmp_path / "run" / "checkpoints.sqlite")
    with pytest.raises(CheckpointRefused) as refused:
        CheckpointSerializer(where).loads_typed(stored)
    message = str(refused.value)
    assert message.startswith(f"{where}: a checkpoint names {name},") and "\n" not in message
    assert not marker.exists()


def test_approve_and_resume_refuse_a_crafted_checkpoint_in_one_line(tmp_path):
    marker = tmp_path / "ran"
    run = crafted_run(tmp_path / "run", payloads(marker)["os.system"])
    for args in (["approve", run.path], ["resume", run.path]):
        result = cli(*args, timeout=300)
        line = error_line(result)
        assert result.returncode == 2, result.stderr[-2000:]
        assert line.startswith(f"harness-learn: error: {run.checkpoints}: a checkpoint names "
                               "os.system, which is not one of the adapter's own types"), line
        assert "do not resume or approve it" in line and "Traceback" not in result.stderr
        assert not marker.exists(), f"{args[0]} ran the checkpoint's command"


def test_what_the_adapter_checkpoints_round_trips():
    serde = CheckpointSerializer("here")
    state = {"run_dir": "/r", "round": 2, "best_score": None, "rounds": [{"candidates": [
        {"diff": "-a\n+b", "selection_score": 0.5}]}],
             "asks": [Interrupt(value={"round": 1, "candidate": 0}, id="i1")],
             "answer": Command(resume={"approve": False, "reason": "no"})}
    back = serde.loads_typed(serde.dumps_typed(state))
    answer = back.pop("answer")
    assert isinstance(answer, Command) and answer.resume == state.pop("answer").resume
    assert back == state and isinstance(back["asks"][0], Interrupt)


def test_encodings_the_adapter_never_writes_are_refused():
    serde = CheckpointSerializer("here")
    for data in (("pickle", b"cos\nsystem\n."), ("json", b'{"lc": 2}'), ("msgpack", b"\xc1")):
        with pytest.raises(CheckpointRefused):
            serde.loads_typed(data)
