#!/usr/bin/env bash
# A/B of two builds in one run, rounds alternating base and head, so that a behaviour-
# preserving change can be shown to keep the host speed: codecs (bench_codecs, one thread),
# collectives (hcomm-collective, 2 ranks over shared memory) and the trainer (the main job's
# grid, 8 ranks, fewer steps). Each line is "<build> <round> <what> <value>"; GB/s for codecs,
# seconds for collectives, tokens/s for the trainer. Losses are compared too: the trainer's
# summary line must be identical between the builds, except its tokens/s.
#
#   bash bench/ab.sh BASE_BUILD_DIR HEAD_BUILD_DIR > bench/<area>/ab-<what>.txt
#
# Both build dirs need bench_codecs, hcomm-collective and train_gpt built (Release). ROUNDS
# (default 3), PARTS (default "codec comm model"), STEPS (default 20) override.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bench/ab.sh BASE_BUILD_DIR HEAD_BUILD_DIR" >&2; exit 2; }
BASE=$1 HEAD=$2
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-codec comm model}
STEPS=${STEPS:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
for b in "$BASE" "$HEAD"; do
  for t in bench/codec/bench_codecs tools/hcomm-collective/hcomm-collective examples/gpt/train_gpt; do
    [ -x "$b/$t" ] || { echo "bench/ab.sh: $b/$t is missing" >&2; exit 2; }
  done
done
[ -s data/kjv.txt ] || { echo "bench/ab.sh: data/kjv.txt missing (scripts/setup.sh)" >&2; exit 2; }
echo "# $(date -u +%FT%TZ) $(uname -n) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(getconf _NPROCESSORS_ONLN) cores"
echo "# base $BASE, head $HEAD, $ROUNDS rounds alternating"

codec_part() {  # $1 build, $2 round
  "$1/bench/codec/bench_codecs" --benchmark_format=csv \
      --benchmark_filter='(memcpy|hcomm:(mpc|zfp:8|zfp:16))/op=.*/data=(smooth|noise)?.*/mib=16/threads=1' 2>/dev/null |
    awk -F, -v b="$3" -v r="$2" 'NR > 1 && $1 ~ /codec=/ {
      gsub(/"/, "", $1); sub(/\/real_time/, "", $1); printf "%s %s %s %.3f\n", b, r, $1, $6 / 1e9 }'
}
comm_part() {
  mpiexec --oversubscribe -n 2 -x OMP_NUM_THREADS=1 "$1/tools/hcomm-collective/hcomm-collective" \
      --op allreduce --codec none,mpc,zfp:8 --bytes 4M,64M --iters 5 --threshold 0 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try: d = json.loads(line)
    except ValueError: continue
    print(sys.argv[1], sys.argv[2], "%s/%s/%s" % (d["op"], d["codec"], d["bytes"]), d["seconds"])
' "$3" "$2"
}
model_part() {
  local s
  s=$(mpiexec --oversubscribe -n 8 -x OMP_NUM_THREADS=1 "$1/examples/gpt/train_gpt" --model small \
        --dp 2 --pp 2 --tp 2 --scheme zhybrid:16,8 --compress-min-bytes 0 --data data/kjv.txt \
        --steps "$STEPS" --eval-every "$STEPS" 2>&1 | grep -a 'summary: final train loss' | tail -1)
  echo "$3 $2 train_gpt $(sed -E 's/.* ([0-9.]+) tokens\/s.*/\1/' <<<"$s")"
  echo "$3 $2 summary $(sed -E 's/[0-9]+ tokens\/s/TOK tokens\/s/' <<<"$s")"
}

for r in $(seq 1 "$ROUNDS"); do
  for part in $PARTS; do
    "${part}_part" "$BASE" "$r" base
    "${part}_part" "$HEAD" "$r" head
  done
done
