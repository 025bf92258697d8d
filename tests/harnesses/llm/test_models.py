"""Local models by name, and what plain `local` means for each role."""

from __future__ import annotations

import pytest

from harness_learning.harnesses.llm import LocalModelError, ModelConfig
from harness_learning.harnesses.llm.models import QWEN_CODER, SMOLLM2, resolve_role


@pytest.mark.parametrize(("spec", "role", "resolved"), [
    ("local", "solver", "local:smollm2-135m"),
    ("local", "proposer", "local:qwen2.5-coder-1.5b"),
    ("local?max_tokens=64", "proposer", "local:qwen2.5-coder-1.5b?max_tokens=64"),
    ("local:smollm2-135m", "proposer", "local:smollm2-135m"),
    ("openai/qwen@http://127.0.0.1:8000/v1", "proposer", "openai/qwen@http://127.0.0.1:8000/v1"),
])
def test_plain_local_is_the_roles_default(spec: str, role: str, resolved: str) -> None:
    assert resolve_role(spec, role) == resolved


def test_local_specs_name_their_model_and_get_local_defaults() -> None:
    plain, qwen = ModelConfig.parse("local"), ModelConfig.parse("local:qwen2.5-coder-1.5b")
    assert plain.local_name == SMOLLM2 and qwen.local_name == QWEN_CODER
    assert qwen.is_local and qwen.max_concurrency == 1 and qwen.timeout_s == 600.0
    assert ModelConfig.parse("openai/x@http://h:1/v1").local_name is None


def test_an_unknown_local_model_is_refused_when_its_server_is_asked_for() -> None:
    from harness_learning.harnesses.llm.local import ensure_local_server

    with pytest.raises(LocalModelError, match="unknown local model 'gpt-9'"):
        ensure_local_server(name="gpt-9")


def test_a_gguf_path_is_a_local_model_served_from_that_file(tmp_path) -> None:
    from harness_learning.harnesses.llm.models import local_model

    file = tmp_path / "student v1.gguf"
    bare, prefixed = ModelConfig.parse(str(file)), ModelConfig.parse(f"local:{file}")
    assert bare.model == prefixed.model == f"local:{file}" and bare.is_local
    model = local_model(bare.local_name)
    assert model.alias == "gguf-student-v1" and model.n_threads == 1
    with pytest.raises(LocalModelError, match="does not exist"):
        model.path()
    file.write_bytes(b"GGUF")
    assert model.path() == file.resolve()
