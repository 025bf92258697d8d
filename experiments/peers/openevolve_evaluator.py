"""OpenEvolve's evaluator file for `harness-learn bench peers`: OpenEvolve imports it in its
worker processes and calls `evaluate(program_path)`. It runs nothing itself: it sends the
program to the bench's meter (our sandboxed evaluation, counted, `HL_PEERS_METER` names its
URL) and hands back the score and our execution report (as an artifact OpenEvolve shows its
model)."""

import json
import os
import urllib.request

from openevolve.evaluation_result import EvaluationResult


def evaluate(program_path):
    with open(program_path, encoding="utf-8") as f:
        source = f.read()
    request = urllib.request.Request(os.environ["HL_PEERS_METER"] + "/evaluate",
                                     data=json.dumps({"source": source}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3600) as resp:
        reply = json.loads(resp.read())
    return EvaluationResult(metrics={"combined_score": float(reply["score"])},
                            artifacts={"feedback": reply["report"]})
