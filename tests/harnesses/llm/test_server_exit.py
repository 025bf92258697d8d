"""A local server that dies under a run is named in the error, with its exit code: a bare
"Connection error" (what CI printed when a Proposer server was killed mid-run) does not say
that the kernel's out-of-memory killer ended it, nor that llama.cpp crashed (a build with AMX
kernels did on its first prompt on one machine)."""

from __future__ import annotations

import os
import signal

import pytest

from harness_learning.harnesses.llm import local
from harness_learning.harnesses.llm.client import ModelClient
from harness_learning.harnesses.llm.config import ModelConfig
from harness_learning.harnesses.llm.errors import InfraError
from harness_learning.harnesses.llm.models import SMOLLM2, local_model

INSTANCE = "exit-note-test"  # a server of its own, not the session's


@pytest.mark.slow
@pytest.mark.parametrize(("sent", "hint"), [(signal.SIGKILL, "out-of-memory"),
                                            (signal.SIGSEGV, "llama.cpp crashed")])
def test_a_killed_local_server_is_named_with_its_exit_code(monkeypatch, sent, hint):
    monkeypatch.delenv(local_model(SMOLLM2).url_env, raising=False)
    client = ModelClient(ModelConfig(model="local", local_server=INSTANCE, max_retries=0))
    try:
        assert client.complete("Say hi.", max_tokens=4).text is not None  # started, answering
        server = local._servers[f"{SMOLLM2}#{INSTANCE}"]
        assert local.exit_note(SMOLLM2, INSTANCE) == ""  # running: nothing to say
        os.kill(server.process.pid, sent)
        server.process.wait(10)
        with pytest.raises(InfraError) as failed:
            client.complete("Say hi again.", max_tokens=4)
        assert failed.value.kind == "connection"
        assert f"exited with code -{int(sent)}" in str(failed.value)
        assert hint in str(failed.value)
        assert "its log ends: " in str(failed.value)  # beside the hint, the server's own word
    finally:
        gone = local._servers.pop(f"{SMOLLM2}#{INSTANCE}", None)
        if gone is not None:
            gone.stop()
