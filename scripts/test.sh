#!/usr/bin/env bash
# Builds and runs every test: first an AddressSanitizer + UBSan build of the codec tests
# (round trips, every truncation and byte flip of frames, the fuzz mutations, libFuzzer, the
# CLI on bad input), which run there only (build-asan/); then the full Release build with all
# other tests (build-test/: Catch2 + mpiexec + must-not-compile + consumer package + CUDA
# compile when nvcc exists). That build is checked, not measured, so it is optimised for the
# time CI takes: the tests' own code at -O1 (HCOMM_TEST_OPT_LEVEL: they test the same headers;
# -O1 compiles them in about 60% of -O2's time and runs them about 5% slower), the examples,
# tools and benchmarks at -O2 (HCOMM_OPT_LEVEL: train_gpt.cpp compiles in about half of -O3's
# time, and the trainer tests run within a few percent). It leaves build/ alone: that is the
# plain Release build that scripts/run-main.sh and the benchmarks use.
# Ends with ctest's summary line of the full run; exits non-zero if either run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

status=0

echo "== sanitizer build (ASan + UBSan): codec tests =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DHCOMM_SANITIZE=ON \
      -DHCOMM_ENABLE_CUDA=OFF -DHCOMM_BUILD_BENCH=OFF -DHCOMM_BUILD_EXAMPLES=OFF -DHCOMM_BUILD_TOOLS=ON \
      -DHCOMM_TEST_AREAS=codec -DHCOMM_TOOLS=hcomm-codec >build-asan.log 2>&1 \
  || { cat build-asan.log; exit 1; }
cmake --build build-asan -j "$JOBS" >>build-asan.log 2>&1 || { tail -50 build-asan.log; exit 1; }
# The sanitizer tests run while the full build compiles (together they keep the cores busy);
# their output is printed once the build is done. Leaks are reported; MPI is not exercised
# here. ("compile" tests only run the compiler: they need no sanitizer and run in the full
# build.)
(
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -L codec -LE "compile|cuda" --output-on-failure -j "$JOBS" >build-asan-test.log 2>&1
  echo $? >build-asan-test.rc
) &
asan_tests=$!

echo "== full build: all tests =="
# (The codec area runs above, under the sanitizers; it is not built again here. CUDA code is
# compiled for sm_90 only, its host code and device code at -O1: without a GPU, CI checks that
# it compiles and links, and runs only its refusals of a missing GPU; the GPU kit of
# scripts/gpu-check.sh builds at -O3.)
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DHCOMM_OPT_LEVEL=2 -DHCOMM_TEST_OPT_LEVEL=1 \
      -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CUDA_FLAGS_RELEASE=-O1 -DNDEBUG -Xcicc -O1 -Xptxas -O1" \
      "-DHCOMM_TEST_AREAS=core;comm;msparse;model;consumer" >build-test.log 2>&1 \
  || { wait $asan_tests; cat build-test.log; exit 1; }
built=0
cmake --build build-test -j "$JOBS" >>build-test.log 2>&1 && built=1
wait $asan_tests
echo "== sanitizer tests (ran during the full build) =="
cat build-asan-test.log
[ "$(cat build-asan-test.rc 2>/dev/null)" = 0 ] || status=1
[ $built = 1 ] || { tail -50 build-test.log; exit 1; }
echo "== full build's tests =="
# Tests that skip say why (e.g. no CUDA device); ctest only shows "Skipped", so print it here.
ctest --test-dir build-test -L cuda -LE gpu-kit --verbose 2>&1 | grep -a "SKIPPED" || true
ctest --test-dir build-test --output-on-failure -j "$JOBS" || status=1
exit $status
