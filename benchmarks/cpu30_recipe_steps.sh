#!/usr/bin/env bash
# What each change of the cpu-30min recipe bought, measured back to back on one machine: the same torchrun command
# (two processes of one thread, bfloat16, all 50,000 training images, the 2,000-image test subset each epoch, the
# full 10,000 with the mirrored look at the end) for 6 epochs, once per step of the recipe:
#
#   v1          the first cpu-30min recipe: dropout 0.1
#   no-dropout  dropout 0 (faster steps: no masks; more fitting in few epochs): today's cpu-30min
#   wd-5e-4     dropout 0 and weight decay 5e-4 instead of 1e-4 (tried; it slowed the fitting)
#   no-smoothing  dropout 0 and no label smoothing
#
# Six epochs are a proxy for the 22 of the recipe; the cosine is compressed to them. Records:
# results/cpu-30min-steps-<step>/ (the checkpoint and attention maps move to runs/cpu30-steps/, ignored by git).
#
#   ATTNCONV_DATA=/path/to/data benchmarks/cpu30_recipe_steps.sh [--dry-run]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
DRY=${1:-}
COMMON=(--config cpu-30min --model sa-quadratic --set epochs=6 --set progress=False)

run_one() {  # step [--set ...]
  local step=$1; shift
  local out="results/cpu-30min-steps-$step" keep="runs/cpu30-steps/$step"
  if [[ -f $out/final.json ]]; then echo "done already: $out"; return 0; fi
  local resume=()
  [[ -f $out/checkpoint.pt ]] && resume=(--resume)
  local cmd=("$BIN/torchrun" --standalone --nproc_per_node 2 -m attnconv.train vision "${COMMON[@]}" "$@"
             --out "$out" "${resume[@]}")
  if [[ $DRY == --dry-run ]]; then echo "${cmd[*]}"; return 0; fi
  mkdir -p "$keep"
  echo "start $out $(date -u +%H:%M:%S)"
  OMP_NUM_THREADS=1 "${cmd[@]}" >> "$keep/train.log" 2>&1 || { echo "FAILED $out (see $keep/train.log)"; return 1; }
  for f in checkpoint.pt attention.npz; do if [[ -f $out/$f ]]; then mv "$out/$f" "$keep/"; fi; done
  echo "end $out $(date -u +%H:%M:%S)"
}

run_one v1 --set sa.dropout=0.1
run_one no-dropout
run_one wd-5e-4 --set weight_decay=5e-4
run_one no-smoothing --set label_smoothing=0
[[ $DRY == --dry-run ]] || "$BIN/python" benchmarks/cpu30_recipe_table.py
