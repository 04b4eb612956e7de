#!/usr/bin/env bash
# The main job: train a GPT on the default corpus (data/kjv.txt) on an emulated cluster of
# 4 nodes x 2 ranks (scripts/netns-mpirun.sh: each node a network namespace, its 2 ranks on
# shared memory, nodes joined by rate-limited links), grid 2x2x2 (DP x PP x TP) with TP inside
# the nodes and DP and PP across them; first with the ZHybrid scheme on the axes that cross
# nodes (ZFP, 16 bits/value on pipeline traffic, 8 on data-parallel gradients; TP inside the
# nodes uncompressed), then the same steps uncompressed, then ZHybrid on every axis (TP at 16
# bits/value too), and compare them.
#
#   1. Calibration: the link rate at which the uncompressed step spends about half its time
#      in exposed communication. A few uncompressed steps over shared memory measure the
#      compute of a step and the bytes per step of the axes that cross nodes
#      (scripts/grid-axes.sh); the rate is the one at which a node's link carries its share
#      of those bytes in the time of the compute step (scripts/main_job.py rate). Printed.
#   2. SCHEME, then none, for STEPS steps each, validation every EVAL_EVERY steps. SCHEME
#      compresses the axes that cross nodes (DP and PP); TP, whose 2 ranks share a node's
#      memory, goes uncompressed (train_gpt --compress-inside-node off): over shared memory
#      (as over NVLink) the bytes move faster than a CPU codec encodes them, so compressing
#      them only adds the codec's time. A third run, SCHEME on every axis (TP too), shows
#      what that costs; a fourth, ALSO (MZHybrid: lossless MPC on TP and PP) on every axis,
#      a scheme whose TP codec is cheap enough on a CPU.
#   3. The summary (scripts/main_job.py summary): tokens/s of both, the speed-up, both final
#      validation losses and their gap, which axes went uncompressed, bytes per axis, the
#      uncompressed step as a multiple of the compute step, the every-axis runs' tokens/s and
#      losses; the plot (scripts/plot_metrics.py: loss vs step and vs training time for the
#      first two) in OUT_DIR/main.png.
#
# Without root or network namespaces (or with HCOMM_NO_NETNS=1) it says why and runs SCHEME
# (every axis compressed: all ranks share one node there) and none on 8 ranks over shared
# memory, without calibration.
#
# No size threshold (--compress-min-bytes 0): the small models' messages are all below hcomm's
# 1 MiB default threshold, which exists for large clusters; what goes uncompressed is decided
# by --compress-inside-node alone. Threads per rank: hcomm's
# automatic count, which divides the machine's CPUs among all 8 ranks, also those of the other
# emulated nodes (one thread each on 2 cores); OMP_NUM_THREADS, when set, is used instead.
#
# Environment: SCHEME (zhybrid:16,8), STEPS (60), MODEL (small), ARCH (gpt2), RATE (auto: the
# calibration; else a tc rate such as 40mbit), CAL_STEPS (8), EVAL_EVERY (20), EVAL_BATCHES
# (8), INSIDE_NODE (off: SCHEME leaves the axes inside nodes uncompressed, and the every-axis
# run follows; on: SCHEME on every axis, no third run), ALSO (mzhybrid:8: the fourth run's
# scheme, every axis compressed, with INSIDE_NODE=off on the emulated cluster; empty: none),
# OUT_DIR (out), TRAIN_GPT (a built
# train_gpt; default: build build/'s),
# HCOMM_NO_NETNS (1: shared memory), NETNS_PREFIX (netns-mpirun.sh's). E.g.
#   SCHEME=mzhybrid:8 STEPS=100 bash scripts/run-main.sh
set -euo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
SCHEME=${SCHEME:-zhybrid:16,8}
STEPS=${STEPS:-60}
MODEL=${MODEL:-small}
ARCH=${ARCH:-gpt2}
RATE=${RATE:-auto}
CAL_STEPS=${CAL_STEPS:-8}
EVAL_EVERY=${EVAL_EVERY:-20}
EVAL_BATCHES=${EVAL_BATCHES:-8}
OUT=${OUT_DIR:-out}
TRAIN_GPT=${TRAIN_GPT:-}
NO_NETNS=${HCOMM_NO_NETNS:-0}
INSIDE_NODE=${INSIDE_NODE:-off}
ALSO=${ALSO-mzhybrid:8}
NODES=4 RPN=2 GRID=2x2x2  # TPxDPxPP, as grid-axes.sh and netns-mpirun.sh take it
GRID_ARGS=(--dp 2 --pp 2 --tp 2)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
PY=/usr/bin/python3

