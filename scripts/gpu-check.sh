#!/usr/bin/env bash
# GPU check: builds hcomm with CUDA for the GPU in this machine, runs the CUDA test cases
# (ctest label "cuda"), the GPU codec throughput tool (core_cuda_throughput, 256 MiB) and the
# host codec benchmark (bench/codec, when that target exists), and
# writes logs and results to $OUT (default: build-gpu/out). Meant to finish in under
# 5 minutes on a GPU machine with a few cores: only CUDA-labelled tests and the benchmark are
# built, for one architecture, and the benchmark runs under the time that is left.
#
#   scripts/gpu-check.sh                 # build-gpu/, results in build-gpu/out/
#   OUT=/tmp/r scripts/gpu-check.sh      # results in /tmp/r
#   BUDGET_S=300 THROUGHPUT_DTYPES="f32 f64" BENCH_ARGS='--hcomm_sizes=64' scripts/gpu-check.sh
#
# Exit status: 0 all passed; 1 a step failed; 77 no usable GPU (nothing was run).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
SRC=$PWD
BUILD=${BUILD_DIR:-$SRC/build-gpu}
OUT_DIR=${OUT:-$BUILD/out}
BUDGET_S=${BUDGET_S:-290}
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/gpu-check.log
: >"$LOG"
say() { echo "[gpu-check $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
status=0

# --- the GPU -----------------------------------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1; then
  say "SKIPPED: no nvidia-smi on PATH (no NVIDIA driver): nothing to check"
  exit 77
fi
if ! nvidia-smi >"$OUT_DIR/nvidia-smi.txt" 2>&1; then
  say "SKIPPED: nvidia-smi failed: $(head -1 "$OUT_DIR/nvidia-smi.txt")"
  exit 77
fi
# compute_cap "9.0" -> "90" (first GPU; the tests use device 0).
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
if ! [[ "$CAP" =~ ^[0-9]+$ ]]; then
  say "nvidia-smi gave no compute capability ('$CAP'); falling back to CMAKE_CUDA_ARCHITECTURES=native"
  CAP=native
fi
say "GPU: $GPU; building for CUDA architecture $CAP; $JOBS build jobs; budget ${BUDGET_S}s"

NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  say "FAIL: no nvcc (set CUDACXX or put nvcc on PATH)"
  exit 1
fi
"$NVCC" --version | tail -2 | tee -a "$LOG"

# --- configure: CUDA on, only what the check needs -----------------------------------------------
say "configure $BUILD"
if ! cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$NVCC" \
     -DHCOMM_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CAP" -DHCOMM_BUILD_TESTS=ON -DHCOMM_BUILD_BENCH=ON \
     -DHCOMM_BUILD_EXAMPLES=OFF >>"$LOG" 2>&1; then
  say "FAIL: configure (see $LOG)"
  tail -30 "$LOG"
  exit 1
fi

# --- build: the executables of the tests labelled "cuda", and the codec benchmark ---------------
# Which executables the "cuda" tests run is written in the generated CTestTestfile.cmake files
# (add_test + set_tests_properties LABELS) before anything is built; ctest itself only reports
# commands of executables that already exist. Tests registered by catch_discover_tests do not
# appear there, so executable targets with "cuda" in their name are added too. Ninja builds a
# file path given relative to the build folder.
CUDA_EXES=$(python3 - "$BUILD" 2>>"$LOG" <<'PY'
import os, re, sys
build = sys.argv[1]
found = []
for root, _, files in os.walk(build):
    if "CTestTestfile.cmake" not in files:
        continue
    text = open(os.path.join(root, "CTestTestfile.cmake")).read()
    cmds = dict(re.findall(r'add_test\(\[=\[(.+?)\]=\] "([^"]+)"', text))
    for name, props in re.findall(r'set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES (.*)\)', text):
        m = re.search(r'LABELS "([^"]*)"', props)
        if m and "cuda" in m.group(1).split(";") and name in cmds and cmds[name] not in found:
            found.append(cmds[name])
print("\n".join(found))
PY
)
NAMED_CUDA=$(ninja -C "$BUILD" -t targets all 2>/dev/null |
             sed -n 's|^\([^:]*cuda[^/:]*\): [A-Z]*_EXECUTABLE_LINKER.*|\1|p' | sort -u)
TARGETS=()
for exe in $CUDA_EXES; do
  case "$exe" in "$BUILD"/*) TARGETS+=("${exe#"$BUILD"/}") ;; esac
done
for t in $NAMED_CUDA; do
  case " ${TARGETS[*]} " in *" $t "*) ;; *) TARGETS+=("$t") ;; esac
done
# bench/codec executables, whatever their names (listed by ninja under bench/codec/).
BENCH_EXES=$(ninja -C "$BUILD" -t targets all 2>/dev/null |
             sed -n 's|^\(bench/codec/[^/:]*\): [A-Z]*_EXECUTABLE_LINKER.*|\1|p' | sort -u)
if [ ${#TARGETS[@]} -eq 0 ]; then
  say "FAIL: no test is labelled cuda (is HCOMM_ENABLE_CUDA on in $BUILD?)"
  exit 1
fi
for b in $BENCH_EXES; do TARGETS+=("$b"); done
say "build: ${TARGETS[*]}"
if ! cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >>"$LOG" 2>&1; then
  say "FAIL: build (see $LOG)"
  grep -E "error|FAILED" "$LOG" | head -30
  exit 1
fi

# --- CUDA tests --------------------------------------------------------------------------------
T=$(left)
[ "$T" -lt 60 ] && T=60
say "ctest -L cuda (timeout ${T}s)"
timeout "$T" ctest --test-dir "$BUILD" -L cuda --output-on-failure --timeout "$T" \
      --output-junit "$OUT_DIR/ctest-cuda.xml" 2>&1 | tee "$OUT_DIR/ctest-cuda.txt" >>"$LOG"
rc=${PIPESTATUS[0]}
tail -5 "$OUT_DIR/ctest-cuda.txt" | tee -a "$LOG"
if grep -q "SKIPPED: no CUDA device" "$OUT_DIR/ctest-cuda.txt" || grep -q "\*\*\*Skipped" "$OUT_DIR/ctest-cuda.txt"; then
  say "FAIL: the CUDA tests skipped although nvidia-smi sees a GPU"
  status=1
fi
[ "$rc" -ne 0 ] && { say "FAIL: CUDA tests (exit $rc)"; status=1; }

# --- GPU codec throughput (tests/core/cuda/cuda_throughput.cu) ---------------------------------
TP=$BUILD/tests/core/core_cuda_throughput
if [ -x "$TP" ]; then
  for dt in ${THROUGHPUT_DTYPES:-f32}; do
    T=$(($(left) - 60))
    [ "$T" -lt 30 ] && T=30
    say "GPU throughput at ${THROUGHPUT_MIB:-256} MiB, $dt (at most ${T}s) -> $OUT_DIR/cuda_throughput_$dt.jsonl"
    timeout "$T" "$TP" --mib "${THROUGHPUT_MIB:-256}" --dtype "$dt" >"$OUT_DIR/cuda_throughput_$dt.jsonl" \
      2>"$OUT_DIR/cuda_throughput_$dt.err"
    trc=$?
    tee -a "$LOG" <"$OUT_DIR/cuda_throughput_$dt.jsonl"
    [ "$trc" -ne 0 ] && { say "FAIL: core_cuda_throughput exited $trc ($(head -3 "$OUT_DIR/cuda_throughput_$dt.err"))"; status=1; }
  done
else
  say "FAIL: $TP was not built"
  status=1
fi

# --- host codec benchmark (bench/codec, when present) ---------------------------------------------
# Small by default (the GPU is what this script is about): BENCH_ARGS replaces the defaults.
DEFAULT_BENCH_ARGS="--hcomm_sizes=16,256 --hcomm_threads=$JOBS --hcomm_no_libzfp --benchmark_min_time=0.2"
if [ -z "$BENCH_EXES" ]; then
  say "no bench/codec executable in this tree: benchmark not run"
else
  for b in $BENCH_EXES; do
    T=$(($(left) - 10))
    if [ "$T" -lt 20 ]; then
      say "no time left for $b (budget ${BUDGET_S}s): not run"
      status=1
      continue
    fi
    name=$(basename "$b")
    say "benchmark $name (at most ${T}s) -> $OUT_DIR/$name.json"
    # shellcheck disable=SC2086
    timeout "$T" "$BUILD/$b" --benchmark_out="$OUT_DIR/$name.json" --benchmark_out_format=json \
      ${BENCH_ARGS:-$DEFAULT_BENCH_ARGS} >"$OUT_DIR/$name.txt" 2>&1
    brc=$?
    tail -40 "$OUT_DIR/$name.txt" | tee -a "$LOG"
    if [ "$brc" -eq 124 ]; then
      say "FAIL: $name ran past ${T}s (narrow it with BENCH_ARGS=--benchmark_filter=...)"
      status=1
    elif [ "$brc" -ne 0 ]; then
      say "FAIL: $name exited $brc"
      status=1
    fi
  done
fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $GPU (cuda arch $CAP)"
  echo "host: $(uname -n), $(nproc) cores"
  echo "elapsed_s: $(($(date +%s) - START))"
  echo "status: $([ $status -eq 0 ] && echo pass || echo fail)"
} >"$OUT_DIR/summary.txt"
tee -a "$LOG" <"$OUT_DIR/summary.txt"
exit $status
