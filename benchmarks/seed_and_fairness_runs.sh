#!/usr/bin/env bash
# The runs behind two comparisons the book states, in two chains that can run side by side:
#   chain a: pretraining seeds 1 and 2 of `absolute` at cpu-quick, each fine-tuned on SUBJ and MR (3 seeds each)
#   chain b: two narrow ResNets (width 6: 99,616 parameters; width 7: 135,285) that bracket the attention model's
#            113,787, trained with cpu-long-bf16-sa-quadratic's recipe (cpu-long, 26 epochs, bfloat16, one thread)
#   chain c: the same as chain a for `composite-noabs`
# Usage: ATTNCONV_DATA=/path/to/data nice -n 10 bash benchmarks/seed_and_fairness_runs.sh a|b|c
# Every step resumes when its folder exists, so the same command continues an interrupted chain.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
chain=${1:?chain a, b or c}
export OMP_NUM_THREADS=1  # one thread per process, as the committed seed-0 runs
: "${ATTNCONV_DATA:?set ATTNCONV_DATA to the folder holding cifar10/ and nltk/}"

run() {  # run OUT CMD...: skip a finished run, resume a started one
  local out=$1; shift
  if [[ -f $out/final.json ]]; then echo "== done already: $out"; return; fi
  local resume=(); [[ -d $out ]] && resume=(--resume)
  echo "== $(date -u +%FT%TZ) start $out"
  "$@" --out "$out" "${resume[@]}"
  echo "== $(date -u +%FT%TZ) end $out"
}

bert_seed() {  # bert_seed VARIANT SEED
  local v=$1 s=$2 pre=results/bert-cpu-quick-$1-seed$2
  run "$pre" "$PY" -m attnconv.train bert-pretrain --config cpu-quick --variant "$v" --set seed="$s"\
    --set progress=False
  for task in subj mr; do
    run "$pre-$task" "$PY" -m attnconv.train bert-finetune --config cpu-quick --task "$task" --from "$pre" \
      --set progress=False
  done
}

case $chain in
  a) bert_seed absolute 1; bert_seed absolute 2 ;;
  b) for w in 6 7; do
       run results/cpu-long-bf16-resnet-w$w "$PY" -m attnconv.train vision --config cpu-long --model resnet18 \
         --set epochs=26 --set precision=bf16 --set threads=1 --set resnet.width=$w --set progress=False
     done ;;
  c) bert_seed composite-noabs 1; bert_seed composite-noabs 2 ;;
  *) echo "chain must be a, b or c, got $chain" >&2; exit 2 ;;
esac
