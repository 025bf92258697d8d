#!/usr/bin/env bash
# Train a Qwen3 4B-class Proposer on one GPU machine: SFT warm start -> offline GRPO -> online
# GRPO (vLLM generation), then serve the result with `vllm serve` as the Proposer.
#
#   RUNS="runs/qa-1 runs/qa-2" bash src/harness_learning/training/gpu/train_qwen3_4b.sh
#
# Needs: `pip install -e '.[training]' vllm` (vllm pins its own CUDA torch), the model weights in
# the local Hugging Face cache or a local directory (MODEL=...), and execution logs from adapter
# runs (RUNS). Nothing is downloaded when HF_HUB_OFFLINE=1 (the default here).
#
# Expected on one H200 (141 GB) or one 80 GB A100/H100, bf16, LoRA r=16 -- ESTIMATES from
# parameter counts and TRL/vLLM defaults, not measured on this project's hardware:
#   weights 8 GB (4.0B params, bf16); LoRA optimizer state < 1 GB; activations with gradient
#   checkpointing at 8k tokens per sequence ~10-15 GB; colocated vLLM at
#   gpu_memory_utilization 0.30 ~42 GB on an H200 (24 GB on 80 GB cards); Solver `vllm serve`
#   at 0.30 ~42 GB.  Peak ~75-90 GB on an H200 (fits 80 GB cards with VLLM_UTIL=0.2).
#   SFT:          ~1-2 s per step (batch 4, 8k tokens)         -> 200 steps ~5 min
#   offline GRPO: ~2-4 s per step (batch 8) + one log-prob pass over the set at the start
#                                                                -> 200 steps ~10-15 min
#   online GRPO:  generation 8 x 2k tokens ~20-40 s, then candidate evaluation dominates:
#                 8 candidates x NUM_PROBLEMS selection problems through the Solver
#                 (~1-3 min at 16 problems) -> ~2-4 min per step; 50 steps ~2-3 h.
set -euo pipefail
cd "$(dirname "$0")/../../../.."

MODEL=${MODEL:-Qwen/Qwen3-4B}
SOLVER_MODEL=${SOLVER_MODEL:-$MODEL}
RUNS=${RUNS:?set RUNS to one or more adapter run directories}
OUT=${OUT:-runs/train-qwen3-4b}
TASK=${TASK:-}                      # empty: the task recorded in the logs
SOLVER_PORT=${SOLVER_PORT:-8000}
PROPOSER_PORT=${PROPOSER_PORT:-8001}
VLLM_UTIL=${VLLM_UTIL:-0.30}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
HL=${HL:-harness-learn}
LOGS=()
for r in $RUNS; do LOGS+=(--logs "$r"); done

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
mkdir -p "$OUT"

# 1. SFT warm start on successful edits.
$HL train sft "${LOGS[@]}" --model "$MODEL" --out "$OUT/sft" --max-steps "${SFT_STEPS:-200}" \
  --batch-size 4 --max-length 8192 --learning-rate 2e-5 --lora

# 2. Offline GRPO on the logged groups, from the SFT checkpoint.
$HL train grpo-offline "${LOGS[@]}" --model "$OUT/sft/checkpoint" --out "$OUT/grpo-offline" \
  --max-steps "${OFFLINE_STEPS:-200}" --batch-size 8 --max-length 8192 --learning-rate 1e-5 \
  --lora --scale-by-std

# 3. Online GRPO: a Solver endpoint for the evaluated harnesses, vLLM (colocated) generation.
vllm serve "$SOLVER_MODEL" --port "$SOLVER_PORT" --served-model-name solver \
  --gpu-memory-utilization "$VLLM_UTIL" --max-model-len 16384 >"$OUT/solver.log" 2>&1 &
SOLVER_PID=$!
trap 'kill $SOLVER_PID 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$SOLVER_PORT/v1/models" >/dev/null; do sleep 5; done
$HL train grpo-online "${LOGS[@]}" ${TASK:+--task "$TASK"} \
  --model "$OUT/grpo-offline/checkpoint" --out "$OUT/grpo-online" --use-vllm \
  --solver "openai/solver@http://127.0.0.1:$SOLVER_PORT/v1" \
  --max-steps "${ONLINE_STEPS:-50}" --num-generations 8 --batch-size 8 \
  --max-completion-length 2048 --max-length 10240 --num-problems "${NUM_PROBLEMS:-16}" \
  --concurrency 16 --lora

# 4. Close the loop: the trained Proposer behind vllm serve, used by the adapter.
echo "serve the Proposer with:"
echo "  vllm serve $OUT/grpo-online/checkpoint --port $PROPOSER_PORT --served-model-name proposer"
echo "  harness-learn adapt ... --proposer 'openai/proposer@http://127.0.0.1:$PROPOSER_PORT/v1'"
