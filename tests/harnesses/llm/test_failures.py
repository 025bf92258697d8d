"""Only the parent's own failures are infrastructure (harnesses/llm/failures.py): an endpoint's
refusal of the request itself (400, 422, or a 5xx whose body is a request-validation error) is
the caller's fault; 401, 403, 404, 408 and 429 stay infrastructure; an unreadable body is
`malformed` only when the endpoint answered with success."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from harness_learning.harnesses.llm import ModelClient
from harness_learning.harnesses.llm.direct import check_status
from harness_learning.harnesses.llm.errors import InfraError, ModelRequestError
from harness_learning.harnesses.llm.failures import answered_status, classify
from harness_learning.harnesses.llm.litellm_loop import import_litellm

litellm = import_litellm()
URL = "http://127.0.0.1:9/v1/chat/completions"
VALIDATION = ("1 validation error:\n  {'type': 'float_parsing', 'loc': ('body', 'temperature'), "
              "'msg': 'Input should be a valid number', 'input': 'hot'}")


class StatusError(Exception):
    """What a provider SDK raises for an HTTP status (litellm's errors carry `status_code`)."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status_code = status


def answered(status: int, body: str) -> BaseException:
    """The error litellm raises for an HTTP `status` answer with `body`: reported with that
    status, caused by httpx's status error (as the openai client raises it)."""
    response = httpx.Response(status, request=httpx.Request("POST", URL), text=body)
    try:
        try:
            response.raise_for_status()
        except httpx.HTTPStatusError:
            raise StatusError(status, f"OpenAIException - {body}") from None
    except StatusError as exc:
        return exc
    raise AssertionError("unreachable")


def unreadable_success(body: str) -> BaseException:
    """What litellm raises for a 200 whose body is not JSON: a 500, caused by the decode error."""
    try:
        try:
            json.loads(body)
        except json.JSONDecodeError as err:
            raise litellm.InternalServerError(message=f"OpenAIException - {err}",
                                              llm_provider="openai", model="m") from err
    except litellm.InternalServerError as exc:
        return exc
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("status", "body"), [
    (400, "bad request"), (413, "too large"), (422, "unprocessable"),
    (500, VALIDATION), (503, VALIDATION.replace("1 validation error", "2 validation errors")),
    (500, '{"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field '
          'required"}], "error": "1 validation error for Request"}'),
])
def test_a_refused_request_is_the_callers_fault(status: int, body: str) -> None:
    err = classify(answered(status, body), litellm)
    assert isinstance(err, ModelRequestError) and not isinstance(err, InfraError), err


@pytest.mark.parametrize(("status", "kind"), [
    (401, "config"), (403, "config"), (404, "config"), (408, "timeout"), (429, "rate_limit"),
    (500, "server"), (502, "server"),
])
def test_the_parents_own_failures_stay_infrastructure(status: int, kind: str) -> None:
    err = classify(answered(status, "no"), litellm)
    assert isinstance(err, InfraError) and err.kind == kind, err


@pytest.mark.parametrize("status", [401, 404, 429])
def test_a_validation_error_at_an_infrastructure_status_stays_infrastructure(status: int) -> None:
    err = classify(answered(status, VALIDATION), litellm)
    assert isinstance(err, InfraError), err


def test_malformed_hints_match_only_a_successful_body() -> None:
    err = classify(unreadable_success('{"id": "x", "choices": ['), litellm)
    assert isinstance(err, InfraError) and err.kind == "malformed"
    assert answered_status(unreadable_success("{")) is None
    for body in ("Expecting value: line 1 column 1", "Invalid JSON upstream", "JSONDecodeError"):
        err = classify(answered(500, body), litellm)  # an error body that mentions JSON
        assert isinstance(err, InfraError) and err.kind == "server", (body, err)
    # a validation error of the endpoint's *answer* (no error status) is still malformed
    err = classify(Exception("Invalid response object: 1 validation error"), litellm)
    assert isinstance(err, InfraError) and err.kind == "malformed"


def test_litellms_own_request_errors_are_the_callers() -> None:
    bad = litellm.BadRequestError(message="context window exceeded", model="m",
                                  llm_provider="openai")
    assert isinstance(classify(bad, litellm), ModelRequestError)


@pytest.mark.parametrize(("status", "body", "expected"), [
    (500, VALIDATION, ModelRequestError), (422, "{}", ModelRequestError),
    (400, "{}", ModelRequestError), (408, "{}", InfraError), (500, "boom", InfraError),
    (429, "{}", InfraError), (401, VALIDATION, InfraError),
])
def test_the_direct_transport_sorts_statuses_the_same_way(status: int, body: str,
                                                          expected: type) -> None:
    with pytest.raises(expected) as info:
        check_status(status, body.encode(), {}, URL)
    if status == 408:
        assert info.value.kind == "timeout"


@pytest.mark.slow
def test_the_real_local_server_refusing_a_value_is_not_retried_as_infrastructure(
        local_model_url: str) -> None:
    """llama-cpp-python's server answers `temperature="hot"` with a 500 whose body is a
    validation error: one request, raised as the caller's fault."""
    client = ModelClient(f"openai/smol@{local_model_url}?max_retries=3&backoff_s=0.01")
    with pytest.raises(ModelRequestError, match="validation error") as info:
        client.complete("What is 2 + 2?", temperature="hot", max_tokens=4)
    assert not isinstance(info.value, InfraError)
    assert client.stats.requests == 1 and client.stats.retries == 0


def test_the_simulated_server_refuses_a_value_as_llama_cpp_does(sim: Any, sim_config: Any) -> None:
    """The SimServer answers a value llama-cpp-python's schema refuses the same way (a 500
    with a validation body), so the hostile suite's sim sees what a real server would do."""
    client = ModelClient(sim_config(sim))
    with pytest.raises(ModelRequestError, match="'loc': \\('body', 'top_p'\\)"):
        client.complete("What is 2 + 2?", top_p=3)
    assert sim.stats.requests == 1 and client.stats.retries == 0
    assert client.complete("What is 2 + 2?", temperature=0.5).text == "Answer: 4"
