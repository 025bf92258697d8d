from __future__ import annotations

import asyncio
import pickle
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness_learning.harnesses.llm import (
    Completion,
    InfraError,
    ModelClient,
    ModelConfig,
    ModelRequestError,
    SimServer,
    get_client,
)


async def _gather(client: ModelClient, prompts: list[str], **params) -> list[Completion]:
    return await asyncio.gather(*(client.acomplete(p, **params) for p in prompts))


def test_complete_returns_text_tokens_and_latency(sim: SimServer, sim_config: Any) -> None:
    client = ModelClient(sim_config(sim))
    result = client.complete("What is 3 + 4?")
    assert result.text == "Answer: 7"
    assert result.prompt_tokens == 5 and result.completion_tokens == 2  # whitespace words
    assert result.latency_s > 0 and not result.cached
    assert result.finish_reason == "stop"
    assert client.stats.calls == 1 and client.stats.requests == 1
    assert client.stats.completion_tokens == 2


def test_async_calls_from_separate_event_loops(sim: SimServer, sim_config: Any) -> None:
    client = ModelClient(sim_config(sim, params={"temperature": 0.7}))
    for i in range(3):  # each asyncio.run is a new loop: nothing may stay bound to the old one
        assert asyncio.run(client.acomplete(f"What is {i} + 1")).text == f"Answer: {i + 1}"
    assert sim.stats.served == 3


@pytest.mark.parametrize("kind", ["429", "500", "timeout", "malformed", "empty"])
def test_transient_failures_are_retried(kind: str, sim_config: Any) -> None:
    server = SimServer(
        latency_s=0.01, fail_first=2, error_kinds=(kind,), retry_after_s=0.3, hang_s=10
    )
    with server:
        # a hang must outlast the client's timeout; a good answer must not, even on a busy CI box
        client = ModelClient(sim_config(server, timeout_s=1.5 if kind == "timeout" else 10.0))
        started = time.monotonic()
        result = client.complete("What is 5 + 5")
        elapsed = time.monotonic() - started
    assert result.text == "Answer: 10"
    assert server.stats.requests == 3 and server.stats.served == 1
    assert client.stats.retries == 2 and client.stats.infra_errors == 0
    if kind == "429":
        assert elapsed >= 0.6  # two Retry-After waits of 0.3 s were honoured


@pytest.mark.parametrize(
    ("server_kind", "infra_kind"),
    [("malformed", "malformed"), ("empty", "empty"), ("500", "server"), ("429", "rate_limit"),
     ("timeout", "timeout")],
)  # fmt: skip
def test_persistent_failures_raise_infra_error(
    server_kind: str, infra_kind: str, sim_config: Any
) -> None:
    server = SimServer(
        latency_s=0, error_rate=1.0, error_kinds=(server_kind,), retry_after_s=0.01, hang_s=10
    )
    with server:
        client = ModelClient(sim_config(server, max_retries=2, timeout_s=0.3))
        with pytest.raises(InfraError) as info:
            client.complete("anything")
    assert info.value.kind == infra_kind
    assert "3 attempts" in str(info.value)
    assert server.stats.requests == 3
    assert client.stats.infra_errors == 1 and client.stats.errors_by_kind == {infra_kind: 1}
    assert not isinstance(info.value, ModelRequestError)


def test_dead_server_is_a_connection_error(sim: SimServer, sim_config: Any) -> None:
    client = ModelClient(sim_config(sim, max_retries=1))
    sim.stop()
    with pytest.raises(InfraError) as info:
        client.complete("hello")
    assert info.value.kind == "connection"


def test_server_that_dies_and_comes_back(sim: SimServer, sim_config: Any) -> None:
    client = ModelClient(sim_config(sim, max_retries=6, backoff_s=0.1, params={"temperature": 0.5}))
    assert client.complete("What is 1 + 1").text == "Answer: 2"
    sim.stop()
    restarter = threading.Timer(0.4, sim.start)
    restarter.start()
    assert client.complete("What is 2 + 2").text == "Answer: 4"
    restarter.join()
    assert client.stats.retries >= 1


def test_persistent_cache_across_client_instances(
    sim: SimServer, tmp_path: Path, sim_config: Any
) -> None:
    config = sim_config(sim, cache=tmp_path / "cache.sqlite")
    first = ModelClient(config).complete("What is 6 + 1")
    second_client = ModelClient(config)
    second = second_client.complete("What is 6 + 1")
    assert sim.stats.requests == 1
    assert second.cached and not first.cached
    assert second.text == first.text and second.completion_tokens == first.completion_tokens
    assert second_client.stats.cache_hits == 1 and second_client.stats.requests == 0
    assert second.cost == 0.0


def test_seeded_calls_are_cached_and_sampled_calls_are_not(
    sim: SimServer, tmp_path: Path, sim_config: Any
) -> None:
    client = ModelClient(sim_config(sim, cache=tmp_path / "c.sqlite", params={"temperature": 0.8}))
    client.complete("q")
    client.complete("q")
    assert sim.stats.requests == 2
    client.complete("q", seed=7)
    assert client.complete("q", seed=7).cached
    assert not client.complete("q", seed=8).cached
    assert sim.stats.requests == 4


def test_single_flight_identical_concurrent_calls(sim: SimServer, sim_config: Any) -> None:
    sim.configure(latency_s=0.2)
    client = ModelClient(sim_config(sim))
    results = asyncio.run(_gather(client, ["What is 9 + 9"] * 16))
    assert sim.stats.requests == 1
    assert {r.text for r in results} == {"Answer: 18"}
    assert sum(not r.cached for r in results) == 1
    assert client.stats.shared == 15 and client.stats.calls == 1


