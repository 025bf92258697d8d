"""Sampled tokens' log-probs: read from an OpenAI chat response (dict or litellm object), kept
through the response cache, logged with the proposal."""

from __future__ import annotations

import json
from types import SimpleNamespace

from harness_learning.harnesses.llm.completion import Completion, TokenLogprob, parse_logprobs
from harness_learning.harnesses.llm.direct import to_completion
from harness_learning.harnesses.store import proposal_id

BODY = {"choices": [{"message": {"content": "Hi there"}, "finish_reason": "stop", "logprobs": {
    "content": [{"token": "Hi", "logprob": -0.5, "bytes": None, "top_logprobs": []},
                {"token": " there", "logprob": -1.25, "bytes": None, "top_logprobs": []}]}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}, "model": "m"}


def test_direct_transport_reads_logprobs():
    got = to_completion(json.dumps(BODY).encode(), 0.1, "m")
    assert got.logprobs == (TokenLogprob("Hi", -0.5), TokenLogprob(" there", -1.25))


def test_litellm_objects_and_absent_or_odd_logprobs():
    obj = SimpleNamespace(content=[SimpleNamespace(token="a", logprob=-2.0)])
    assert parse_logprobs(obj) == (TokenLogprob("a", -2.0),)
    assert parse_logprobs(None) is None and parse_logprobs({"content": None}) is None
    assert parse_logprobs({"content": [{"token": "a", "logprob": "x"}]}) is None
    body = {**BODY, "choices": [{**BODY["choices"][0], "logprobs": None}]}
    assert to_completion(json.dumps(body).encode(), 0.1, "m").logprobs is None


def test_cache_round_trip_keeps_logprobs():
    done = to_completion(json.dumps(BODY).encode(), 0.1, "m")
    again = Completion.from_dict(json.loads(json.dumps(done.to_dict())))
    assert again == done
    plain = Completion("t", 1, 1, 0.0, "stop", False, "m")
    assert Completion.from_dict(plain.to_dict()) == plain


def test_logged_with_the_proposal(tmp_path):
    from harness_learning.harnesses.store import SQLiteLogStore, new_proposal

    done = to_completion(json.dumps(BODY).encode(), 0.1, "m")
    with SQLiteLogStore(tmp_path / "run") as store:
        store.put_proposal(new_proposal(1, 0, "fix it", done, "search_replace"))
        got = store.get_proposal(proposal_id(1, 0))
    assert got.logprobs == [{"token": "Hi", "logprob": -0.5}, {"token": " there", "logprob": -1.25}]
