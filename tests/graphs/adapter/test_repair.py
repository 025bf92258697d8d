"""Second chances for the Proposer, in a real adapter run (real sandbox, real log; the models
are scripted, as this is control flow; the demo runs the same path with the real Qwen Proposer).
An unusable edit gets one repair turn that shows its error and the program's closest lines; an
edit that changes nothing is sampled afresh, told that a copy is refused but not shown it; every
attempt is logged."""

from __future__ import annotations

import asyncio

import pytest
from scripted_sums import ScriptedModel, SumTask, solver_rule

from harness_learning.graphs.adapter.config import AdaptConfig
from harness_learning.graphs.adapter.context import AdapterContext
from harness_learning.graphs.adapter.repair import NO_OP_NOTE, closest_lines
from harness_learning.graphs.adapter.run import run_adaptation
from harness_learning.harnesses.rundir import RunDir
from harness_learning.harnesses.seeds import seed_source

GOOD = ('<<<<<<< SEARCH\nPROMPT = """Solve the problem. Think briefly, then give the final '
        'answer on the last line\n=======\nPROMPT = """Solve the problem CAREFULLY. Think '
        'briefly, then give the final answer on the last line\n>>>>>>> REPLACE\n')
MISSED = GOOD.replace('PROMPT = """Solve the problem. Think', 'PROMPT = """Solve  the problem. Think', 1)
NOOP = ('<<<<<<< SEARCH\nclass State(TypedDict, total=False):\n=======\n'
        'class State(TypedDict, total=False):\n>>>>>>> REPLACE\n')
FIRST_LINE = ('"""Seed harness, reasoning track: one Solver call that answers directly. One '
              'worked example,')
DOCSTRING_ONLY = (f'<<<<<<< SEARCH\n{FIRST_LINE}\n=======\n'
                  f'{FIRST_LINE.replace("Seed", "The seed")}\n>>>>>>> REPLACE\n')


def run_with(tmp_path, model, turns: int = 1, size: int = 4):
    """One round, one candidate from Proposer `model`, `size` feedback and selection problems
    (scripted Solver): its view, its logged attempts and its proposal."""
    config = AdaptConfig(task="sums", run_dir=str(tmp_path / f"run{turns}"), rounds=1,
                         candidates=1, policy="best_valid", edit_format="search_replace",
                         feedback=size, selection=size, concurrency=size,
                         repair_turns=turns).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(size + 2),
                                     solver=ScriptedModel(solver_rule), proposer=model)
    final = asyncio.run(run_adaptation(config, context=ctx))
    with RunDir(config.path).open_store() as store:
        attempts = [e.payload for e in store.iter_events() if e.kind == "proposer_attempt"]
        [proposal] = list(store.iter_proposals())
    return final["rounds"][0]["candidates"][0], attempts, proposal


def run(tmp_path, scripted, proposer, turns: int = 1):
    """`run_with` a scripted Proposer answering by rule `proposer`; the model comes back too."""
    model = scripted(proposer)
    return (*run_with(tmp_path, model, turns), model)


def test_a_missed_search_is_repaired_with_the_closest_lines(tmp_path, scripted) -> None:
    def proposer(prompt: str, params: dict) -> str:
        return GOOD if "could not be used" in prompt else MISSED

    view, attempts, proposal, model = run(tmp_path, scripted, proposer)
    assert [a["attempt"] for a in attempts] == ["sample", "repair"]
    assert [a["invalid_kind"] for a in attempts] == ["unmatched_search", None]
    repair_prompt = model.calls[-1]
    assert "unmatched_search" in repair_prompt and MISSED in repair_prompt
    assert 'PROMPT = """Solve the problem. Think briefly' in repair_prompt.split("closest lines")[1]
    assert view["valid"] and proposal.completion == GOOD
    assert proposal.prompt[-1]["content"].startswith("Your answer could not be used")
    # the replaced answer is kept in its event; the kept one only in the proposal, once
    assert (attempts[0]["kept"], attempts[0]["completion"]) == (False, MISSED)
    assert attempts[1]["kept"] and "completion" not in attempts[1]


