#!/usr/bin/env bash
# bench_overlap.sh: train_gpt's step time with --overlap off and on, alternating (off, on)
# REPEATS times on the 2x2x2 grid, uncompressed (--scheme none), the same buckets both ways.
# NET empty: 8 ranks over shared memory; NET=100mbit: scripts/netns-mpirun.sh, 4 nodes of 2
# ranks (TP inside a node, DP and PP across the rate-limited links). Prints one line per run
# (median ms/step without the first 2 steps) with the time of day and the load average.
#
#   NET=100mbit REPEATS=3 bench/model/bench_overlap.sh build/examples/gpt/train_gpt
#   EXTRA="--layers 4 --heads 8" BUCKET_MB=0.02 STEPS=20 ...
set -euo pipefail
EXE=$(readlink -f "${1:-build/examples/gpt/train_gpt}")
NET=${NET:-} REPEATS=${REPEATS:-3} STEPS=${STEPS:-20} MODEL=${MODEL:-tiny} BUCKET_MB=${BUCKET_MB:-0.02}
EXTRA=${EXTRA:-"--layers 4 --heads 8"} SCHEME=${SCHEME:-none}
OUT=${OUT:-out/bench-overlap}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
run() {  # $1: off|on, $2: metrics file
  local args=(--model "$MODEL" $EXTRA --dp 2 --pp 2 --tp 2 --steps "$STEPS" --eval-every "$STEPS" --scheme "$SCHEME"
              --bucket-mb "$BUCKET_MB" --overlap "$1" --data "$PWD/data/kjv.txt" --metrics "$2" --quiet --sample 0)
  rm -f "$2"
  if [ -n "$NET" ]; then
    scripts/netns-mpirun.sh --nodes 4 --ranks-per-node 2 --rate "$NET" -- "$EXE" "${args[@]}" >&2
  else
    mpiexec --oversubscribe -n 8 -x OMP_NUM_THREADS "$EXE" "${args[@]}" >&2
  fi
}
echo "# $(hostname), $(nproc) cpus, net ${NET:-shm}, model $MODEL $EXTRA, bucket-mb $BUCKET_MB, $STEPS steps"
for r in $(seq 1 "$REPEATS"); do
  for ov in off on; do
    f="$OUT/${ov}_$r.jsonl"
    run "$ov" "$f"
    /usr/bin/python3 - "$f" "$ov" "$r" <<'PY'
import json, os, statistics, sys, time
rows = [json.loads(l) for l in open(sys.argv[1])]
ms = [x["ms"] for x in rows if x["step"] > 2]
print(f"{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f} run {sys.argv[3]} overlap {sys.argv[2]:3s} "
      f"median {statistics.median(ms):8.1f} ms/step  (min {min(ms):.1f}, final loss {rows[-1]['loss']:.6f})", flush=True)
PY
  done
done
