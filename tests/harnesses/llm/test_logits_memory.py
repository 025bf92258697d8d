"""Which local servers keep every position's logits (and so can return log-probs), and that
the Proposer only asks for log-probs where they are kept: llama-cpp-python holds them as an
n_ctx x vocabulary float32 array, 5 GB for Qwen2.5's vocabulary at 8,192 tokens."""

from pathlib import Path

import pytest

from harness_learning.harnesses.llm.config import ModelConfig
from harness_learning.harnesses.llm.local import LocalServer
from harness_learning.harnesses.llm.models import QWEN_CODER, SMOLLM2, local_model


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


@pytest.mark.parametrize(("name", "kept"), [(SMOLLM2, "True"), (QWEN_CODER, "False")])
def test_the_server_keeps_logits_only_for_the_small_vocabulary(name, kept):
    server = LocalServer(local_model(name), gguf=Path("model.gguf"))
    assert _flag(server.server_args(), "--logits_all") == kept


def test_a_gguf_by_path_is_served_without_every_positions_logits(tmp_path):
    server = LocalServer(local_model(str(tmp_path / "student.gguf")), gguf=tmp_path / "s.gguf")
    assert _flag(server.server_args(), "--logits_all") == "False"


@pytest.mark.parametrize(("model", "asks"), [
    ("local", True), (f"local:{SMOLLM2}", True), (f"local:{QWEN_CODER}", False),
    ("openai/gpt-4o-mini", True),
])
def test_log_probs_are_asked_for_only_where_they_are_returned(model, asks):
    assert ModelConfig(model=model).returns_logprobs is asks
