#!/usr/bin/env bash
# bench_overlap.sh: train_gpt's step time with --overlap off and on, alternating (off, on)
# REPEATS times on 8 ranks, uncompressed (--scheme none), the same buckets both ways. GRID is
# DPxPPxTP (default 2x2x2; 4x1x2 puts the 4-way DP across the nodes with no pipeline, where the
# whole backward is the window the DP reduction can hide behind: with PP the gradients are
# final only in the last micro-batch's backward).
# NET empty: 8 ranks over shared memory; NET=100mbit: scripts/netns-mpirun.sh, 4 nodes of 2
# ranks (TP inside a node, DP and PP across the rate-limited links). Prints one line per run
# (median ms/step without the first 2 steps, and the medians of its two parts as train_gpt's
# metrics report them: the 1F1B pipeline, then the wait for the DP reduction that the pipeline
# did not hide, each the maximum over the ranks) with the time of day and the load average.
#
#   NET=100mbit REPEATS=3 bench/model/bench_overlap.sh build/examples/gpt/train_gpt
#   EXTRA="--layers 4 --heads 8" BUCKET_MB=0.02 STEPS=20 ...
#   NET=100mbit GRID=4x1x2 MODEL=small EXTRA="--batch 64" BUCKET_MB=0.25 STEPS=8 ...
set -euo pipefail
EXE=$(readlink -f "${1:-build/examples/gpt/train_gpt}")
NET=${NET:-} REPEATS=${REPEATS:-3} STEPS=${STEPS:-20} MODEL=${MODEL:-tiny} BUCKET_MB=${BUCKET_MB:-0.02}
EXTRA=${EXTRA:-"--layers 4 --heads 8"} SCHEME=${SCHEME:-none} GRID=${GRID:-2x2x2}
[[ $GRID =~ ^([1-8])x([1-8])x([1-8])$ ]] && (( BASH_REMATCH[1] * BASH_REMATCH[2] * BASH_REMATCH[3] == 8 )) ||
  { echo "bench_overlap: GRID '$GRID' is not DPxPPxTP with 8 ranks" >&2; exit 2; }
DP=${BASH_REMATCH[1]} PP=${BASH_REMATCH[2]} TP=${BASH_REMATCH[3]}
OUT=${OUT:-out/bench-overlap}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
run() {  # $1: off|on, $2: metrics file
  local args=(--model "$MODEL" $EXTRA --dp "$DP" --pp "$PP" --tp "$TP" --steps "$STEPS" --eval-every "$STEPS" --scheme "$SCHEME"
              --bucket-mb "$BUCKET_MB" --overlap "$1" --data "$PWD/data/kjv.txt" --metrics "$2" --quiet --sample 0)
  rm -f "$2"
  if [ -n "$NET" ]; then
    scripts/netns-mpirun.sh --nodes 4 --ranks-per-node 2 --rate "$NET" -- "$EXE" "${args[@]}" >&2
  else
    mpiexec --oversubscribe -n 8 -x OMP_NUM_THREADS "$EXE" "${args[@]}" >&2
  fi
}
echo "# $(hostname), $(nproc --all) cpus, net ${NET:-shm}, grid $GRID (dp x pp x tp), model $MODEL $EXTRA, bucket-mb $BUCKET_MB, $STEPS steps"
for r in $(seq 1 "$REPEATS"); do
  for ov in off on; do
    f="$OUT/${ov}_$r.jsonl"
    run "$ov" "$f"
    /usr/bin/python3 - "$f" "$ov" "$r" <<'PY'
import json, os, statistics, sys, time
rows = [json.loads(l) for l in open(sys.argv[1])]
steady = [x for x in rows if x["step"] > 2]
med = lambda k: statistics.median(x[k] for x in steady)
print(f"{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f} run {sys.argv[3]} overlap {sys.argv[2]:3s} "
      f"median {med('ms'):8.1f} ms/step  (min {min(x['ms'] for x in steady):.1f}; pipeline {med('pipeline_ms'):.1f}, "
      f"then DP wait {med('dp_wait_ms'):.1f}; final loss {rows[-1]['loss']:.6f})", flush=True)
PY
  done
done
