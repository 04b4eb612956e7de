#!/usr/bin/env bash
# GPU check in two halves, so that a short GPU lease is spent on running, not building.
#
#   scripts/gpu-check.sh --prepare [--kit DIR]   # here (no GPU needed): build the CUDA test
#                                                # binaries and pack them with the runtime
#                                                # pieces a bare GPU machine lacks into DIR
#                                                # (default build-gpu/kit, under 64 MiB)
#   scripts/gpu-check.sh [--kit DIR]             # on the GPU machine: run the kit, at most
#                                                # BUDGET_S seconds (default 290), results in
#                                                # $OUT (default DIR/out)
#
# The run goes in stages, in priority order, each under what is left of the budget:
#   1 smoke       nvidia-smi; the team collectives on the GPU; a 1 MiB round trip of every codec
#   2 correctness core_test_cuda: executor members, team kernels, streams and events, every
#                 registered codec giving the host's frame bytes
#   3 throughput  core_cuda_throughput at THROUGHPUT_MIB (256) for THROUGHPUT_DTYPES (f32 f64)
# then one table ($OUT/summary.md: stage, result, seconds, and the throughput figures) and one
# tarball of every log ($OUT/gpu-check-logs.tar.gz). The kit needs only the CUDA driver and
# the C++ runtime on the GPU machine: no MPI, Catch2 (built in) or libzfp.
#
# Exit status: 0 all stages passed; 1 a stage failed; 77 no usable GPU (nothing was run).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
SRC=$PWD
KIT=$SRC/build-gpu/kit
MODE=run
while [ $# -gt 0 ]; do
  case $1 in
    --prepare) MODE=prepare ;;
    --kit) KIT=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# --- prepare: build here, pack the kit ------------------------------------------------------------
if [ "$MODE" = prepare ]; then
  BUILD=${BUILD_DIR:-$SRC/build-gpu}
  NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  [ -x "$NVCC" ] || { echo "gpu-check: no nvcc (set CUDACXX)" >&2; exit 1; }
  echo "gpu-check: configure $BUILD (CUDA architectures ${CUDA_ARCHS:-80;90})"
  mkdir -p "$BUILD"
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DHCOMM_ENABLE_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS:-80;90}" -DHCOMM_BUILD_TESTS=ON \
        -DHCOMM_BUILD_BENCH=OFF -DHCOMM_BUILD_EXAMPLES=OFF -DHCOMM_BUILD_TOOLS=OFF \
        -DHCOMM_TEST_AREAS=core >"$BUILD/kit-configure.log" 2>&1 || { tail -30 "$BUILD/kit-configure.log"; exit 1; }
  echo "gpu-check: build core_test_cuda core_cuda_throughput"
  cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target core_test_cuda core_cuda_throughput \
        >"$BUILD/kit-build.log" 2>&1 || { grep -E "error|FAILED" "$BUILD/kit-build.log" | head -30; exit 1; }
  rm -rf "$KIT"
  mkdir -p "$KIT/bin" "$KIT/lib"
  cp "$BUILD/tests/core/core_test_cuda" "$BUILD/tests/core/core_cuda_throughput" "$KIT/bin/"
  # The CUDA runtime the binaries were linked against, used there only if the machine's
  # toolkit lacks that version.
  for lib in $(ldd "$KIT/bin/core_test_cuda" | awk '/libcudart/ {print $3}'); do cp -L "$lib" "$KIT/lib/"; done
  git -C "$SRC" rev-parse HEAD >"$KIT/commit" 2>/dev/null || echo unknown >"$KIT/commit"
  du -sh "$KIT"
  bytes=$(du -sb "$KIT" | cut -f1)
  if [ "$bytes" -gt $((64 * 1024 * 1024)) ]; then
    echo "gpu-check: the kit is $bytes bytes, over 64 MiB" >&2
    exit 1
  fi
  echo "gpu-check: kit ready in $KIT (commit $(cat "$KIT/commit")); run: scripts/gpu-check.sh --kit $KIT"
  exit 0
fi

