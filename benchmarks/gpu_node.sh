#!/usr/bin/env bash
# Check the pack on a GPU node, offline, as is:   bash benchmarks/gpu_node.sh [OUT_DIR]
#
#   1. the GPU as torch sees it
#   2. a small Llama-architecture chat model built on the spot (random weights, no download)
#   3. `evalpack leaderboard run` with lm-eval's hf backend on CUDA over tulu_3_dev (every task
#      a local model can run: AlpacaEval needs a judge server), --limit docs per task
#   4. the same with lm-eval's vLLM backend, if vllm is installed
#   5. the sandbox's tests (execution and hardening, red-team included)
#   6. the execution benchmarks, the fixed-cost and the stream benchmarks
# and one summary at the end (also in OUT_DIR/summary.txt). A step that fails is reported and
# the next one runs. Needs the checkout's .venv with the `hf` extra (and `vllm` for step 4)
# and the offline mirror at ../shared/data (or EVALPACK_DATA_DIR).
#
# Settings: PY (python, default .venv/bin/python), LIMIT (docs per task, default 4),
# GEN_TOKENS (max new tokens, default 128: the model's answers are noise), DEVICE (cuda:0),
# TASKS (comma-separated, default: tulu_3_dev less AlpacaEval).

set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
EVALPACK=("$PY" -m evalpack)
LIMIT=${LIMIT:-4}
GEN_TOKENS=${GEN_TOKENS:-128}
DEVICE=${DEVICE:-cuda:0}
OUT=$(realpath -m "${1:-gpu_node_output}")
export EVALPACK_DATA_DIR=${EVALPACK_DATA_DIR:-$(realpath -m ../shared/data)}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
SUMMARY=()

step() {  # [HEADLINE=regex] step NAME COMMAND...: run it, its output in OUT/NAME.log, a
    # summary line: the log's last line, or its last line matching HEADLINE
    local name=$1 start=$SECONDS status
    shift
    echo "== $name: $*"
    "$@" >"$OUT/$name.log" 2>&1
    status=$?
    local line headline
    headline=$(grep -E "${HEADLINE:-.}" "$OUT/$name.log" | tail -n 1)
    line=$(printf '%-14s %-6s %5ds  %s' "$name" "$([ $status = 0 ] && echo ok || echo FAILED)" \
           $((SECONDS - start)) "$(echo "${headline:-$(tail -n 1 "$OUT/$name.log")}" | cut -c1-110)")
    SUMMARY+=("$line")
    echo "$line"
    return $status
}

board() {  # board MODEL MODEL_ARGS: the leaderboard for one backend (named after it), then its report
    local model=$1 args=$2
    cat >"$OUT/$model.yaml" <<EOF
checkpoints:
  - {name: tiny-$model, model: $model, model_args: "$args"}
EOF
    "${EVALPACK[@]}" leaderboard run --models "$OUT/$model.yaml" --suite tulu_3_dev \
        --tasks "$TASKS" --limit "$LIMIT" --output "$OUT/board-$model" \
        -- --gen_kwargs "max_gen_toks=$GEN_TOKENS" &&
    "${EVALPACK[@]}" report "$OUT/board-$model" --output "$OUT/board-$model/report" \
        --reference none &&
    "$PY" - "$OUT/board-$model" <<'EOF'
import json, sys
from pathlib import Path
board = Path(sys.argv[1])
loads = [json.loads(l) for p in board.glob("*/workers.jsonl") for l in p.read_text().splitlines()]
pairs = {p.parent.name: json.loads(p.read_text())["seconds"] for p in board.glob("*/*/done")}
print("per pair (s): " + ", ".join(f"{t} {s:.1f}" for t, s in sorted(pairs.items())))
print(f"{len(pairs)} pairs done, {len(loads)} model load(s): "
      + ", ".join(f"{r['seconds']:.1f} s" for r in loads))
EOF
}

step gpu "$PY" -c "
import torch
assert torch.cuda.is_available(), 'torch sees no CUDA device'
print(torch.cuda.get_device_name(0), torch.version.cuda, f'{torch.cuda.mem_get_info()[1] / 2**30:.0f} GiB')"
step tiny-model "$PY" benchmarks/tiny_model.py "$OUT/tiny-model"
# tulu_3_dev less AlpacaEval and less the tasks whose data the offline mirror lacks (the
# leaderboard would report them as "could not run"); those are named in the summary
if [ -z "${TASKS:-}" ]; then
    read -r TASKS LEFT_OUT < <("$PY" -c "
from evalpack.core import catalog
from evalpack.leaderboard import plan
entries = [e for e in catalog.suite_tasks(catalog.load_suites(), 'tulu_3_dev')
           if e['task'] != 'alpaca_eval_v2_tulu']
missing = [e['task'] for e in entries
           if any(not f.is_file() for f in plan.task_needs(e, {}).files)]
print(','.join(e['task'] for e in entries if e['task'] not in missing), ','.join(missing) or '-')")
    [ "$LEFT_OUT" = - ] || SUMMARY+=("$(printf '%-14s %-6s %5ds  %s' tasks 'left out' 0 \
        "not in the offline mirror: $LEFT_OUT")")
fi
step hf board hf "pretrained=$OUT/tiny-model,max_length=4096,dtype=float16,device=$DEVICE,batch_size=16"
if "$PY" -c "import vllm" 2>/dev/null; then
    step vllm board vllm "pretrained=$OUT/tiny-model,max_model_len=4096,gpu_memory_utilization=0.3"
else
    SUMMARY+=("$(printf '%-14s %-6s %5ds  %s' vllm skipped 0 'vllm is not installed (pip install -e ".[vllm]")')")
fi
step sandbox "$PY" -m pytest -q tests -k "execution or sandbox"
HEADLINE='^evalpack +[0-9]' step execution "$PY" benchmarks/execution.py --copies 5 --rounds 2
HEADLINE='^evalpack +[0-9]' step execution-plus "$PY" benchmarks/execution_plus.py --copies 2 --rounds 1
HEADLINE='include path only' step fixed-costs "$PY" benchmarks/fixed_costs.py
HEADLINE='^stream' step stream "$PY" benchmarks/stream.py --limit 20

{
    echo "evalpack GPU node check, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null)"
    echo "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1), $(nproc) CPUs"
    printf '%s\n' "${SUMMARY[@]}"
    echo "logs: $OUT/<step>.log; boards: $OUT/board-hf, $OUT/board-vllm"
} | tee "$OUT/summary.txt"
