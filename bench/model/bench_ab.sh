#!/usr/bin/env bash
# bench_ab.sh: train_gpt's step time under two option sets, A and B, alternating (A, B)
# REPEATS times, the same model, data and steps otherwise. GRID is DPxPPxTP (default 2x2x2, 8
# ranks; at most 8 ranks). NET empty: the ranks over shared memory; NET=100mbit:
# scripts/netns-mpirun.sh, DPxPP nodes of TP ranks each (TP inside a node, DP and PP across the
# rate-limited links: 2x2x2 is 4 nodes of 2 ranks, 2x1x1 2 nodes of one rank). Prints one
# line per run (median ms/step without the first 2 steps; the medians of its two parts as
# train_gpt's metrics report them: the 1F1B pipeline, then the wait for the DP reduction that
# the pipeline did not hide, each the maximum over the ranks; the first step's raw bytes per
# axis, summed over the ranks; the median codec time per axis, the slowest rank's) with the
# time of day and the load average.
#
#   A="--wire fp32" B="--wire bf16" EXTRA="--precision bf16" NET=100mbit MODEL=small STEPS=8 \
#     bench/model/bench_ab.sh build/examples/gpt/train_gpt
#   A="--zero 0" B="--zero 1" ...
set -euo pipefail
EXE=$(readlink -f "${1:-build/examples/gpt/train_gpt}")
A=${A:?"bench_ab: set A and B to the two option sets"} B=${B:?"bench_ab: set A and B to the two option sets"}
NET=${NET:-} REPEATS=${REPEATS:-3} STEPS=${STEPS:-20} MODEL=${MODEL:-tiny}
EXTRA=${EXTRA-"--layers 4 --heads 8"} SCHEME=${SCHEME:-none} GRID=${GRID:-2x2x2}
[[ $GRID =~ ^([1-8])x([1-8])x([1-8])$ ]] && (( BASH_REMATCH[1] * BASH_REMATCH[2] * BASH_REMATCH[3] <= 8 )) ||
  { echo "bench_ab: GRID '$GRID' is not DPxPPxTP with at most 8 ranks" >&2; exit 2; }
DP=${BASH_REMATCH[1]} PP=${BASH_REMATCH[2]} TP=${BASH_REMATCH[3]}
RANKS=$((DP * PP * TP)) NODES=$((DP * PP))
OUT=${OUT:-out/bench-ab}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
run() {  # $1: the option set, $2: metrics file
  local args=(--model "$MODEL" $EXTRA --dp "$DP" --pp "$PP" --tp "$TP" --steps "$STEPS" --eval-every "$STEPS" --scheme "$SCHEME"
              $1 --data "$PWD/data/kjv.txt" --metrics "$2" --quiet --sample 0)
  rm -f "$2"
  if [ -n "$NET" ]; then
    scripts/netns-mpirun.sh --nodes "$NODES" --ranks-per-node "$TP" --rate "$NET" -- "$EXE" "${args[@]}" >&2
  else
    mpiexec --oversubscribe -n "$RANKS" -x OMP_NUM_THREADS "$EXE" "${args[@]}" >&2
  fi
}
echo "# $(hostname), $(nproc --all) cpus, net ${NET:-shm}, grid $GRID (dp x pp x tp), model $MODEL $EXTRA, scheme $SCHEME, $STEPS steps; A: $A; B: $B"
for r in $(seq 1 "$REPEATS"); do
  for which in A B; do
    f="$OUT/${which}_$r.jsonl"
    run "${!which}" "$f"
    /usr/bin/python3 - "$f" "$which" "$r" <<'PY'
import json, os, statistics, sys, time
rows = [json.loads(l) for l in open(sys.argv[1])]
steady = [x for x in rows if x["step"] > 2]
med = lambda k: statistics.median(x[k] for x in steady)
mb = lambda ax: rows[0]["comm"][ax]["raw"] / 1e6
codec = lambda ax: statistics.median(x["comm"][ax].get("codec_ms", float("nan")) for x in steady)
print(f"{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f} run {sys.argv[3]} {sys.argv[2]} "
      f"median {med('ms'):8.1f} ms/step  (min {min(x['ms'] for x in steady):.1f}; pipeline {med('pipeline_ms'):.1f}, "
      f"then DP wait {med('dp_wait_ms'):.1f}; MB dp {mb('dp'):.2f} pp {mb('pp'):.2f} tp {mb('tp'):.2f}; "
      f"codec ms dp {codec('dp'):.1f} pp {codec('pp'):.1f} tp {codec('tp'):.1f}; "
      f"final loss {rows[-1]['loss']:.6f})", flush=True)
PY
  done
done
