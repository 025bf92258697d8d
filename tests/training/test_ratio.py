"""Offline GRPO's importance ratio against logged log-probs: alignment rules, statistics, and a
real optimizer step on a log whose log-probs a known policy wrote."""

import dataclasses
import math
import shutil

import pytest
import torch
from typer.testing import CliRunner

from harness_learning.cli import app
from harness_learning.training.config import GRPOOfflineConfig
from harness_learning.training.ratio import (
    NO_LOGPROBS,
    TOKENS_DIFFER,
    OldLogprobReport,
    align_logged,
    ratio_stats,
)


class Pieces:
    """A tokenizer stand-in for the alignment rules: token id i decodes to piece i."""

    def __init__(self, pieces):
        self.pieces = pieces

    def decode(self, ids):
        return "".join(self.pieces[i] for i in ids)


def test_alignment_rules():
    tok = Pieces(["a", "b", "c"])
    ids = [0, 1, 2]
    assert align_logged([], [], ids, True, 4, tok) == (None, NO_LOGPROBS)
    assert align_logged([-1.0] * 4, [], ids, True, 4, tok) == ([-1.0] * 4, None)
    got, why = align_logged([-1.0] * 3, ["a", "b", "c"], ids, True, 4, tok)
    assert why is None and got[:3] == [-1.0] * 3 and math.isnan(got[3])
    assert align_logged([-1.0] * 3, ["a", "b", "c"], ids, False, 2, tok) == ([-1.0] * 2, None)
    assert align_logged([-1.0] * 3, ["a", "bc", ""], ids, False, 3, tok) == (None, TOKENS_DIFFER)
    assert align_logged([-1.0] * 5, [], ids, True, 4, tok)[1] == \
        "token count differs (endpoint 5, ours 3)"


def test_ratio_statistics_and_note():
    stats = ratio_stats([torch.tensor([1.0, 1.0]), torch.tensor([0.5, 2.0])], 0.2, 0.28)
    assert stats.tokens == 4 and stats.mean == pytest.approx(1.125)
    assert (stats.min, stats.max, stats.outside_clip) == (0.5, 2.0, 0.5)
    assert ratio_stats([], 0.2, 0.28) is None
    report = OldLogprobReport(logged=3)
    report.recomputed[NO_LOGPROBS] += 2
    assert report.note() == ("logged log-probs used for 3/5 completions; recomputed from the "
                             "base model for 2 (2 no log-probs in the log)")


def _log_policy(logged_run, tiny_dir, tmp_path, shift: float):
    """A copy of the run whose proposals carry the tiny model's own log-probs minus `shift`,
    token by token (as an endpoint logs them: text tokens only, no end-of-turn)."""
    from transformers import AutoTokenizer

    from harness_learning.harnesses.store import SQLiteLogStore
    from harness_learning.training.data import grpo_dataset
    from harness_learning.training.grpo_offline import completion_logprobs, encode
    from harness_learning.training.loading import load_model

    run = tmp_path / "run"
    shutil.copytree(logged_run, run)
    tok = AutoTokenizer.from_pretrained(str(tiny_dir))
    model = load_model(str(tiny_dir)).eval()
    ds, _ = grpo_dataset([run], GRPOOfflineConfig(max_length=512))
    with SQLiteLogStore(run) as store, torch.no_grad():
        for row in ds:
            e = encode(tok, row, 512)
            lp = completion_logprobs(model, e, "cpu")[: len(e.text_ids)] - shift
            logged = store.get_proposal(row["proposal_id"])
            store.put_proposal(dataclasses.replace(logged, logprobs=[
                {"token": tok.decode([t]), "logprob": float(v)}
                for t, v in zip(e.text_ids, lp, strict=True)]))
    return run, len(ds)


@pytest.mark.parametrize("shift", [0.0, 0.5])
def test_step_one_ratio_measures_the_logging_policy(logged_run, tiny_dir, tmp_path, shift):
    from harness_learning.training.grpo_offline import train_grpo_offline

    run, n = _log_policy(logged_run, tiny_dir, tmp_path, shift)
    cfg = GRPOOfflineConfig(model=str(tiny_dir), out=str(tmp_path / "out"), max_steps=1,
                            batch_size=n, lora=False, max_length=512, save=False)
    result = train_grpo_offline([run], cfg, progress=False)
    assert f"logged log-probs used for {n}/{n} completions" in result.report.notes
    first = result.ratio["step 1"]
    # Same policy: ratio 1; the log's policy 0.5 nats less likely: exp(0.5) on every token.
    assert first.mean == pytest.approx(math.exp(shift), abs=1e-3)
    assert first.min == pytest.approx(math.exp(shift), abs=1e-3)
    assert first.outside_clip == (1.0 if shift else 0.0)


def test_cli_prints_the_ratio(logged_run, tiny_dir, tmp_path):
    run, n = _log_policy(logged_run, tiny_dir, tmp_path, 0.5)
    result = CliRunner().invoke(app, [
        "train", "grpo-offline", "--logs", str(run), "--model", str(tiny_dir),
        "--out", str(tmp_path / "out"), "--max-steps", "1", "--batch-size", str(n),
        "--no-lora", "--max-length", "512", "--no-save"])
    assert result.exit_code == 0, result.output
    assert f"data: logged log-probs used for {n}/{n} completions" in result.output
    line = next(x for x in result.output.splitlines() if "step 1:" in x)
    assert line.startswith("importance ratio vs the logged log-probs, step 1:")
    assert "mean 1.648" in line and "outside the clip range 100.0%" in line


def test_the_sampled_split_is_kept_when_it_is_not_the_canonical_one(tokenizer_dir):
    from transformers import AutoTokenizer

    from harness_learning.training.grpo_offline import encode
    from harness_learning.training.ratio import sampled_ids

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    text = 'x = {"content": {}, "a": 1}'
    canonical = tok(text, add_special_tokens=False)["input_ids"]
    pieces = [tok.decode([i]) for i in canonical]
    k = pieces.index(" {},")  # SmolLM2 once sampled ' {}' then ',' here (a real log)
    pieces[k:k + 1] = [" {}", ","]
    ids = sampled_ids(tok, pieces, text)
    assert ids is not None and len(ids) == len(canonical) + 1
    assert [tok.decode([i]) for i in ids] == pieces
    assert sampled_ids(tok, pieces, text + "!") is None  # pieces must spell the completion
    row = {"prompt": [{"role": "user", "content": "q"}], "completion": text, "advantage": 0.0,
           "reward": 0.0, "finish_reason": "length", "old_tokens": pieces}
    assert encode(tok, row, 4096).text_ids == ids
    assert encode(tok, {**row, "old_tokens": []}, 4096).text_ids == canonical
