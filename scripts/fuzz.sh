#!/usr/bin/env bash
# scripts/fuzz.sh: libFuzzer run of the frame decoders (tests/fuzz/fuzz_decode.cpp) under
# AddressSanitizer + UBSan, for a bounded time, on seed frames of every registered codec x
# dtype (checksum on and off).
#
#   scripts/fuzz.sh [SECONDS=60] [WORKDIR=build-fuzz]
#
# Exit status: 0 no finding; 1 a finding (the input is saved under WORKDIR/artifacts/; replay
# it with WORKDIR/fuzz_decode ARTIFACT) or a build failure; 77 clang++ or libFuzzer missing
# (apt-get install clang libclang-rt-14-dev). The corpus grows across runs in WORKDIR/corpus.
# Environment: HCOMM_FUZZ_CXX (default clang++), HCOMM_FUZZ_CXXFLAGS (extra flags, e.g.
# -I<build>/generated), HCOMM_FUZZ_JOBS (parallel fuzzing processes, default 1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIME=${1:-60}
WORK=${2:-$ROOT/build-fuzz}
CXX=${HCOMM_FUZZ_CXX:-clang++}
JOBS=${HCOMM_FUZZ_JOBS:-1}
case $TIME in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$TIME'" >&2; exit 2;; esac

if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "fuzz.sh: SKIP: $CXX not found (apt-get install clang libclang-rt-14-dev)"
  exit 77
fi
mkdir -p "$WORK/corpus" "$WORK/artifacts"
probe=$WORK/probe.cpp
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe"
if ! "$CXX" -fsanitize=fuzzer "$probe" -o "$WORK/probe" >/dev/null 2>&1; then
  echo "fuzz.sh: SKIP: $CXX cannot link -fsanitize=fuzzer (apt-get install libclang-rt-14-dev)"
  exit 77
fi

SRC=$ROOT/tests/fuzz/fuzz_decode.cpp
# Serial host executor (no -fopenmp): one thread keeps the fuzzer deterministic and fast.
FLAGS=(-std=c++20 -g -fno-omit-frame-pointer -I"$ROOT/include" ${HCOMM_FUZZ_CXXFLAGS:-})
LIBS=()
[ -e /usr/include/zfp.h ] && LIBS+=(-lzfp)   # for a registered codec that calls libzfp

echo "fuzz.sh: building the seed writer and the fuzzer with $CXX"
"$CXX" "${FLAGS[@]}" -O1 -DHCOMM_FUZZ_STANDALONE "$SRC" -o "$WORK/fuzz_seeds" "${LIBS[@]}"
"$CXX" "${FLAGS[@]}" -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  "$SRC" -o "$WORK/fuzz_decode" "${LIBS[@]}"
rm -rf "$WORK/seeds"
"$WORK/fuzz_seeds" --write-seeds "$WORK/seeds"

echo "fuzz.sh: fuzzing for ${TIME}s (corpus $WORK/corpus)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
args=(-max_total_time="$TIME" -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1
      -artifact_prefix="$WORK/artifacts/")
if [ "$JOBS" -gt 1 ]; then args+=(-jobs="$JOBS" -workers="$JOBS"); fi
set +e
"$WORK/fuzz_decode" "${args[@]}" "$WORK/corpus" "$WORK/seeds" > "$WORK/fuzz.log" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  grep -E -A30 'ERROR|runtime error|FINDING|Test unit written' "$WORK/fuzz.log" | head -80 >&2
  echo "fuzz.sh: FINDING (exit $rc): see $WORK/fuzz.log; inputs in $WORK/artifacts/:" >&2
  ls -l "$WORK/artifacts" >&2
  exit 1
fi
grep -E '^#[0-9]+.*DONE|^stat::(number_of_executed_units|peak_rss_mb)' "$WORK/fuzz.log" | tail -3 || true
echo "fuzz.sh: ok, no finding in ${TIME}s"
