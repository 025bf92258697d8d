"""The direct HTTP transport: same answers, errors, retries, cache and bound as litellm's path,
against the simulated OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from harness_learning.harnesses.llm import (
    InfraError,
    ModelClient,
    ModelConfig,
    ModelRequestError,
    SimServer,
)


def direct(sim_config: Any, server: SimServer, **overrides: Any) -> ModelClient:
    return ModelClient(sim_config(server, transport="direct", **overrides))


def test_answers_like_the_litellm_path(sim: SimServer, sim_config: Any) -> None:
    fast, slow = direct(sim_config, sim), ModelClient(sim_config(sim, params={"temperature": 0.5}))
    got = fast.complete("What is 3 + 4")
    want = slow.complete("What is 3 + 4")
    assert got.text == want.text == "Answer: 7"
    assert (got.prompt_tokens, got.completion_tokens) == (want.prompt_tokens, want.completion_tokens)
    assert got.finish_reason == "stop" and not got.cached and got.latency_s > 0
    assert fast.stats.requests == 1 and fast.stats.calls == 1


@pytest.mark.parametrize(
    ("server_kind", "infra_kind"),
    [("malformed", "malformed"), ("empty", "empty"), ("500", "server"), ("429", "rate_limit"),
     ("timeout", "timeout")],
)  # fmt: skip
def test_persistent_failures_keep_their_kind(server_kind: str, infra_kind: str,
                                             sim_config: Any) -> None:
    server = SimServer(latency_s=0, error_rate=1.0, error_kinds=(server_kind,),
                       retry_after_s=0.01, hang_s=10)
    with server:
        client = direct(sim_config, server, max_retries=1, timeout_s=0.3)
        with pytest.raises(InfraError) as info:
            client.complete("anything")
    assert info.value.kind == infra_kind and server.stats.requests == 2
    assert client.stats.errors_by_kind == {infra_kind: 1}


def test_retry_after_is_honoured_and_the_answer_arrives(sim_config: Any) -> None:
    server = SimServer(latency_s=0.01, fail_first=2, error_kinds=("429",), retry_after_s=0.3)
    with server:
        client = direct(sim_config, server)
        started = time.monotonic()
        assert client.complete("What is 5 + 5").text == "Answer: 10"
    assert time.monotonic() - started >= 0.6 and client.stats.retries == 2


def test_dead_server_is_a_connection_error(sim: SimServer, sim_config: Any) -> None:
    client = direct(sim_config, sim, max_retries=0)
    sim.stop()
    with pytest.raises(InfraError) as info:
        client.complete("hello")
    assert info.value.kind == "connection"


def test_bound_cache_and_single_flight_are_the_clients(sim_config: Any, tmp_path) -> None:
    server = SimServer(latency_s=0.05, slots=64)
    with server:
        client = direct(sim_config, server, max_concurrency=4, cache=str(tmp_path / "c.sqlite"))

        async def go() -> list[str]:
            same = [client.acomplete("What is 1 + 1") for _ in range(5)]
            other = [client.acomplete(f"What is {i} + 2") for i in range(12)]
            return [c.text for c in await asyncio.gather(*same, *other)]

        texts = asyncio.run(go())
        again = client.complete("What is 1 + 1")
    assert texts[:5] == ["Answer: 2"] * 5 and again.cached
    assert server.stats.requests == 13 and server.stats.max_concurrency <= 4
    assert client.stats.shared == 4 and client.stats.cache_hits == 1


def test_config_refuses_what_direct_cannot_serve(sim: SimServer) -> None:
    with pytest.raises(ValueError, match="one api_base"):
        ModelConfig("openai/x", api_base=[sim.url, sim.url], transport="direct")
    with pytest.raises(ValueError, match="openai/NAME"):
        ModelConfig("anthropic/claude", api_base=sim.url, transport="direct")
    with pytest.raises(ValueError, match="transport must be"):
        ModelConfig("openai/x", api_base=sim.url, transport="grpc")
    assert ModelConfig.parse(f"openai/x@{sim.url}?transport=direct").transport == "direct"


def test_bad_request_is_not_infra(sim: SimServer, sim_config: Any) -> None:
    from harness_learning.harnesses.llm.direct import check_status

    with pytest.raises(ModelRequestError):
        check_status(400, b"context window exceeded", {}, sim.url)
    with pytest.raises(InfraError, match="config"):
        check_status(401, b"who are you", {}, sim.url)