say() { echo "run-main: $*"; }
die() { echo "run-main: $*" >&2; exit 2; }
posint() { [[ $2 =~ ^[1-9][0-9]{0,8}$ ]] || die "$1='$2' is not a positive integer"; }
posint STEPS "$STEPS"
posint CAL_STEPS "$CAL_STEPS"
posint EVAL_BATCHES "$EVAL_BATCHES"
[[ $EVAL_EVERY =~ ^[0-9]{1,9}$ ]] || die "EVAL_EVERY='$EVAL_EVERY' is not a number of steps (0: at the end only)"
[ "$RATE" = auto ] || [[ $RATE =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT]i?)?(bit|bps)$ ]] ||
  die "RATE='$RATE' is neither auto nor a tc rate such as 40mbit, 1gbit or 125mbps"
[[ $NO_NETNS =~ ^[01]$ ]] || die "HCOMM_NO_NETNS='$NO_NETNS' is not 0 or 1"
[[ $INSIDE_NODE =~ ^(on|off)$ ]] || die "INSIDE_NODE='$INSIDE_NODE' is not on or off"
[ -x "$PY" ] || die "$PY not found: run scripts/setup.sh first"
[ -s data/kjv.txt ] || die "data/kjv.txt missing: run scripts/setup.sh first"

