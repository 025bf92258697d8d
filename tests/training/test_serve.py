"""Closing the loop: a trained checkpoint answers as the Proposer through the model layer."""

import asyncio
import socket

import pytest

from harness_learning.training.serve import Generator, make_app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_checkpoint_serves_through_model_layer(tiny_dir):
    """A checkpoint behind the transformers endpoint, reached by `harnesses.llm` (litellm)."""
    from aiohttp import web

    from harness_learning.harnesses.llm import ModelClient

    port = _free_port()
    generator = Generator(tiny_dir)

    async def scenario():
        runner = web.AppRunner(make_app(generator, "proposer"))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            client = ModelClient(f"openai/proposer@http://127.0.0.1:{port}/v1")
            return await client.acomplete([{"role": "user", "content": "Improve the harness."}],
                                          max_tokens=8, temperature=1.0)
        finally:
            await runner.cleanup()

    completion = asyncio.run(scenario())
    assert completion.finish_reason in ("stop", "length")
    assert 0 < completion.completion_tokens <= 8


def test_logprobs_are_per_token_and_nonpositive(tiny_dir):
    generator = Generator(tiny_dir)
    result = generator.chat([{"role": "user", "content": "hi"}], max_tokens=5, logprobs=True)
    assert len(result["logprobs"]) == result["completion_tokens"]
    assert all(t["logprob"] <= 0 for t in result["logprobs"])
