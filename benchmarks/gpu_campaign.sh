#!/usr/bin/env bash
# One GPU campaign in at most nine minutes on one large GPU: gpu-10min for sa-quadratic and resnet18, a short
# BERT pretraining and a fine-tune, with full provenance, all under one output folder.
#
#   bash benchmarks/gpu_campaign.sh --data campaign-data.tar.gz --out OUT [--dry-run]
#
# --data: the archive of benchmarks/pack_data.py (CIFAR-10's JPEG zips and the NLTK zips); it is unpacked into
# OUT/data and checked against its manifest. --dry-run: the same steps and the same record layout at tiny sizes on
# the CPU (for the tests). Each step has its own time limit, in the config and as a hard `timeout`, so a slow
# step cannot eat the next one's time. Layout of OUT:
#   campaign.json                      device, versions, commit, start, end and wall time of the campaign
#   steps.jsonl                        one line per step: name, exit status, wall time
#   vision-sa-quadratic/ vision-resnet18/ bert-pretrain/ bert-finetune-mr/   the run folders (final.json,
#                                      provenance.json, metrics.jsonl, ...), each with its own provenance
#   logs/STEP.log                      each step's output
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
data="" out="" dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --data) data="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    *) echo "unknown argument: $1 (expected --data FILE --out DIR [--dry-run])" >&2; exit 2 ;;
  esac
done
[ -n "$data" ] && [ -f "$data" ] || { echo "--data must name the packed archive (benchmarks/pack_data.py)" >&2; exit 2; }
[ -n "$out" ] || { echo "--out DIR is needed" >&2; exit 2; }
PY="${PYTHON:-python}"
mkdir -p "$out/logs" "$out/data"
out="$(cd "$out" && pwd)"
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}" ATTNCONV_DATA="$out/data" ATTNCONV_CACHE="$out/cache"
start=$(date +%s.%N)

tar -xzf "$data" -C "$out/data" && "$PY" "$here/pack_data.py" --check "$out/data" > "$out/logs/unpack.log" 2>&1 \
  || { echo "the data archive could not be unpacked or failed its manifest" >&2; exit 1; }

if [ "$dry" = 1 ]; then  # tiny sizes on the CPU, the same steps and records
  V="--set device=cpu --set precision=fp32 --set compile=False --set sa.hidden_dim=16 --set sa.depth=1
     --set sa.num_heads=4 --set sa.head_dim=8 --set sa.mlp_dim=32 --set resnet.width=4 --set epochs=1
     --set batch_size=16 --set train_images=64 --set test_images=32 --set eval_batch_size=32
     --set attention_images=8 --set progress=False"
  SA="$V --set time_limit=60" RN="$V --set time_limit=60"
  P="--config smoke --set steps=4 --set eval_every=2 --set progress=False"
  F="--config smoke --set epochs=1 --set seeds=(0,)"
  limit_sa=300 limit_rn=300 limit_p=300 limit_f=300
else  # seconds of training per step (the config stops at the first epoch or evaluation past it)
  SA="--set time_limit=170 --set progress=False" RN="--set time_limit=70 --set progress=False"
  P="--config gpu-10min --set time_limit=100 --set eval_every=500 --set progress=False"
  F="--config gpu-10min --set epochs=1 --set seeds=(0,) --set progress=False"
  limit_sa=240 limit_rn=120 limit_p=150 limit_f=60
fi

step() {  # step NAME LIMIT COMMAND...: run with a hard time limit, record its status and wall time
  local name="$1" limit="$2"; shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  timeout --signal=INT --kill-after=15 "$limit" "$@" > "$out/logs/$name.log" 2>&1; rc=$?
  t1=$(date +%s.%N)
  "$PY" -c "import json,sys; print(json.dumps({'step': sys.argv[1], 'exit_status': int(sys.argv[2]), 'wall_time_s': float(sys.argv[4]) - float(sys.argv[3]), 'time_limit_s': int(sys.argv[5])}))" \
    "$name" "$rc" "$t0" "$t1" "$limit" >> "$out/steps.jsonl"
  echo "$name: exit $rc"
}

step vision-sa-quadratic "$limit_sa" "$PY" -m attnconv.train vision --config gpu-10min --model sa-quadratic \
  --data "$out/data" --out "$out/vision-sa-quadratic" $SA
step vision-resnet18 "$limit_rn" "$PY" -m attnconv.train vision --config gpu-10min --model resnet18 \
  --data "$out/data" --out "$out/vision-resnet18" $RN
step bert-pretrain "$limit_p" "$PY" -m attnconv.train bert-pretrain $P --variant composite \
  --data "$out/data/nltk/corpora" --cache "$out/cache" --out "$out/bert-pretrain"
step bert-finetune-mr "$limit_f" "$PY" -m attnconv.train bert-finetune $F --task mr \
  --from "$out/bert-pretrain" --data "$out/data/nltk/corpora" --out "$out/bert-finetune-mr"

"$PY" "$here/campaign_record.py" --out "$out" --start "$start" --dry-run "$dry"
