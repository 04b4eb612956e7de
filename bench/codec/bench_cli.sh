#!/usr/bin/env bash
# hcomm-codec's whole-process cost against `cat IN > OUT` of the same file: hyperfine (wall
# and CPU time) and /usr/bin/time -v (minor page faults, peak RSS) for compress and
# decompress of a smooth float32 field (a sum of sines), per codec.
#
#   bench/codec/bench_cli.sh [--build build] [--mib 64] [--runs 10] [--codecs "mpc zfp:16"] [--threads N]
#                            [--tool PATH]      # another hcomm-codec binary (an A/B)
#
# Needs hyperfine (scripts/setup.sh installs it) and python3 with numpy. Files go to a
# temporary folder (TMPDIR), removed at the end. Not run by CI: the figures are timings.
set -euo pipefail
BUILD=build MIB=64 RUNS=10 CODECS="mpc zfp:16" THREADS="" TOOL=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --mib) MIB=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --codecs) CODECS=$2; shift 2 ;;
    --threads) THREADS="--threads $2"; shift 2 ;;
    --tool) TOOL=$2; shift 2 ;;
    *) echo "bench_cli.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
TOOL=$(realpath "${TOOL:-$BUILD/tools/hcomm-codec/hcomm-codec}")
command -v hyperfine > /dev/null || { echo "bench_cli.sh: needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
/usr/bin/python3 - "$MIB" <<'EOF'
import sys
import numpy as np
n = int(sys.argv[1]) * 2**20 // 4
i = np.arange(n, dtype=np.float64)
(np.sin(i * 0.01) * 3.0 + 0.5 * np.cos(i * 0.0037)).astype(np.float32).tofile("in.f32")
EOF
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $TOOL"
faults() {  # LABEL CMD...: minor faults, peak RSS, wall and CPU seconds of one run
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %S s sys, %R minor faults, %M KB peak RSS" "$@" 2>&1 >/dev/null |
    tail -1
}
for c in $CODECS; do
  # shellcheck disable=SC2086
  "$TOOL" compress --codec "$c" --dtype f32 $THREADS in.f32 frame.hcf
  cmds=("sh -c 'cat in.f32 > cat.out'"
        "$TOOL compress --codec $c --dtype f32 $THREADS in.f32 out.hcf"
        "$TOOL decompress $THREADS frame.hcf out.f32")
  hyperfine -N -w 2 -r "$RUNS" --style basic "${cmds[@]}" 2>&1 | grep -E "^Benchmark|Time|Range"
  faults "cat" sh -c 'cat in.f32 > cat.out'
  # shellcheck disable=SC2086
  faults "$c compress" "$TOOL" compress --codec "$c" --dtype f32 $THREADS in.f32 out.hcf
  # shellcheck disable=SC2086
  faults "$c decompress" "$TOOL" decompress $THREADS frame.hcf out.f32
  # shellcheck disable=SC2086
  "$TOOL" stats --codec "$c" --dtype f32 $THREADS --reps 3 in.f32 |
    /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print("%s kernel (stats, best of 3): compress %.3f GB/s = %.1f ms, decompress %.3f GB/s = %.1f ms" % (j["codec"], j["compress_gbps"], j["raw_bytes"] / j["compress_gbps"] / 1e6, j["decompress_gbps"], j["raw_bytes"] / j["decompress_gbps"] / 1e6))'
done