def test_concurrency_bound_per_endpoint(sim_config: Any) -> None:
    server = SimServer(latency_s=0.05, slots=64)
    with server:
        client = ModelClient(sim_config(server, max_concurrency=4))
        asyncio.run(_gather(client, [f"q{i}" for i in range(24)]))
    assert server.stats.served == 24
    assert 2 <= server.stats.max_concurrency <= 4


def test_router_balances_replicas_within_their_bounds(sim_config: Any) -> None:
    servers = [SimServer(latency_s=0.05), SimServer(latency_s=0.05)]
    for server in servers:
        server.start()
    try:
        client = ModelClient(sim_config(servers, max_concurrency=3))
        results = asyncio.run(_gather(client, [f"What is {i} + 0" for i in range(40)]))
    finally:
        for server in servers:
            server.stop()
    assert [r.text for r in results] == [f"Answer: {i}" for i in range(40)]
    served = [s.stats.served for s in servers]
    assert sum(served) == 40 and min(served) >= 8
    assert all(s.stats.max_concurrency <= 3 for s in servers)


def test_bad_requests_are_not_infra_errors(sim: SimServer, sim_config: Any) -> None:
    client = ModelClient(sim_config(sim))
    with pytest.raises(ModelRequestError):
        client.complete([{"content": "no role"}])
    with pytest.raises(ModelRequestError):
        client.complete("hi", api_base="http://elsewhere")
    assert sim.stats.requests == 0


def test_complete_inside_a_running_loop_is_refused(sim: SimServer, sim_config: Any) -> None:
    client = ModelClient(sim_config(sim))

    async def misuse() -> None:
        client.complete("hi")

    with pytest.raises(RuntimeError, match="acomplete"):
        asyncio.run(misuse())


def test_get_client_shares_one_client_per_config(sim: SimServer, sim_config: Any) -> None:
    a = get_client(sim_config(sim))
    assert get_client(sim_config(sim)) is a
    assert get_client(sim_config(sim, max_retries=0)) is not a
    assert get_client(f"openai/sim@{sim.url}?temperature=0") is get_client(
        f"openai/sim@{sim.url}?temperature=0"
    )


def test_infra_error_keeps_its_kind_across_pickling() -> None:
    err = pickle.loads(pickle.dumps(InfraError("rate_limit", "slow down", 2.0)))
    assert (err.kind, err.message, err.retry_after_s) == ("rate_limit", "slow down", 2.0)
    with pytest.raises(ValueError):
        InfraError("bogus", "x")


def test_sync_calls_from_many_threads_share_the_bound(sim: SimServer, sim_config: Any) -> None:
    sim.configure(latency_s=0.05)
    client = ModelClient(sim_config(sim, max_concurrency=3))
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = client.complete(f"What is {i} + 2").text

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {i: f"Answer: {i + 2}" for i in range(12)}
    assert sim.stats.max_concurrency <= 3


def test_router_routes_around_a_dead_replica(sim_config: Any) -> None:
    servers = [SimServer(latency_s=0.01), SimServer(latency_s=0.01)]
    for server in servers:
        server.start()
    servers[0].stop()
    try:
        client = ModelClient(sim_config(servers, max_retries=5, params={"temperature": 0.5}))
        results = asyncio.run(_gather(client, [f"What is {i} + 1" for i in range(10)]))
    finally:
        servers[1].stop()
    assert [r.text for r in results] == [f"Answer: {i + 1}" for i in range(10)]
    assert servers[1].stats.served == 10


def test_local_alias_finds_its_restarted_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stand-ins for two lives of the local server: the client must ask for the URL again.
    servers = [SimServer(latency_s=0), SimServer(latency_s=0)]
    for server in servers:
        server.start()
    urls = iter([servers[0].url, servers[1].url])
    monkeypatch.setattr("harness_learning.harnesses.llm.client.ensure_local_server", lambda name, instance="", logprobs=None: next(urls))
    try:
        client = ModelClient(ModelConfig("local", backoff_s=0.01))
        assert client.complete("What is 1 + 1").text == "Answer: 2"
        servers[0].stop()
        assert client.complete("What is 2 + 2").text == "Answer: 4"
    finally:
        servers[1].stop()
    assert servers[1].stats.served == 1 and client.stats.errors_by_kind == {}


def test_an_empty_completion_asked_for_is_the_answer_at_once(sim_config: Any) -> None:
    # A harness's stop sequence or token limit makes a healthy endpoint answer nothing: for a
    # caller that takes empty replies (the toolbox) that is the answer, not a failure to retry.
    server = SimServer(latency_s=0, error_rate=1.0, error_kinds=("empty",))
    with server:
        client = ModelClient(sim_config(server, max_retries=2, params={"temperature": 0}))
        first = asyncio.run(client.acomplete("What is 2 + 2?", allow_empty=True))
        second = asyncio.run(client.acomplete("What is 2 + 2?", allow_empty=True))
        with pytest.raises(InfraError) as info:  # the default: still a failure
            client.complete("What is 2 + 2?")
    assert first.text == "" and first.finish_reason == "stop" and not first.cached
    assert not second.cached  # an empty completion is never cached
    assert info.value.kind == "empty"
    assert server.stats.requests == 2 + 3 and client.stats.retries == 2