@pytest.mark.parametrize(("no_op", "kind"), [(NOOP, "unchanged"), (DOCSTRING_ONLY, "inert")])
def test_a_no_op_is_sampled_afresh_with_a_note_and_turns_off_with_zero(tmp_path, scripted,
                                                                        no_op, kind) -> None:
    seeds = []

    def proposer(prompt: str, params: dict) -> str:
        seeds.append(params["seed"])
        return GOOD if prompt.endswith(NO_OP_NOTE) else no_op

    view, attempts, proposal, model = run(tmp_path, scripted, proposer)
    assert [(a["attempt"], a["invalid_kind"]) for a in attempts] == [
        ("sample", kind), ("resample", None)] and view["valid"]
    assert seeds[1] != seeds[0] and no_op not in model.calls[-1]  # the copy is not shown back
    assert model.calls[-1] == model.calls[0] + NO_OP_NOTE
    assert proposal.prompt[-1]["content"].endswith(NO_OP_NOTE)
    view, attempts, _, _ = run(tmp_path, scripted, proposer, turns=0)
    assert [a["invalid_kind"] for a in attempts] == [kind] and not view["valid"]


def test_closest_lines_finds_the_run_a_search_meant() -> None:
    source = seed_source("reasoning_direct")
    near = closest_lines(source, '    return {"answer":answer}\n')
    before, line, after = near.split("\n")  # the best line, one line of context either side
    assert line == '        return {"answer": answer}' and "reply.rsplit" in before
    assert after == ""


SLOWLY = GOOD.replace("CAREFULLY. Think briefly", ". Think slowly")  # changes no score


def test_a_version_an_earlier_round_judged_is_sampled_afresh_a_siblings_is_not(
        tmp_path, scripted) -> None:
    """Two siblings proposing the same edit are both judged (they run concurrently, and which
    lands first must not decide how often the Proposer is called); the next round's repeat of
    that version, which was not adopted, is sampled afresh."""
    def proposer(prompt: str, params: dict) -> str:
        return GOOD if params["seed"] % 1_009 > 100 else SLOWLY  # a resample's seed: GOOD

    config = AdaptConfig(task="sums", run_dir=str(tmp_path / "run"), rounds=2, candidates=2,
                         policy="strict", edit_format="search_replace", feedback=4,
                         selection=4, concurrency=4, repair_turns=1
                         ).with_track_defaults("reasoning")
    ctx = AdapterContext.from_config(config, task=SumTask(8), solver=scripted(solver_rule),
                                     proposer=scripted(proposer))
    final = asyncio.run(run_adaptation(config, context=ctx))
    with RunDir(config.path).open_store() as store:
        attempts = [e.payload for e in store.iter_events() if e.kind == "proposer_attempt"]
    by_round = {r: sorted(a["attempt"] for a in attempts if a["round"] == r) for r in (1, 2)}
    assert by_round == {1: ["sample", "sample"],
                        2: ["resample", "resample", "sample", "sample"]}, attempts
    assert not final["rounds"][0]["adopted"]  # so round 2 had the same parent


class FirstAnswerPinned:
    """The real local Proposer (SmolLM2-135M) after a pinned first answer: the second chance's
    turn goes to a real chat template and a real model, whatever it then writes."""

    def __init__(self, first: str) -> None:
        from harness_learning.harnesses.llm import get_client

        self.first, self.real = first, get_client("local:smollm2-135m")
        self.config = self.real.config  # what the adapter reads: it asks for no log-probs
        self.prompts: list[list[dict[str, str]]] = []

    async def acomplete(self, messages, **params):
        self.prompts.append(list(messages))
        if len(self.prompts) == 1:
            return await ScriptedModel(lambda prompt, params: self.first).acomplete(messages)
        return await self.real.acomplete(messages, **{**params, "max_tokens": 96,
                                                      "temperature": 0.0})


@pytest.mark.slow
@pytest.mark.parametrize(("first", "attempt", "told"), [
    (NOOP, "resample", NO_OP_NOTE), (MISSED, "repair", "closest lines")])
def test_a_real_proposer_answers_the_second_chance_turn(local_model_url, tmp_path, first,
                                                         attempt, told) -> None:
    model = FirstAnswerPinned(first)
    view, attempts, proposal = run_with(tmp_path, model, size=2)
    assert [a["attempt"] for a in attempts] == ["sample", attempt]
    turn = model.prompts[-1]
    assert told in turn[-1]["content"] and turn[-1]["role"] == "user"
    shown_back = turn[-2]["role"] == "assistant" and turn[-2]["content"] == first
    assert shown_back == (attempt == "repair")  # a no-op is not shown back to be copied
    # the real model's answer is what was kept, checked and judged; the pinned one replaced
    assert proposal.completion.strip() and attempts[0]["completion"] == first
    assert attempts[1]["kept"] and "completion" not in attempts[1]  # stored once, in the proposal
    assert view["invalid_kind"] == attempts[1]["invalid_kind"]
