"""Which local servers keep every position's logits (and so can return log-probs), and that
the Proposer only asks for log-probs where they are kept: llama-cpp-python then computes and
holds a vocabulary-wide row per token (slower calls; 5 GB for Qwen2.5's vocabulary at 8,192
tokens), so no model is served so by default, only a client that asks (`serve_logprobs`)."""

import asyncio
from pathlib import Path

import pytest

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.harnesses.llm.config import ModelConfig
from harness_learning.harnesses.llm.local import (
    LocalServer,
    ensure_local_server,
    exit_note,
    running_server,
)
from harness_learning.harnesses.llm.models import QWEN_CODER, SMOLLM2, local_model


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


@pytest.mark.parametrize("name", [SMOLLM2, QWEN_CODER])
def test_no_model_keeps_every_positions_logits_by_default(name):
    server = LocalServer(local_model(name), gguf=Path("model.gguf"))
    assert _flag(server.server_args(), "--logits_all") == "False"


def test_a_gguf_by_path_is_served_without_every_positions_logits(tmp_path):
    server = LocalServer(local_model(str(tmp_path / "student.gguf")), gguf=tmp_path / "s.gguf")
    assert _flag(server.server_args(), "--logits_all") == "False"


@pytest.mark.parametrize(("model", "asks"), [
    ("local", False), (f"local:{SMOLLM2}", False), (f"local:{QWEN_CODER}", False),
    (f"local:{SMOLLM2}?serve_logprobs=true", True), ("openai/gpt-4o-mini", True),
])
def test_log_probs_are_asked_for_only_where_they_are_returned(model, asks):
    assert ModelConfig.parse(model).returns_logprobs is asks


def test_serve_logprobs_is_refused_for_a_remote_model():
    with pytest.raises(ValueError, match="serve_logprobs is for local models"):
        ModelConfig.parse("openai/gpt-4o-mini?serve_logprobs=true")


@pytest.mark.parametrize(("group_size", "logprobs", "spec", "served"), [
    (None, True, "local:smollm2-135m", None),
    (2, True, "local:smollm2-135m", True),
    (2, False, "local:smollm2-135m", None),
    (2, True, "local:smollm2-135m?serve_logprobs=false", False),
    (2, True, "openai/m@http://127.0.0.1:9/v1", None),
])
def test_a_run_collecting_groups_has_its_local_proposer_served_with_log_probs(
        tmp_path, group_size, logprobs, spec, served):
    config = AdaptConfig(task="rg:basic_arithmetic", run_dir=str(tmp_path / "run"),
                         proposer=spec, group_size=group_size, proposer_logprobs=logprobs)
    ctx = AdapterContext.from_config(config)
    assert ctx.proposer.config.serve_logprobs is served
    assert ctx.proposer.config.local_server == "proposer"


def test_a_log_prob_server_is_its_own_never_the_shared_one(local_model_url):
    """The session's server (exported in the environment) keeps no logits; asking for them
    starts this process's own server, once, which returns the sampled tokens' log-probs."""
    from harness_learning.harnesses.llm.client import ModelClient

    url = ensure_local_server(name=SMOLLM2, instance="proposer", logprobs=True)
    assert url != local_model_url.rstrip("/")
    assert ensure_local_server(name=SMOLLM2, instance="proposer", logprobs=True) == url
    assert ensure_local_server(name=SMOLLM2, instance="proposer") == local_model_url
    server = running_server(f"{SMOLLM2}#proposer+logprobs")
    assert server is not None and _flag(server.server_args(), "--logits_all") == "True"
    client = ModelClient(ModelConfig.parse(f"local:{SMOLLM2}?serve_logprobs=true",
                                           local_server="proposer"))
    got = asyncio.run(client.acomplete("Say hi.", max_tokens=8, temperature=0.0,
                                       logprobs=True, top_logprobs=1))
    assert got.logprobs and "".join(t.token for t in got.logprobs) == got.text
    assert exit_note(SMOLLM2, "proposer", logprobs=True) == ""  # running
    server.process.kill()
    server.process.wait(10)
    assert "exited with code" in exit_note(SMOLLM2, "proposer", logprobs=True)
    server.stop()
