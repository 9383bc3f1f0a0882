#!/usr/bin/env bash
# Chapter 08's two experiments on the book's CIFAR-10 models, 3 seeds each, sized for a shared two-core CPU:
#
#   gating    ConViT's gated positional self-attention (sa-gpsa, d'Ascoli et al. 2021), started local with
#             ConViT's locality strength 1 and trained, as ConViT, with AdamW (lr 1e-3, weight decay 0.05, none on
#             the gates: SGD's steps hardly move a gate in 200 steps); every run records each layer's gates
#             sigma(lambda_h) ten times an epoch (centers.jsonl).
#   position  position-only attention (sa-quadratic) against content attention (sa-content, sa-learned-content),
#             after Jelassi, Sander & Li (2022); heads.json holds each head's best shift, its mass and its mean
#             attention distance.
#
# Every run: cpu-quick's recipe and widths on 5,000 training images for 4 epochs, 4 x 4 space-to-depth blocks
# (an 8 x 8 token grid: a sixteenth of the attention cost of the 16 x 16 grid), bfloat16 autocast, one thread.
# At most two runs at a time. Resumable: a folder with a checkpoint resumes, a folder with final.json is skipped.
# Records: results/ch08-<experiment>-<model>-s<seed>/ (JSON and JSONL); the checkpoint and attention.npz of a
# finished run move to runs/ch08/ (ignored by git).
#
#   ATTNCONV_DATA=/path/to/data benchmarks/ch08_experiments.sh [--dry-run]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DRY=${1:-}

COMMON=(--config cpu-quick --set train_images=5000 --set epochs=4 --set precision=bf16 --set threads=1
        --set progress=False --set sa.block=4)

run_one() {  # experiment model seed [--set ...]
  local exp=$1 model=$2 seed=$3; shift 3
  local out="results/ch08-$exp-$model-s$seed" keep="runs/ch08/ch08-$exp-$model-s$seed"
  if [[ -f $out/final.json ]]; then echo "done already: $out"; return 0; fi
  local resume=()
  [[ -f $out/checkpoint.pt ]] && resume=(--resume)
  local cmd=("$PY" -m attnconv.train vision "${COMMON[@]}" --model "$model" --set "seed=$seed" "$@" --out "$out"
             "${resume[@]}")
  if [[ $DRY == --dry-run ]]; then echo "${cmd[*]}"; return 0; fi
  mkdir -p "$keep"
  echo "start $out $(date -u +%H:%M:%S)"
  nice -n 5 "${cmd[@]}" >> "$keep/train.log" 2>&1 || { echo "FAILED $out (see $keep/train.log)"; return 1; }
  for f in checkpoint.pt attention.npz; do if [[ -f $out/$f ]]; then mv "$out/$f" "$keep/"; fi; done
  echo "end $out $(date -u +%H:%M:%S)"
}
export -f run_one
export PY DRY
export COMMON_STR="${COMMON[*]}"

# One line per run, in the order they start: every seed of the first experiments before the optional model.
GATING="--set optimizer=adamw --set lr=0.001 --set weight_decay=0.05 --set sa.init_alpha=1.0 --set snapshots_per_epoch=10"
RUNS=""
for seed in 0 1 2; do
  RUNS+="position sa-content $seed"$'\n'
  RUNS+="gating sa-gpsa $seed $GATING"$'\n'
  RUNS+="position sa-quadratic $seed"$'\n'
done
for seed in 0 1 2; do
  RUNS+="position sa-learned-content $seed"$'\n'
done

# bash functions do not see arrays through export: rebuild COMMON in each child.
printf '%s' "$RUNS" | xargs -P 2 -L 1 bash -c 'read -ra COMMON <<< "$COMMON_STR"; run_one "$@"' _