# --- run: on the GPU machine --------------------------------------------------------------------
BUDGET_S=${BUDGET_S:-290}
OUT_DIR=${OUT:-$KIT/out}
START=$(date +%s)
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/gpu-check.log
: >"$LOG"
TABLE=$OUT_DIR/stages.tsv
: >"$TABLE"
say() { echo "[gpu-check $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
status=0
# stage NAME CAP_SECONDS CMD...: runs CMD under min(CAP, time left), logs to $OUT/NAME.log,
# records the result in the table.
stage() {
  local name=$1 cap=$2
  shift 2
  local t
  t=$(left)
  [ "$t" -gt "$cap" ] && t=$cap
  if [ "$t" -lt 10 ]; then
    say "stage $name: no time left (budget ${BUDGET_S}s): not run"
    printf '%s\tnot run (no time left)\t0\n' "$name" >>"$TABLE"
    status=1
    return 1
  fi
  say "stage $name (at most ${t}s): $*"
  local s0 rc
  s0=$(date +%s)
  timeout "$t" "$@" >"$OUT_DIR/$name.log" 2>&1
  rc=$?
  local dt=$(($(date +%s) - s0)) result=pass
  if [ $rc -eq 124 ]; then result="timed out after ${t}s"; status=1
  elif [ $rc -ne 0 ]; then result="failed (exit $rc)"; status=1; fi
  tail -5 "$OUT_DIR/$name.log" | tee -a "$LOG"
  printf '%s\t%s\t%s\n' "$name" "$result" "$dt" >>"$TABLE"
  say "stage $name: $result in ${dt}s"
  [ $rc -eq 0 ]
}

[ -x "$KIT/bin/core_test_cuda" ] || { say "FAIL: no kit in $KIT (run scripts/gpu-check.sh --prepare first)"; exit 1; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >"$OUT_DIR/nvidia-smi.txt" 2>&1; then
  say "SKIPPED: no usable NVIDIA driver (nvidia-smi missing or failing): nothing to check"
  exit 77
fi
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1)
say "GPU: $GPU; kit commit $(cat "$KIT/commit" 2>/dev/null); budget ${BUDGET_S}s"
# The machine's own CUDA runtime when it has the kit's version, else the kit's copy.
KIT_CUDART=$(ls "$KIT/lib" 2>/dev/null | grep -m1 libcudart || true)
if [ -n "$KIT_CUDART" ] && ! ldconfig -p 2>/dev/null | grep -q "$KIT_CUDART" &&
   ! ls /usr/local/cuda/lib*/"$KIT_CUDART" >/dev/null 2>&1; then
  export LD_LIBRARY_PATH=$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "using the kit's $KIT_CUDART"
else
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
BIN=$KIT/bin

# 1 smoke: if the collectives or a small round trip fail, the rest is not worth the lease.
if ! stage smoke-collectives 60 "$BIN/core_test_cuda" "cuda team collectives give their defined results" ||
   ! stage smoke-roundtrip 60 "$BIN/core_cuda_throughput" --mib 1; then
  say "smoke failed: later stages skipped"
else
  # 2 correctness, 3 throughput.
  stage correctness 150 "$BIN/core_test_cuda" --durations yes
  for dt in ${THROUGHPUT_DTYPES:-f32 f64}; do
    stage "throughput-$dt" 90 "$BIN/core_cuda_throughput" --mib "${THROUGHPUT_MIB:-256}" --dtype "$dt"
  done
fi

# One table: the stages, then the throughput lines.
{
  echo "# GPU check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "GPU: $GPU; host $(uname -n), $(nproc) cores; kit commit $(cat "$KIT/commit" 2>/dev/null)"
  echo
  echo "| stage | result | seconds |"
  echo "|---|---|---:|"
  awk -F'\t' '{printf "| %s | %s | %s |\n", $1, $2, $3}' "$TABLE"
  tp=$(cat "$OUT_DIR"/throughput-*.log 2>/dev/null | grep '^{' || true)
  if [ -n "$tp" ]; then
    echo
    echo "| codec | dtype | data | MiB | compress GB/s | decompress GB/s | ratio | round trip |"
    echo "|---|---|---|---:|---:|---:|---:|---|"
    echo "$tp" | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    g = lambda k: d.get(k, "")
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (g("codec"), g("dtype"), g("data"), g("mib"), g("compress_GBps"),
                                                    g("decompress_GBps"), g("ratio"), g("round_trip")))
' 2>/dev/null || echo "$tp"
  fi
  echo
  echo "status: $([ $status -eq 0 ] && echo pass || echo fail), $(($(date +%s) - START)) s"
} >"$OUT_DIR/summary.md"
tee -a "$LOG" <"$OUT_DIR/summary.md"
tar -czf "$OUT_DIR/gpu-check-logs.tar.gz" -C "$OUT_DIR" --exclude gpu-check-logs.tar.gz . 2>/dev/null
exit $status
