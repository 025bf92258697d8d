"""Bad data: malformed dataset records, corrupted or mismatched indexes, run directories from an
incompatible version. Each case must fail with a clear error that names the file (and the
record where there is one), and must overwrite nothing: every file's sha256 is the same before
and after."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_learning.harnesses.rundir import RunDir
from harness_learning_lab.reliability.common import file_hashes

CLI = str(Path(sys.executable).parent / "harness-learn")
HOTPOT = {"_id": "q1", "question": "Who wrote Alpha?", "answer": "Bea",
          "context": [["Alpha", ["Alpha is a book by Bea."]]],
          "supporting_facts": [["Alpha", 0]], "type": "bridge"}


def _record(i: int, **changes: Any) -> dict:
    rec = {**HOTPOT, "_id": f"q{i}", **changes}
    return {k: v for k, v in rec.items() if v is not None}


def _lines(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _qa(path: Path) -> Callable[[], Any]:
    def load() -> Any:
        from harness_learning.evals.registry import get_task

        return get_task("hotpotqa", path=str(path), n_dev=1, n_test=0).dev()

    return load


def dataset_cases(d: Path) -> dict[str, tuple[Callable[[], Any], list[str]]]:
    """name -> (the action, words the error must contain)."""
    good = [json.dumps(_record(i)) for i in range(3)]
    return {
        "dataset_line_not_json": (_qa(_lines(d / "a.jsonl", good[0], '{"_id": "q9", "quest')),
                                  ["a.jsonl", "record 1", "line 2"]),
        "dataset_record_without_answer": (
            _qa(_lines(d / "b.jsonl", good[0], json.dumps(_record(5, answer=None)))),
            ["b.jsonl", "record 1", "q5", "answer"]),
        "dataset_duplicate_ids": (_qa(_lines(d / "c.jsonl", good[0], good[0])),
                                  ["c.jsonl", "duplicate id"]),
        "dataset_truncated_json_list": (
            _qa(_lines(d / "d.json", "[" + ",".join(good) + ', {"_id": "q7", "ques')),
            ["d.json"]),
        "dataset_binary_garbage": (_qa(_bytes(d / "e.jsonl", os.urandom(4096))), ["e.jsonl"]),
        "dataset_context_wrong_shape": (
            _qa(_lines(d / "f.jsonl", json.dumps(_record(1, context={"title": ["A"]})))),
            ["f.jsonl", "record 0", "context"]),
    }


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(b"\xff\xfe" + data)
    return path


def _tiny_index(d: Path) -> Path:
    from harness_learning.retrieval import build_index

    d.mkdir(parents=True, exist_ok=True)
    corpus = d / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"passage number {i} about "
                                                   f"topic {i % 3}"}) + "\n" for i in range(30)))
    out = d / "index"
    build_index("jsonl", corpus, out, backend="bm25", progress=False)
    return out


def _search(index: Path) -> Callable[[], Any]:
    def go() -> Any:
        from harness_learning.retrieval import open_index

        return open_index(index, backend="bm25").search("topic 1", k=3)

    return go


def index_cases(d: Path) -> dict[str, tuple[Callable[[], Any], list[str]]]:
    cases: dict[str, tuple[Callable[[], Any], list[str]]] = {}
    garbage = _tiny_index(d / "garbage")
    (garbage / "manifest.json").write_text("{not json")
    cases["index_manifest_garbage"] = (_search(garbage), ["manifest.json"])
    future = _tiny_index(d / "future")
    manifest = json.loads((future / "manifest.json").read_text())
    (future / "manifest.json").write_text(json.dumps({**manifest, "format": 99}))
    cases["index_from_another_version"] = (_search(future), ["manifest.json", "format"])
    cut = _tiny_index(d / "truncated")
    biggest = max((p for p in cut.rglob("*") if p.is_file() and p.name != "manifest.json"),
                  key=lambda p: p.stat().st_size)
    biggest.write_bytes(biggest.read_bytes()[: biggest.stat().st_size // 3])
    cases["index_truncated_file"] = (_search(cut), [str(cut.name)])
    mismatch = _tiny_index(d / "mismatch")
    manifest = json.loads((mismatch / "manifest.json").read_text())
    (mismatch / "manifest.json").write_text(json.dumps({**manifest, "passages": 300}))
    cases["index_count_mismatch"] = (_search(mismatch), ["mismatch"])
    return cases


def _resume(run_dir: Path) -> Callable[[], Any]:
    """`harness-learn resume RUN_DIR` as a user runs it: in a process of its own, so the lab
    drives the CLI from outside (importing the CLI here would make an import cycle)."""

    def go() -> Any:
        result = subprocess.run([CLI, "resume", str(run_dir)], capture_output=True, text=True,
                                timeout=300, env={**os.environ, "COLUMNS": "200"})
        output = result.stdout + result.stderr
        if result.returncode == 0:
            return output
        raise RuntimeError(output)

    return go


def run_dir_cases(d: Path) -> dict[str, tuple[Callable[[], Any], list[str]]]:
    from harness_learning.graphs.adapter.config import AdaptConfig
    from harness_learning.harnesses.store import SQLiteLogStore

    def run_dir(name: str) -> Path:
        path = d / name
        path.mkdir(parents=True)
        cfg = AdaptConfig(task="rg:basic_arithmetic", run_dir=str(path),
                          rounds=1).with_track_defaults("reasoning")
        RunDir(path).write_config(json.loads(cfg.to_json()))
        SQLiteLogStore(path).close()
        return path

    unknown = run_dir("unknown_keys")
    data = RunDir(unknown).read_config()
    RunDir(unknown).write_config({**data, "speculative_decoding": True})
    newer = run_dir("newer_schema")
    conn = sqlite3.connect(RunDir(newer).log)
    conn.execute("UPDATE hl_schema SET value='99' WHERE key='version'")
    conn.commit()
    conn.close()
    garbage = run_dir("garbage_log")
    RunDir(garbage).log.write_bytes(os.urandom(8192))
    broken_config = run_dir("broken_config")
    RunDir(broken_config).config.write_text('{"task": "rg:basic_arithmetic", "run_dir": ')
    return {
        "run_dir_unknown_config_keys": (_resume(unknown), ["speculative_decoding"]),
        "run_dir_newer_log_schema": (_resume(newer), ["schema version 99"]),
        "run_dir_garbage_log": (_resume(garbage), [RunDir.LOG]),
        "run_dir_unreadable_config": (_resume(broken_config), [RunDir.CONFIG]),
    }


def run_bad_data(root: Path, log: Any = None) -> list[dict[str, Any]]:
    """Every case: did it fail, does the message name what it must, was nothing overwritten."""
    root = Path(root)
    rows = []
    for group, make in (("dataset", dataset_cases), ("index", index_cases),
                        ("run_dir", run_dir_cases)):
        where = root / group
        where.mkdir(parents=True, exist_ok=True)
        for name, (action, words) in make(where).items():
            before = file_hashes(where)
            try:
                action()
                error, message = None, "no error raised"
            except Exception as exc:
                error, message = type(exc).__name__, str(exc)
            after = file_hashes(where)
            changed = sorted(k for k in set(before) | set(after)
                             if before.get(k) != after.get(k) and not k.endswith(("-wal", "-shm")))
            missing = [w for w in words if w not in message]
            rows.append({"case": name, "group": group, "error": error,
                         "clear": error is not None and not missing, "missing_words": missing,
                         "unchanged": not changed, "changed": changed[:3],
                         "message": message.strip().splitlines()[-1][:200] if message.strip() else ""})
            if log:
                log(f"{name}: {error}: {rows[-1]['message'][:100]}")
    return rows
