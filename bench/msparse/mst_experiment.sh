#!/bin/sh
# bench/msparse/mst_experiment.sh: Mixed Sparsity Training against its baselines in train_gpt,
# same model, data, steps and tokens: dense, static sparse, SET, RigL, MST. Writes one
# metrics file per method, a summary table (final validation loss, training FLOPs actual
# and dense-equivalent, wall time) and plots (every curve; validation against FLOPs).
#
#   bench/msparse/mst_experiment.sh                      # small model, 150 steps, 1 rank, 1 thread
#   STEPS=300 MODEL=small OUT=/tmp/mst bench/msparse/mst_experiment.sh
#   TRAIN_GPT=build/examples/gpt/train_gpt EXTRA="--dt 10" bench/msparse/mst_experiment.sh
#   MODEL=bert-small STEPS=300 CONCURRENT=1 bench/msparse/mst_experiment.sh   # BERT, MLM
#   MODEL=bert-small STEPS=3000 SHORT_BLOCK=32 SHORT_STEPS=2000 bench/msparse/mst_experiment.sh
#
# SHORT_BLOCK/SHORT_STEPS: a sequence-length curriculum (as BERT's pretraining): the first
# SHORT_STEPS steps at --block SHORT_BLOCK, saved, then resumed at the model's length with
# --resume-block (one schedule over STEPS; validation in the first part is at the short length).
#
# Static/SET/RigL run at a constant SPARSITY (default 0.9, ERK), MST at its default schedule
# (dense -> 0.8 in 4 warm-up stages over the first 15%, 0.9 for the next 60%, back
# to 0.85 in 3 stages; topology updates every steps/20; Hybrid Sparse Attention during
# the first half). Wall time is the process's elapsed time (sum of step times in the table as well):
# on a shared machine it is noisy, so say so next to any number taken from here; <method>.cpu
# holds the process's CPU seconds (user+sys), and bench/msparse/mst_phases.py OUT prints step
# times per phase and both totals against dense.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TRAIN_GPT=${TRAIN_GPT:-$ROOT/build/examples/gpt/train_gpt}
MODEL=${MODEL:-small}
STEPS=${STEPS:-150}
SPARSITY=${SPARSITY:-0.9}
EVAL_EVERY=${EVAL_EVERY:-25}
EVAL_BATCHES=${EVAL_BATCHES:-8}
DATA=${DATA:-$ROOT/data/kjv.txt}
OUT=${OUT:-$ROOT/bench/msparse/mst_runs}
METHODS=${METHODS:-"dense static set rigl mst"}
EXTRA=${EXTRA:-}
SHORT_BLOCK=${SHORT_BLOCK:-}
SHORT_STEPS=${SHORT_STEPS:-0}
MST_EXTRA=${MST_EXTRA:-}     # options for the mst run only (e.g. "--hsa-frac 0.5")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUT"
[ -x "$TRAIN_GPT" ] || { echo "no train_gpt at $TRAIN_GPT (set TRAIN_GPT=...)" >&2; exit 1; }
{
  echo "date: $(date -u)"
  echo "host: $(uname -srm), $(nproc --all) cores, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "config: model $MODEL, steps $STEPS, sparsity $SPARSITY, eval every $EVAL_EVERY x $EVAL_BATCHES batches, threads $OMP_NUM_THREADS, extra '$EXTRA', mst extra '$MST_EXTRA'"
  [ -n "$SHORT_BLOCK" ] && echo "curriculum: steps 0-$((SHORT_STEPS - 1)) at --block $SHORT_BLOCK, then the model's length"
} > "$OUT/conditions.txt"
run_method() {
  m=$1
  more=$EXTRA
  [ "$m" = mst ] && more="$EXTRA $MST_EXTRA"
  t0=$(date +%s.%N)
  # process CPU time (user + sys) next to the wall time: it leaves out time spent waiting for
  # a core, so it is less sensitive to other load (mst_phases.py prints both)
  timer=""
  [ -x /usr/bin/time ] && timer="/usr/bin/time -a -f %U+%S -o $OUT/$m.cpu"
  rm -f "$OUT/$m.cpu" "$OUT/$m.jsonl"
  if [ -n "$SHORT_BLOCK" ]; then
    rm -rf "$OUT/ck_$m"
    # shellcheck disable=SC2086
    $timer "$TRAIN_GPT" --model "$MODEL" --steps "$STEPS" --eval-every "$EVAL_EVERY" --eval-batches "$EVAL_BATCHES" \
        --data "$DATA" --sample 0 --sparsity "$m" --sparsity-target "$SPARSITY" --metrics "$OUT/$m.jsonl" $more \
        --block "$SHORT_BLOCK" --stop-at "$SHORT_STEPS" --save "$OUT/ck_$m" > "$OUT/$m.short.log"
    more="$more --resume $OUT/ck_$m --resume-block $SHORT_BLOCK"
  fi
  # shellcheck disable=SC2086
  $timer "$TRAIN_GPT" --model "$MODEL" --steps "$STEPS" --eval-every "$EVAL_EVERY" --eval-batches "$EVAL_BATCHES" \
      --data "$DATA" --sample 0 --sparsity "$m" --sparsity-target "$SPARSITY" --metrics "$OUT/$m.jsonl" $more \
      > "$OUT/$m.log"
  [ -z "$SHORT_BLOCK" ] || rm -rf "$OUT/ck_$m"  # the short part's checkpoint (tens of MB)
  t1=$(date +%s.%N)
  echo "$m $(echo "$t1 - $t0" | bc)" > "$OUT/$m.wall"
  grep '^summary' "$OUT/$m.log"
  echo "load after $m: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/conditions.txt"
}
# CONCURRENT=1 runs every method at once (one process each): losses and FLOPs are the same,
# wall times are not comparable then (CPU times are, roughly); for wall time run them in turn.
if [ "${CONCURRENT:-0}" = 1 ]; then
  echo "concurrent: all methods at once (compare CPU times, not wall times)" >> "$OUT/conditions.txt"
  pids=""
  for m in $METHODS; do echo "== $m (started)"; run_method "$m" & pids="$pids $!"; done
  fail=0
  for p in $pids; do wait "$p" || fail=1; done
  [ "$fail" = 0 ] || { echo "a method failed: see $OUT/*.log" >&2; exit 1; }
else
  for m in $METHODS; do echo "== $m"; run_method "$m"; done
fi
for m in $METHODS; do cat "$OUT/$m.wall"; done > "$OUT/wall.txt"
/usr/bin/python3 "$ROOT/bench/msparse/mst_summary.py" "$OUT" | tee "$OUT/summary.md"
files=""
for m in $METHODS; do files="$files $OUT/$m.jsonl"; done
# shellcheck disable=SC2086
/usr/bin/python3 "$ROOT/scripts/plot_metrics.py" $files -o "$OUT/mst_experiment.png" || echo "(no plot: matplotlib missing?)"
/usr/bin/python3 "$ROOT/bench/msparse/mst_val_plot.py" "$OUT" || echo "(no validation plot: matplotlib missing?)"
