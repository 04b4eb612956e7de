#!/usr/bin/env bash
# The paper's experiment against link bandwidth: bench/model/bench_schemes.sh on the emulated
# cluster (4 nodes x 2 ranks, 2x2x2, TP inside nodes, DP and PP across) at each inter-node
# RATE, every scheme at every rate, schemes alternating within a rate; and first in each round
# every scheme over shared memory without a link limit (the step model's calibration: compute
# and codecs). ROUNDS rounds of all that, one after the other, so that the spread between
# rounds shows. Writes, under $OUT, round<k>/<rate or shm>/<scheme>.jsonl, and through
# bench/model3d/step_model.py --sweep: sweep.md (median ms/step, its spread, the model's
# prediction and error, the tokens/s speed-up over none measured and modelled, the share of
# the uncompressed step in exposed communication) and sweep.png (speed-up against bandwidth,
# measured points and the model's lines). Needs root and network namespaces
# (scripts/netns-mpirun.sh).
#
#   bench/model/bench_sweep.sh
#   ROUNDS=1 RATES="20mbit 100mbit" SCHEMES="none zhybrid:16,8" STEPS=20 OUT=out/sweep bench/model/bench_sweep.sh
#   EXTRA="--layers 4 --heads 8 --uncompressed-axes tp" bench/model/bench_sweep.sh   # the main job's
#     layout: TP (inside the nodes) uncompressed, in the shared-memory calibration too
set -euo pipefail
cd "$(dirname "$0")/../.."
RATES=${RATES:-"10mbit 20mbit 50mbit 100mbit 1000mbit"}
export SCHEMES=${SCHEMES:-"none naive:8 mzhybrid:8 zhybrid:16,8 zhybrid:16,6+ef bf16 int8:256+ef"}
export STEPS=${STEPS:-20}
ROUNDS=${ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "bench_sweep: ROUNDS '$ROUNDS' is not a positive integer" >&2; exit 2; }
OUT=${OUT:-out/bench-sweep}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
{
  echo "date: $(date -u)"
  echo "host: $(uname -srm), $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "steps $STEPS, rounds $ROUNDS, schemes: $SCHEMES, rates: $RATES"
  echo "train_gpt options (EXTRA): ${EXTRA:-bench_schemes.sh's default}"
} > "$OUT/conditions.txt"
for k in $(seq 1 "$ROUNDS"); do
  R="$OUT/round$k"
  mkdir -p "$R"
  echo "== round $k, shm $(date -u +%T) (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/conditions.txt"
  OUT="$R/shm" bench/model/bench_schemes.sh > "$R/shm.md" 2> "$R/shm.log" ||
    { echo "bench_sweep: shared memory failed (see $R/shm.log)" >&2; exit 1; }
  for r in $RATES; do
    echo "== round $k, $r $(date -u +%T) (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/conditions.txt"
    NET=$r RANKS_PER_NODE=2 OUT="$R/$r" bench/model/bench_schemes.sh > "$R/$r.md" 2> "$R/$r.log" ||
      { echo "bench_sweep: $r failed (see $R/$r.log)" >&2; exit 1; }
  done
done
/usr/bin/python3 bench/model3d/step_model.py --sweep "$OUT" --schemes "$SCHEMES" --crossing dp,pp --nodes 4
