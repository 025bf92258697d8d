"""Benchmark of the two local models side by side: thread counts, and the round's shared prompt.

It starts real llama-cpp-python servers (Qwen2.5-Coder-1.5B as Proposer, SmolLM2-135M as Solver)
and streams a real Proposer prompt (the reasoning seed, a report-sized block, the constraints and
the SEARCH/REPLACE instructions) N times with distinct seeds, as one round does. Per request it
measures the time to the first token (prompt evaluation plus one token) and generation tokens/s.

- `shared`: a Solver-sized request to the same server between the candidates, as when Proposer
  and Solver shared one server: each candidate's prompt is evaluated again.
- `own`: the Proposer on a server of its own, candidates back to back: llama.cpp reuses the
  common prefix, so the prompt is evaluated once per round.
Each is run while a second thread keeps the Solver's server busy (the Solver evaluates the
previous candidate while the next one is proposed), for each Proposer thread count asked for.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from harness_learning.graphs.adapter.proposer import build_proposer_messages
from harness_learning.harnesses.llm.local import LocalServer
from harness_learning.harnesses.llm.models import QWEN_CODER, SMOLLM2, local_model
from harness_learning.harnesses.seeds import seed_source

_REPORT_LINE = ("- Problem: What is 7 + 5? Expected: 12. Answer: \"12.\" (score 0: the answer "
                "has a trailing period)\n")


def proposer_prompt(report_chars: int = 2500) -> list[dict[str, str]]:
    report = (_REPORT_LINE * (report_chars // len(_REPORT_LINE) + 1))[:report_chars]
    return build_proposer_messages("Compute the value of arithmetic expressions.",
                                   seed_source("reasoning_direct"), report, "search_replace", 120)


def stream_once(base_url: str, alias: str, messages: list[dict[str, str]], max_tokens: int,
                seed: int) -> dict[str, float]:
    """One streamed chat completion: seconds to the first token, tokens, generation tokens/s."""
    body = json.dumps({"model": alias, "messages": messages, "max_tokens": max_tokens,
                       "temperature": 0.7, "seed": seed, "stream": True}).encode()
    request = urllib.request.Request(f"{base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    start = time.monotonic()
    first = None
    tokens = 0
    with urllib.request.urlopen(request, timeout=900) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            delta = json.loads(line[5:])["choices"][0].get("delta", {})
            if delta.get("content"):
                tokens += 1
                first = first if first is not None else time.monotonic()
    end = time.monotonic()
    first = first if first is not None else end
    gen_s = end - first
    return {"first_token_s": first - start, "tokens": tokens,
            "tokens_per_s": (tokens - 1) / gen_s if tokens > 1 and gen_s > 0 else 0.0}


def _keep_busy(url: str, alias: str, stop: threading.Event) -> None:
    """Solver-shaped load: short arithmetic prompts, one after another."""
    n = 0
    while not stop.is_set():
        stream_once(url, alias, [{"role": "user", "content": f"What is {n} + 7? Answer briefly."}],
                    48, seed=n)
        n += 1


def measure_round(proposer_url: str, solver_url: str, mode: str, candidates: int,
                  max_tokens: int, solver_load: bool) -> dict[str, Any]:
    """One round's N proposals in `mode` ('shared' or 'own'); per-candidate figures."""
    qwen, smol = local_model(QWEN_CODER), local_model(SMOLLM2)
    messages = proposer_prompt()
    stop = threading.Event()
    load = threading.Thread(target=_keep_busy, args=(solver_url, smol.alias, stop), daemon=True)
    if solver_load:
        load.start()
    rows = []
    # A round's prompt differs from the last round's (a new report): start from a cold cache.
    stream_once(proposer_url, qwen.alias, [{"role": "user", "content": "Say hello."}], 4, seed=0)
    try:
        for i in range(candidates):
            if mode == "shared":  # a Solver request on the Proposer's server evicts the prefix
                stream_once(proposer_url, qwen.alias,
                            [{"role": "user", "content": f"What is {i} + 3?"}], 8, seed=i)
            rows.append(stream_once(proposer_url, qwen.alias, messages, max_tokens, seed=1000 + i))
    finally:
        stop.set()
        if solver_load:
            load.join()
    return {"mode": mode, "candidates": rows,
            "prompt_eval_round_s": sum(r["first_token_s"] for r in rows),
            "tokens_per_s": sum(r["tokens_per_s"] for r in rows) / len(rows)}


def run(threads: list[int], candidates: int = 3, max_tokens: int = 64,
        log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """For each Proposer thread count: both modes, with the Solver's server kept busy."""
    solver = LocalServer(SMOLLM2)
    solver_url = solver.start()
    results = []
    try:
        for n in threads:
            proposer = LocalServer(QWEN_CODER, n_threads=n)
            url = proposer.start(timeout_s=300)
            try:
                for mode in ("shared", "own"):
                    log(f"proposer threads {n}, mode {mode} ...")
                    figures = measure_round(url, solver_url, mode, candidates, max_tokens, True)
                    results.append({"proposer_threads": n, **figures})
                    log(table(results[-1:]).splitlines()[-1])  # kept if a later one is cut short
            finally:
                proposer.stop()
    finally:
        solver.stop()
    return results


def table(results: list[dict[str, Any]]) -> str:
    lines = ["threads  mode    first-token s per candidate      prompt eval per round  gen tok/s",
             "-------  ------  -------------------------------  ---------------------  ---------"]
    for r in results:
        per = ", ".join(f"{c['first_token_s']:.1f}" for c in r["candidates"])
        lines.append(f"{r['proposer_threads']:>7}  {r['mode']:<6}  {per:<31}  "
                     f"{r['prompt_eval_round_s']:>19.1f} s  {r['tokens_per_s']:>9.1f}")
    return "\n".join(lines)