if [ -z "$TRAIN_GPT" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$(nproc)" --target train_gpt >/dev/null
  TRAIN_GPT=build/examples/gpt/train_gpt
fi
[ -x "$TRAIN_GPT" ] || die "TRAIN_GPT='$TRAIN_GPT' is not an executable"
# SCHEME, ALSO, MODEL and ARCH are checked by train_gpt itself, before anything else runs: one
# step of a one-layer cut of the model on one rank (under a second).
for s in "$SCHEME" ${ALSO:+"$ALSO"}; do
  if ! err=$("$TRAIN_GPT" --arch "$ARCH" --model "$MODEL" --scheme "$s" --compress-min-bytes 0 \
               --data data/kjv.txt --steps 1 --layers 1 --block 8 --batch 1 --eval-batches 1 --sample 0 --quiet 2>&1); then
    [ "$s" = "$SCHEME" ] && what=SCHEME || what=ALSO
    die "train_gpt refuses $what='$s' MODEL='$MODEL' ARCH='$ARCH': $(grep -m1 '^train_gpt: ' <<< "$err" || tail -n1 <<< "$err")"
  fi
done

# Why the emulated cluster cannot run here (nothing when it can): the probe creates a
# throwaway network namespace with a rate-limited loopback, as netns-mpirun.sh's nodes.
netns_unavailable() {
  local c err
  [ "$NO_NETNS" = 0 ] || { echo "HCOMM_NO_NETNS=1 is set"; return; }
  [ "$(id -u)" = 0 ] || { echo "not root, which network namespaces need"; return; }
  for c in ip tc unshare flock mpirun; do
    command -v "$c" >/dev/null || { echo "$c not found, scripts/setup.sh installs it"; return; }
  done
  err=$(unshare --net sh -c 'ip link set lo up && tc qdisc add dev lo root tbf rate 1mbit burst 32kb latency 50ms' 2>&1) ||
    echo "cannot create a rate-limited network namespace: ${err:-unshare --net failed}"
}
WHY=$(netns_unavailable)
AXES_LINE=$(scripts/grid-axes.sh --grid "$GRID" --ranks-per-node "$RPN")

mkdir -p "$OUT"
COMMON=(--arch "$ARCH" --model "$MODEL" "${GRID_ARGS[@]}" --compress-min-bytes 0 --data data/kjv.txt)
on_shm() { mpiexec --oversubscribe -n $((NODES * RPN)) ${OMP_NUM_THREADS:+-x OMP_NUM_THREADS} "$TRAIN_GPT" "$@"; }
on_cluster() {
  scripts/netns-mpirun.sh --nodes "$NODES" --ranks-per-node "$RPN" --rate "$RATE" --grid "$GRID" -- "$TRAIN_GPT" "$@"
}

COMPUTE_MS=""
if [ -z "$WHY" ]; then
  say "emulated cluster: $NODES nodes x $RPN ranks, grid $GRID (TPxDPxPP): $AXES_LINE"
  if [ "$RATE" = auto ]; then
    say "calibration: $CAL_STEPS uncompressed steps over shared memory"
    on_shm "${COMMON[@]}" --scheme none --steps "$CAL_STEPS" --eval-batches 1 --quiet --sample 0 \
      --metrics "$OUT/calibration.jsonl" > "$OUT/calibration.log" 2>&1 ||
      { cat "$OUT/calibration.log" >&2; die "the calibration run failed (log above, $OUT/calibration.log)"; }
    CAL=$("$PY" scripts/main_job.py rate --metrics "$OUT/calibration.jsonl" --grid "$GRID" --nodes "$NODES" \
          --ranks-per-node "$RPN") || exit $?
    grep '^calibration: ' <<< "$CAL" | sed 's/^/run-main: /'
    COMPUTE_MS=$(sed -n 's/^compute_ms=//p' <<< "$CAL")
    RATE=$(sed -n 's/^rate=//p' <<< "$CAL")
    [ -n "$RATE" ] && [ -n "$COMPUTE_MS" ] || die "the calibration printed no rate"
  fi
  say "links of $RATE each way"
  run() { on_cluster "$@"; }
else
  say "no emulated cluster ($WHY): running on $((NODES * RPN)) ranks over shared memory, without rate-limited links"
  run() { on_shm "$@"; }
  INSIDE_NODE=on  # one node: off would leave every axis uncompressed
fi

train() {  # NAME SCHEME SAMPLE INSIDE: STEPS steps of SCHEME, metrics in OUT/NAME.jsonl, log in OUT/NAME.log
  say "training $2: $STEPS steps, model $MODEL ($ARCH), --compress-inside-node $4"
  set +e
  run "${COMMON[@]}" --scheme "$2" --steps "$STEPS" --eval-every "$EVAL_EVERY" --eval-batches "$EVAL_BATCHES" \
      --sample "$3" --compress-inside-node "$4" --metrics "$OUT/$1.jsonl" 2>&1 | tee "$OUT/$1.log"
  local rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || { say "training $2 failed (exit $rc; log in $OUT/$1.log)" >&2; exit "$rc"; }
}
rm -f "$OUT/everywhere.jsonl" "$OUT/everywhere.log" "$OUT/also.jsonl" "$OUT/also.log"
train main "$SCHEME" 200 "$INSIDE_NODE"
train none none 0 on
[ "$INSIDE_NODE" = on ] || train everywhere "$SCHEME" 0 on
[ "$INSIDE_NODE" = on ] || [ -z "$ALSO" ] || train also "$ALSO" 0 on

SUMMARY_ARGS=(--scheme "$SCHEME" --metrics "$OUT/main.jsonl" --none "$OUT/none.jsonl")
if [ "$INSIDE_NODE" = off ]; then
  SUMMARY_ARGS+=(--everywhere "$OUT/everywhere.jsonl")
  [ -z "$ALSO" ] || SUMMARY_ARGS+=(--also "$ALSO=$OUT/also.jsonl")
  NOTE=$(grep -m1 '^hcomm: --compress-inside-node off' "$OUT/main.log" || true)
  [ -z "$NOTE" ] || SUMMARY_ARGS+=(--raw-note "$NOTE")
fi
if [ -z "$WHY" ]; then
  SUMMARY_ARGS+=(--rate "$RATE" --axes "grid $GRID, $NODES nodes x $RPN ranks: $AXES_LINE")
  [ -z "$COMPUTE_MS" ] || SUMMARY_ARGS+=(--compute-ms "$COMPUTE_MS")
else
  SUMMARY_ARGS+=(--axes "shared memory, no rate-limited links ($WHY)")
fi
"$PY" scripts/main_job.py summary "${SUMMARY_ARGS[@]}" | tee "$OUT/summary.txt"
if "$PY" -c 'import matplotlib' 2>/dev/null; then
  "$PY" scripts/plot_metrics.py "$OUT/main.jsonl" "$OUT/none.jsonl" --labels "${SCHEME//,//},none" \
    -o "$OUT/main.png" >/dev/null
  echo "summary: plot (loss vs step and vs training time, both runs) in $OUT/main.png" | tee -a "$OUT/summary.txt"
else
  echo "summary: no plot (python3-matplotlib is not installed)" | tee -a "$OUT/summary.txt"
fi
say "done in $(($(date +%s) - START)) s"
