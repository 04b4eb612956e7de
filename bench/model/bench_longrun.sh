#!/usr/bin/env bash
# The long-run quality half of the paper's experiment: MODEL trained STEPS steps on the
# emulated cluster (scripts/netns-mpirun.sh: 4 nodes x 2 ranks, 2x2x2, TP inside the nodes,
# DP and PP across the links) at one link RATE, every scheme once with the first of SEEDS, and
# the uncompressed run with each of SEEDS (initialisation seeds; the data order is the same)
# to give the noise floor. Runs alternate (none seed 1, scheme A, none seed 2, scheme B, ...)
# so that a drift of the machine's speed spreads over all of them. Writes, under $OUT,
# <scheme>[_seed<s>].jsonl and through bench/model/longrun_report.py: longrun.md (final
# validation loss of each scheme, its gap to none's against the seeds' spread, tokens/s) and
# longrun.png (validation loss against step and against training time). Needs root and
# network namespaces. A run that stops early (train_gpt stops at a non-finite loss) is
# reported as such: the step it reached and its last validation loss.
#
#   bench/model/bench_longrun.sh
#   RATE=100mbit STEPS=400 SCHEMES="none zhybrid:16,8" OUT=out/longrun bench/model/bench_longrun.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
EXE=$(readlink -f "${TRAIN_GPT:-build/examples/gpt/train_gpt}")
RATE=${RATE:-200mbit}
STEPS=${STEPS:-800}
MODEL=${MODEL:-small}
EXTRA=${EXTRA:-"--layers 4 --heads 8"}
EVAL_EVERY=${EVAL_EVERY:-100}
EVAL_BATCHES=${EVAL_BATCHES:-16}
SCHEMES=${SCHEMES:-"none naive:8 mzhybrid:8 zhybrid:16,8 zhybrid:16,6+ef bf16 int8:256+ef"}
SEEDS=${SEEDS:-"1337 1 2"}
OUT=${OUT:-out/bench-longrun}
[ -x "$EXE" ] || { echo "bench_longrun: no $EXE (build the train_gpt target or set TRAIN_GPT)" >&2; exit 2; }
for v in STEPS EVAL_EVERY EVAL_BATCHES; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench_longrun: $v '${!v}' is not a positive integer" >&2; exit 2; }
done
read -r -a seeds <<< "$SEEDS"
[ ${#seeds[@]} -ge 2 ] || { echo "bench_longrun: SEEDS needs two seeds or more for a noise floor" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
{
  echo "date: $(date -u)"
  echo "host: $(uname -srm), $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "rate $RATE, model $MODEL $EXTRA, steps $STEPS, eval every $EVAL_EVERY on $EVAL_BATCHES batches"
  echo "schemes: $SCHEMES; none's seeds: $SEEDS"
} > "$OUT/conditions.txt"

# The runs in order: none with each seed interleaved with the compressed schemes.
runs=()
others=()
for s in $SCHEMES; do [ "$s" = none ] || others+=("$s"); done
n=$(( ${#seeds[@]} > ${#others[@]} ? ${#seeds[@]} : ${#others[@]} ))
for ((i = 0; i < n; ++i)); do
  [ $i -lt ${#seeds[@]} ] && runs+=("none@${seeds[$i]}")
  [ $i -lt ${#others[@]} ] && runs+=("${others[$i]}@${seeds[0]}")
done
for r in "${runs[@]}"; do
  s=${r%@*} seed=${r#*@}
  name=${s//[:,+]/_}
  [ "$s" = none ] && name="none_seed$seed"
  echo "== $s seed $seed $(date -u +%T) (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/conditions.txt"
  rm -f "$OUT/$name.jsonl"
  scripts/netns-mpirun.sh --nodes 4 --ranks-per-node 2 --rate "$RATE" -- "$EXE" --model "$MODEL" $EXTRA \
    --dp 2 --pp 2 --tp 2 --steps "$STEPS" --eval-every "$EVAL_EVERY" --eval-batches "$EVAL_BATCHES" --seed "$seed" \
    --scheme "$s" --compress-min-bytes 0 --data "$PWD/data/kjv.txt" --metrics "$OUT/$name.jsonl" --quiet --sample 0 \
    > "$OUT/$name.log" 2>&1 || echo "bench_longrun: $s seed $seed stopped early (see $OUT/$name.log)" | tee -a "$OUT/conditions.txt" >&2
done
/usr/bin/python3 bench/model/longrun_report.py "$OUT" --seed "${seeds[0]}"
