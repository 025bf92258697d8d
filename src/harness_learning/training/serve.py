"""Closing the loop: a trained checkpoint serves as the Proposer.

On GPUs: `vllm serve CHECKPOINT --served-model-name proposer` and point the Proposer's model
string at it (`openai/proposer` with its base URL). On CPU: `harness-learn train serve
CHECKPOINT` starts this small OpenAI-compatible endpoint backed by transformers; the model
layer reaches it through litellm like any other OpenAI-compatible server. A SmolLM2 student is
faster served by llama.cpp: `harness-learn train export CHECKPOINT --out S.gguf` (training/
export.py), then `--proposer S.gguf`. It answers
`GET /v1/models` and non-streaming `POST /v1/chat/completions` with optional token log-probs,
one request at a time.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from harness_learning.harnesses.offline import set_offline_switches

set_offline_switches()


class Generator:
    """A checkpoint and its tokenizer; `chat` runs one completion."""

    def __init__(self, checkpoint: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
        self.model = AutoModelForCausalLM.from_pretrained(str(checkpoint)).eval()

    def chat(self, messages: list[dict[str, str]], max_tokens: int = 256,
             temperature: float = 0.0, logprobs: bool = False) -> dict[str, Any]:
        torch = self.torch
        text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                  tokenize=False)
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        sample = temperature > 0
        with torch.no_grad():
            out = self.model.generate(
                ids, max_new_tokens=max_tokens, do_sample=sample,
                temperature=temperature if sample else None, top_p=None, top_k=None,
                output_scores=logprobs, return_dict_in_generate=True,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        new = out.sequences[0, ids.shape[1]:].tolist()
        eos = self.tokenizer.eos_token_id
        finish = "stop" if new and new[-1] == eos else "length"
        if finish == "stop":
            new = new[:-1]
        result: dict[str, Any] = {
            "text": self.tokenizer.decode(new, skip_special_tokens=True), "finish": finish,
            "prompt_tokens": ids.shape[1], "completion_tokens": len(new),
        }
        if logprobs:
            steps = [torch.log_softmax(s[0].float(), -1) for s in out.scores[: len(new)]]
            result["logprobs"] = [
                {"token": self.tokenizer.decode([t]), "logprob": float(s[t])}
                for t, s in zip(new, steps, strict=True)
            ]
        return result


def chat_response(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI chat.completion body for one generation."""
    choice: dict[str, Any] = {
        "index": 0, "finish_reason": result["finish"],
        "message": {"role": "assistant", "content": result["text"]},
    }
    if "logprobs" in result:
        choice["logprobs"] = {"content": result["logprobs"]}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
        "created": int(time.time()), "model": name, "choices": [choice],
        "usage": {"prompt_tokens": result["prompt_tokens"],
                  "completion_tokens": result["completion_tokens"],
                  "total_tokens": result["prompt_tokens"] + result["completion_tokens"]},
    }


def make_app(generator: Generator, name: str = "proposer") -> Any:
    from aiohttp import web

    lock = asyncio.Lock()

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model"}]})

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        if not isinstance(body.get("messages"), list):
            return web.json_response({"error": {"message": "messages must be a list"}},
                                     status=400)
        kwargs = dict(
            max_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 256),
            temperature=float(body.get("temperature") or 0.0),
            logprobs=bool(body.get("logprobs")),
        )
        async with lock:
            result = await asyncio.to_thread(generator.chat, body["messages"], **kwargs)
        return web.json_response(chat_response(name, result))

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    return app


def run_server(checkpoint: Path, host: str = "127.0.0.1", port: int = 8011,
               name: str = "proposer") -> None:
    """Serve `checkpoint` until interrupted."""
    from aiohttp import web

    web.run_app(make_app(Generator(Path(checkpoint)), name), host=host, port=port)
