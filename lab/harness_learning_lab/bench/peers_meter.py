"""The one place every system of `bench peers` is measured, so none is trusted to count itself.

- Solver calls: every `tools.llm` call a harness makes during the search, counted at our Solver
  client (`UsageStats`: answers from the model, from the shared response cache, or from an
  identical call in flight). The cache only saves wall time; the count is the same either way.
- Proposer tokens: every system's Proposer (or reflection) model is reached through
  `ProposerProxy`, a loopback HTTP forwarder in front of the local Qwen server that adds up the
  `usage` of each answer.
- The incumbent: what each system would hand back at this moment (its best version by its own
  selection score), with the Solver calls spent when it took over: the anytime curve.
- `Meter.evaluate`: our sandboxed evaluation (`evals.evaluator.evaluate`, a worker per
  candidate) on the dev problems, with our report per problem, for the peers' evaluators; it
  serves OpenEvolve's worker processes over HTTP (`/evaluate`) too.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness_learning.evals.evaluator import evaluate
from harness_learning.evals.problem import Problem
from harness_learning.evals.result import EvalResult
from harness_learning.graphs.adapter.execution_report import build_report
from harness_learning.harnesses.llm.litellm_loop import BackgroundLoop
from harness_learning.harnesses.sandbox import WorkerPool
from harness_learning.harnesses.toolbox import Toolbox


def sha_of(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def solver_calls(toolbox: Toolbox) -> int:
    """Harness-level Solver calls of a client, however each was answered."""
    stats = toolbox.solver.stats
    return stats.calls + stats.cache_hits + stats.shared


@dataclass
class Trace:
    """The anytime record of one run: (Solver calls, incumbent sha, its selection score)."""

    points: list[tuple[int, str, float | None]] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    best: float | None = None

    def offer(self, calls: int, source: str, score: float | None, *, ties_win: bool = False) -> None:
        """A version measured on the whole selection set; it takes over when it is better
        (`ties_win`: also when equal, for systems that prefer the later of equals)."""
        sha = sha_of(source)
        self.sources.setdefault(sha, source)
        if score is None:
            return
        better = self.best is None or score > self.best or (ties_win and score == self.best)
        if better:
            self.best = score
            if not self.points or self.points[-1][1] != sha:
                self.points.append((calls, sha, score))


class Meter:
    """Our evaluation, counted, on its own event loop (callable from any thread)."""

    def __init__(self, task: Any, problems: Sequence[Problem], toolbox: Toolbox, budget: int,
                 *, concurrency: int = 4, line_limit: int = 200) -> None:
        self.task, self.problems, self.toolbox = task, list(problems), toolbox
        self.budget, self.concurrency, self.line_limit = budget, concurrency, line_limit
        self.trace = Trace()
        self.evaluations = 0
        self._loop = BackgroundLoop()
        self._pool = self._call(self._make_pool())

    async def _make_pool(self) -> WorkerPool:
        return WorkerPool(size=2)

    def _call(self, coro: Any) -> Any:
        return self._loop.run(coro)

    @property
    def solver_calls(self) -> int:
        return solver_calls(self.toolbox)

    @property
    def exhausted(self) -> bool:
        return self.solver_calls >= self.budget

    def evaluate(self, source: str, ids: Sequence[str] | None = None) -> EvalResult:
        """`source` on the dev problems `ids` (all by default) in a sandbox worker; a version
        run on all of them is offered to the trace."""
        by_id = {p.id: p for p in self.problems}
        problems = [by_id[i] for i in ids] if ids is not None else self.problems
        result = self._call(evaluate(source, problems, self.task, self.toolbox,
                                     concurrency=self.concurrency, pool=self._pool,
                                     line_limit=self.line_limit))
        self.evaluations += 1
        if len(problems) == len(self.problems):
            self.trace.offer(self.solver_calls, source, result.mean_score)
        return result

    def report(self, ids: Sequence[str], result: EvalResult, chars: int = 4000) -> str:
        """Our execution report (question, gold, prediction, score, tool calls, traceback)."""
        by_id = {p.id: p for p in self.problems}
        return build_report(self.task, [by_id[i] for i in ids], result, budget_chars=chars)

    def serve(self) -> ThreadingHTTPServer:
        """`POST /evaluate {"source": ...}` -> `{"score", "report", "solver_calls"}`, for
        evaluators that run in other processes (OpenEvolve's workers)."""
        meter = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if meter.exhausted:
                    reply = {"score": 0.0, "report": "budget exhausted", "exhausted": True}
                else:
                    result = meter.evaluate(body["source"])
                    ids = [p.id for p in meter.problems]
                    reply = {"score": result.mean_score or 0.0,
                             "report": meter.report(ids, result), "exhausted": False}
                reply["solver_calls"] = meter.solver_calls
                _send_json(self, reply)

            def log_message(self, *args: Any) -> None:
                return None

        return _start_server(Handler)

    def close(self) -> None:
        self._call(self._pool.close())
        self._loop.close(timeout_s=10)  # cancels litellm's logging worker, left pending else


class ProposerProxy:
    """Forwards OpenAI-style requests to the Proposer's server and counts the tokens of each
    answer (`usage`), per label (the system and run it served). While `stop_when()` holds, it
    refuses requests (HTTP 400) without forwarding them: a peer that cannot be told to stop
    (OpenEvolve's fixed iteration count) ends its remaining iterations at once.

    A sampled request that repeats one its run already sent, word for word and seed included,
    is sent with a seed derived from the two (`reseeded`, counted per label): a seeded server
    answers it word for word again, so the repeat could buy nothing. OpenEvolve and GEPA send
    their run's seed with every call, and OpenEvolve's prompt does not change while none of
    its diffs applies: at equal spend its extra iterations were one answer, asked for again.
    Our adapter's seeds differ per round and candidate; the rule is the same for every system.

    A request the Proposer's server does not answer (it died, say) is counted in `failed` and
    answered 502; the server's own refusals (HTTP 4xx, 5xx) are passed on as they are.

    Answers cut off at the request's token cap (`finish_reason` "length") are counted in
    `truncated`: a diff cut mid-block cannot apply, whichever system asked for it. With
    `transcript` set, every answered request and its answer are appended there as a JSON line,
    so what each system was told and answered can be read after the run.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.label = ""
        self.stop_when: Callable[[], bool] | None = None
        self.refused: dict[str, int] = {}
        self.tokens: dict[str, int] = {}
        self.calls: dict[str, int] = {}
        self.reseeds: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.truncated: dict[str, int] = {}
        self.transcript: Path | None = None
        self._sent: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self.server = self._serve()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def count(self, label: str) -> tuple[int, int]:
        """(calls, tokens) served under `label`."""
        return self.calls.get(label, 0), self.tokens.get(label, 0)

    def spent(self, label: str) -> dict[str, int]:
        """What `label`'s run asked of the Proposer, as a result's `proposer_*` fields."""
        calls, tokens = self.count(label)
        return {"proposer_calls": calls, "proposer_tokens": tokens,
                "proposer_refused": self.refused.get(label, 0),
                "proposer_reseeded": self.reseeds.get(label, 0),
                "proposer_truncated": self.truncated.get(label, 0)}

    def reseeded(self, label: str, data: bytes) -> bytes:
        """`data`, or when it repeats a sampled request `label` already sent (seed included),
        the same request with a seed derived from its seed and how many times it was sent."""
        try:
            body = json.loads(data)
        except ValueError:
            return data
        if (not isinstance(body, dict) or not isinstance(body.get("seed"), int)
                or body.get("temperature", 1.0) == 0):
            return data
        key = (label, hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())
        with self._lock:
            sent = self._sent.get(key, 0)
            self._sent[key] = sent + 1
            if sent:
                self.reseeds[label] = self.reseeds.get(label, 0) + 1
        if not sent:
            return data
        derived = hashlib.sha256(f"{body['seed']}:{sent}".encode()).hexdigest()
        return json.dumps({**body, "seed": int(derived[:8], 16)}).encode()

    def answered(self, request: bytes, raw: bytes) -> None:
        """Count an answer of the current label (tokens, a cut-off) and write it down."""
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = {}
        usage = reply.get("usage") or {}
        choices = reply.get("choices") or [{}]
        cut = any(isinstance(c, dict) and c.get("finish_reason") == "length" for c in choices)
        with self._lock:
            label = self.label
            self.calls[label] = self.calls.get(label, 0) + 1
            self.tokens[label] = self.tokens.get(label, 0) + int(usage.get("total_tokens") or 0)
            self.truncated[label] = self.truncated.get(label, 0) + int(cut)
            if self.transcript is not None:
                line = {"label": label, "request": _parsed(request), "response": reply}
                with self.transcript.open("a") as f:
                    f.write(json.dumps(line) + "\n")

    def _serve(self) -> ThreadingHTTPServer:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                data = self.rfile.read(int(self.headers["Content-Length"]))
                if proxy.stop_when is not None and proxy.stop_when():
                    with proxy._lock:
                        proxy.refused[proxy.label] = proxy.refused.get(proxy.label, 0) + 1
                    _send_json(self, {"error": {"message": "the Solver-call budget is spent",
                                                "type": "invalid_request_error"}}, status=400)
                    return
                path = self.path[3:] if self.path.startswith("/v1") else self.path
                data = proxy.reseeded(proxy.label, data)
                request = urllib.request.Request(proxy.upstream + path, data=data,
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=1800) as resp:
                        raw = resp.read()
                except urllib.error.HTTPError as err:  # the server's own answer: pass it on
                    _send_raw(self, err.read(), status=err.code)
                    return
                except OSError as err:
                    with proxy._lock:
                        proxy.failed[proxy.label] = proxy.failed.get(proxy.label, 0) + 1
                    _send_json(self, {"error": {"message": f"the Proposer's server at "
                                                f"{proxy.upstream} did not answer: {err}",
                                                "type": "api_connection_error"}}, status=502)
                    return
                proxy.answered(data, raw)
                _send_raw(self, raw)

            def log_message(self, *args: Any) -> None:
                return None

        return _start_server(Handler)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")


def _send_json(handler: BaseHTTPRequestHandler, payload: dict, status: int = 200) -> None:
    _send_raw(handler, json.dumps(payload).encode(), status)


def _send_raw(handler: BaseHTTPRequestHandler, raw: bytes, status: int = 200) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def _start_server(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
