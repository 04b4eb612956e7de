#!/usr/bin/env bash
# hcomm-collective on real training tensors beside synthetic data of the same sizes.
#
#   bench/comm/real_tensors.sh                        # defaults below, over shared memory
#   NET=1gbit bench/comm/real_tensors.sh              # 2 emulated nodes, 1 Gbit/s links (root)
#   DUMP=out/dump SKIP_TRAIN=1 bench/comm/real_tensors.sh   # measure an earlier dump again
#
# 1. train_gpt trains MODEL on a 2x2x2 grid (8 ranks) for STEPS steps and dumps step DUMP_STEP
#    (--dump-tensors DUMP; examples/gpt/README.md lists the files).
# 2. hcomm-collective on 2 ranks (OMP_NUM_THREADS=1), CODECS and MPI's own operation
#    (--baseline), --threshold 0, ITERS timed iterations, once per tensor kind:
#      dp-grad      allreduce of a DP group's two gradient files (ranks 0 and 2: the replicas
#                   that sum together; rank r of the tool sends file r)
#      tp-fwd/bwd   allreduce of a TP group's two partial-sum files (ranks 0 and 1), forward
#                   and backward
#      pp-act       p2p of the activation rank 0 sends forward
#      pp-grad      p2p of the activation gradient rank 4 sends backward
#    and each again on --data smooth and --data random at the same --bytes (the file's):
#    ROUNDS rounds of (file, smooth, random), so every cell has its synthetic neighbours
#    measured seconds apart.
# 3. JSON lines (hcomm-collective's, with "tensor", "link", "date" and "rep" added) to OUT,
#    then the table of real_tensors_table.py: per tensor x codec the ratio, rel_error, algbw
#    and the speed-up over MPI on the real tensor, smooth and random data.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
TRAIN_GPT=${TRAIN_GPT:-$BUILD/examples/gpt/train_gpt}
BIN=${BIN:-$BUILD/tools/hcomm-collective/hcomm-collective}
MODEL=${MODEL:-small}
STEPS=${STEPS:-200}
DUMP_STEP=${DUMP_STEP:-$STEPS}
DUMP=${DUMP:-$ROOT/out/real-tensors-dump}
SKIP_TRAIN=${SKIP_TRAIN:-0}
CODECS=${CODECS:-mpc,zfp:8,zfp:16,bf16,none}
ITERS=${ITERS:-20}
ROUNDS=${ROUNDS:-3}
NET=${NET:-}  # empty: shared memory; a tc rate (1gbit): scripts/netns-mpirun.sh, 2 nodes
OUT=${OUT:-$HERE/results-$(date -u +%Y%m%d)-real-tensors${NET:+-$NET}.jsonl}
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in "$TRAIN_GPT" "$BIN"; do
  [ -x "$b" ] || { echo "real_tensors: build $(basename "$b") first ($b; BUILD=DIR)" >&2; exit 2; }
done

if [ "$SKIP_TRAIN" != 1 ]; then
  [ ! -e "$DUMP" ] || { echo "real_tensors: $DUMP exists (remove it, or SKIP_TRAIN=1 to measure it)" >&2; exit 2; }
  echo "== train_gpt --model $MODEL 2x2x2, $STEPS steps, dumping step $DUMP_STEP into $DUMP" >&2
  mpirun --oversubscribe -n 8 "$TRAIN_GPT" --model "$MODEL" --dp 2 --pp 2 --tp 2 --steps "$STEPS" --sample 0 \
    --data "$ROOT/data/kjv.txt" --dump-tensors "$DUMP" --dump-step "$DUMP_STEP" | grep -E "^(train_gpt|dumped|step +($DUMP_STEP|$STEPS)/)" >&2
fi
[ -f "$DUMP/manifest.tsv" ] || { echo "real_tensors: no $DUMP/manifest.tsv" >&2; exit 2; }

launch() {  # the tool on 2 ranks, over shared memory or the emulated links
  if [ -n "$NET" ]; then "$ROOT/scripts/netns-mpirun.sh" --ranks 2 --rate "$NET" -- "$BIN" "$@"
  else mpirun --oversubscribe -n 2 "$BIN" "$@"; fi
}
stamp=$(date -u +%Y-%m-%dT%H:%MZ)
measure() {  # TENSOR OP FILES: the files, then smooth and random at the files' size
  local tensor=$1 op=$2 files=$3 bytes rep data
  bytes=$(stat -c %s "${files%%,*}")
  for rep in $(seq 1 "$ROUNDS"); do
    for data in "$files" smooth random; do
      echo "== $tensor ($op, $bytes bytes per rank), round $rep: --data $data" >&2
      launch --op "$op" --codec "$CODECS" --baseline --bytes "$bytes" --iters "$ITERS" --threshold 0 --data "$data" |
        grep '^{' | sed "s/}\$/,\"tensor\":\"$tensor\",\"link\":\"${NET:-shm}\",\"date\":\"$stamp\",\"rep\":$rep}/" >> "$OUT"
    done
  done
}
measure dp-grad allreduce "$DUMP/dp-grad.r0.f32,$DUMP/dp-grad.r2.f32"
measure tp-fwd allreduce "$DUMP/tp-partial-fwd.r0.mb0.f32,$DUMP/tp-partial-fwd.r1.mb0.f32"
measure tp-bwd allreduce "$DUMP/tp-partial-bwd.r0.mb0.f32,$DUMP/tp-partial-bwd.r1.mb0.f32"
measure pp-act p2p "$DUMP/pp-act-fwd.r0.mb0.f32"
measure pp-grad p2p "$DUMP/pp-grad-bwd.r4.mb0.f32"

python3 "$HERE/real_tensors_table.py" "$OUT" --date "$stamp"
