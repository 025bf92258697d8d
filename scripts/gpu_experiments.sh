#!/usr/bin/env bash
# Both paper tracks at the paper's sizes on one GPU machine, with vLLM-served Qwen3-class models:
#
#   bash scripts/gpu_experiments.sh                 # OUT=runs/paper, Qwen/Qwen3-8B for both roles
#   SOLVER_MODEL=/models/Qwen3-8B PROPOSER_MODEL=/models/Qwen3-4B bash scripts/gpu_experiments.sh
#
# Stages (each `harness-learn experiment` call reuses finished runs, so a killed script resumes):
#   1. `vllm serve` the Solver (port 8000) and the base Proposer (port 8001);
#   2. both tracks with the untrained Proposer: baselines, adaptation, single-step vs relay,
#      3 seeds, plus the training-type runs whose logs train the Proposer;
#   3. (TRAIN=1) train the Proposer from those logs (src/harness_learning/training/gpu/train_qwen3_4b.sh), serve the
#      checkpoint on port 8002 and rerun both tracks with --trained-proposer: only the trained
#      rows run, and each report is rewritten with them;
#   4. racing replayed on the QA track's logged rounds (`bench racing --from-log`).
# Needs: `pip install -e '.[training]' vllm`, the weights in the local Hugging Face cache or a
# directory (nothing is downloaded: HF_HUB_OFFLINE=1), and the full dev sets named in
# experiments/qa.toml's [paper.datasets] under $HARNESS_LEARNING_DATA.
#
# Expected on one H200 (141 GB) -- ESTIMATES from call counts and typical vLLM throughput, not
# measured on this project's hardware:
#   memory: two 8B models in bf16, 16 GB of weights each; --gpu-memory-utilization 0.42 each
#     (~59 GB per server incl. KV cache) -> ~120 GB; in stage 3 the trained Proposer takes the
#     base one's place (the untrained runs are finished by then).
#   training (stage 3, per track): see src/harness_learning/training/gpu/train_qwen3_4b.sh, ~3-4 h.
#   reasoning: 10 test types x 3 seeds x (5x1 + 1x5 runs) + 12 training types x 3 seeds = 96 runs,
#     ~600 Solver calls each (25 dev + 5 x 25 selection + up to 6 versions x 75 test) -> ~60k
#     calls of <= 1k tokens; at ~5k generated tokens/s with 16 problems in flight: ~3-5 h.
#   qa: 2 tasks x 3 seeds x (8x10 + 1x8 + 8x1 runs) + 3 HotpotQA runs = 21 runs; a 8x10 run
#     evaluates ~5.8k harness executions on selection (3-5 Solver calls each) plus 300 test
#     questions x 11 versions: ~30k calls per run, ~400k calls in all at <= 512 tokens ->
#     ~1-2 days at 32 questions in flight. Halve `seeds` in the config to halve it.
#   Proposer calls are few (<= 80 per QA run) but long (8k-token whole programs).
set -euo pipefail
cd "$(dirname "$0")/.."

SOLVER_MODEL=${SOLVER_MODEL:-Qwen/Qwen3-8B}
PROPOSER_MODEL=${PROPOSER_MODEL:-Qwen/Qwen3-8B}
OUT=${OUT:-runs/paper}
UTIL=${UTIL:-0.42}
TRAIN=${TRAIN:-0}
HL=${HL:-harness-learn}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
SOLVER="openai/solver@http://127.0.0.1:8000/v1"
PROPOSER="openai/proposer@http://127.0.0.1:8001/v1"

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p "$OUT"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

serve() {  # serve MODEL NAME PORT
  vllm serve "$1" --served-model-name "$2" --port "$3" --gpu-memory-utilization "$UTIL" \
    --max-model-len 32768 >"$OUT/vllm-$2.log" 2>&1 &
  PIDS+=($!)
  until curl -sf "http://127.0.0.1:$3/v1/models" >/dev/null; do sleep 5; done
}

# 1. Solver and base Proposer.
serve "$SOLVER_MODEL" solver 8000
serve "$PROPOSER_MODEL" proposer 8001

# 2. Both tracks, untrained Proposer (the trained rows say "not trained" for now).
for track in reasoning qa; do
  $HL experiment "experiments/$track.toml" --out "$OUT/$track" --solver "$SOLVER" \
    --proposer "$PROPOSER"
done

# 3. Train on the training-type logs (the trainer starts its own Solver server, so ours stop
#    first), then serve the Solver and the checkpoint and add the trained rows.
if [ "$TRAIN" = 1 ]; then
  for track in reasoning qa; do
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    PIDS=()
    sleep 10
    RUNS="$(ls -d "$OUT/$track"/runs/*/train_logs/seed* | tr '\n' ' ')" MODEL="$PROPOSER_MODEL" \
      SOLVER_MODEL="$SOLVER_MODEL" OUT="$OUT/train-$track" bash src/harness_learning/training/gpu/train_qwen3_4b.sh
    serve "$SOLVER_MODEL" solver 8000
    serve "$OUT/train-$track/grpo-online/checkpoint" "trained-$track" 8002
    $HL experiment "experiments/$track.toml" --out "$OUT/$track" --solver "$SOLVER" \
      --proposer "$PROPOSER" --trained-proposer "openai/trained-$track@http://127.0.0.1:8002/v1"
  done
fi
# 4. Racing on real rounds: the QA track's 8-candidate rounds are fully evaluated (best_valid),
#    so they give rho and a replay of racing against full evaluation with a real Proposer.
RACING_LOGS=()
for d in "$OUT"/qa/runs/*/untrained/seed*; do RACING_LOGS+=(--from-log "$d"); done
$HL bench racing "${RACING_LOGS[@]}" --json >"$OUT/racing-logged.txt"
# (Pool intervals, `--pool-resamples 40`, take ~17 s a round of CPU: run them on the fetched
# logs afterwards, not on the GPU's clock.)
# ... and the same rounds under a rule that keeps more contenders (1.6x fewer calls, not 2x):
# with the default's rows above, where a real round sits on the calls/P(best) trade-off.
$HL bench racing "${RACING_LOGS[@]}" --race '{"fractions": [0.3125, 0.75, 1], "keep": [0.5, 0.75]}' \
  --json >"$OUT/racing-logged-keep4then3.txt"
echo "reports: $OUT/reasoning/report.md $OUT/qa/report.md $OUT/racing-logged*.txt"
