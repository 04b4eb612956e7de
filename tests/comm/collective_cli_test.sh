#!/usr/bin/env bash
# hcomm-collective's command line, run by ctest (see tests/codec/extra.cmake): every bad
# argument exits 2 with exactly one line on stderr, from rank 0 only, naming the option;
# nothing on stdout; --device cuda without CUDA (or without a device) exits 3 with one line;
# and good arguments still measure.
#
#   collective_cli_test.sh MPIEXEC TOOL CUDA     # CUDA: ON or OFF, the build's HCOMM_ENABLE_CUDA
#
# The tool parses its command line before MPI_Init, so the argument cases run the tool
# directly (no MPI start-up, milliseconds each: the code rank 0 runs under mpiexec); a few
# of them, the one that depends on the rank count, and the device check also run on 2 ranks
# under mpiexec, where only rank 0 may print. mpiexec --quiet drops Open MPI's own banner
# about non-zero exits, so what remains on stderr is the tool's.
set -uo pipefail
MPIEXEC=$1; TOOL=$2; CUDA=${3:-OFF}
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
FLAGS=(--quiet --oversubscribe)
[ "$(id -u)" = 0 ] && FLAGS+=(--allow-run-as-root)
mkdir adir

die() { echo "FAIL: $*" >&2; exit 1; }

n=0
# check_run WANT NAMED LAUNCH... -- ARGS...: exit WANT, one "hcomm-collective: " line
# containing NAMED, nothing on stdout.
check_run() {
  local want=$1 named=$2; shift 2
  local launch=()
  while [ "$1" != -- ]; do launch+=("$1"); shift; done
  shift
  n=$((n + 1))
  timeout 120 "${launch[@]}" "$TOOL" "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc = "$want" ] || die "${launch[*]} $*: exit $rc, expected $want: $(cat err.txt)"
  [ "$(wc -l < err.txt)" = 1 ] || die "$*: stderr is not one line: $(cat err.txt)"
  grep -q '^hcomm-collective: ' err.txt || die "$*: the line lacks the hcomm-collective: prefix: $(cat err.txt)"
  grep -qF -- "$named" err.txt || die "$*: the message does not name '$named': $(cat err.txt)"
  [ -s out.txt ] && die "$*: wrote to stdout: $(cat out.txt)"
  echo "  $* -> $(cat err.txt)"
}
# expect_usage NAMED ARGS...: the tool alone (a singleton): exit 2, the line names NAMED.
expect_usage() { local named=$1; shift; check_run 2 "$named" env -- "$@"; }
# expect_usage_np2 NAMED ARGS...: the same on 2 ranks: one line, from rank 0 only.
expect_usage_np2() { local named=$1; shift; check_run 2 "$named" "$MPIEXEC" "${FLAGS[@]}" -n 2 -- "$@"; }

expect_usage --bytes --bytes 99999999999999999999
expect_usage --bytes --bytes 18446744073709551616
expect_usage --bytes --bytes 0
expect_usage --bytes --bytes 3
expect_usage --bytes --bytes 6
expect_usage --bytes --bytes -4
expect_usage --bytes --bytes 1.5M
expect_usage --bytes --bytes 4Q
expect_usage --bytes --bytes 8G
expect_usage --bytes --bytes 17179869184K
expect_usage --bytes --bytes 4M,3
expect_usage --bytes --bytes
expect_usage --iters --iters 0
expect_usage --iters --iters -1
expect_usage --iters --iters x
expect_usage --iters --iters 4294967297
expect_usage --iters --iters 99999999999999999999
expect_usage --iters --iters 010x
expect_usage --warmup --warmup -1
expect_usage --warmup --warmup 1000001
expect_usage --rounds --rounds 0
expect_usage --rounds --rounds 2147483648
expect_usage --threshold --threshold -1
expect_usage --threshold --threshold 2T
expect_usage --threshold --threshold 1x
expect_usage --segment --segment 0
expect_usage --segment --segment 2
expect_usage --segment --segment 99999999999999999999
expect_usage --idle-sleep-us --idle-sleep-us -3
expect_usage --idle-sleep-us --idle-sleep-us 1000001
expect_usage --idle-sleep-us --idle-sleep-us x
expect_usage --compress-inside-node --compress-inside-node maybe
expect_usage --compress-inside-node --compress-inside-node
expect_usage --op --op foo
expect_usage --op --op allreduce,foo
expect_usage --codec --codec lz4
expect_usage --codec --codec zfp:0
expect_usage --codec --codec zfp
expect_usage --codec --codec mpc,zfp:65
expect_usage --scheme --scheme bogus
expect_usage --axis --axis xx
expect_usage --data --data adir
expect_usage --data --data random,smooth
# --data FILE: raw float32 values; missing, empty, not whole values, not finite, shorter than
# --bytes (not tiled), one file of several missing
: > empty.f32
printf '\0\0\200\77\0\0' > odd.f32
printf '\0\0\200\77\0\0\300\177' > nan.f32
head -c 4096 /dev/zero > zeros.f32
expect_usage "--data missing.f32: no such file" --data missing.f32
expect_usage "--data empty.f32: is empty" --data empty.f32
expect_usage "--data odd.f32: 6 bytes is not a whole number of float32 values" --data odd.f32
expect_usage "--data nan.f32: value 1 is not finite" --data nan.f32
expect_usage "--bytes 8192 is larger than --data zeros.f32 (4096 bytes)" --data zeros.f32 --bytes 8K
expect_usage "--data missing.f32: no such file" --data zeros.f32,missing.f32
expect_usage "--data: give smooth, random or FILE" --data ''
expect_usage --fast --fast
expect_usage extra --bytes 4K extra
expect_usage --device --device gpu
expect_usage --device --device
expect_usage --device-path --device cuda --device-path host
expect_usage --iters --device cuda --iters 0

# On 2 ranks: refused before MPI_Init (one line from rank 0), and after it (the rank count).
expect_usage_np2 --bytes --bytes 0
expect_usage_np2 --fast --fast
expect_usage_np2 --codec --codec lz4
expect_usage_np2 --bytes --op allreduce,reduce_scatter --bytes 4
expect_usage_np2 "--bytes 8192 is larger than --data zeros.f32" --data zeros.f32 --bytes 8K

# --device cuda: "built without CUDA" in a build without it; in a build with it, either a
# measurement on the device or "no CUDA device: <the runtime's reason>"; exit 3 when it cannot.
device_run() {  # LAUNCH... -- : --device cuda, exit 0 (measured) or 3 (the reason), checked
  local launch=()
  while [ "$1" != -- ]; do launch+=("$1"); shift; done
  timeout 300 "${launch[@]}" "$TOOL" --device cuda --op allreduce,allgather,reduce_scatter,p2p,broadcast \
    --codec mpc,zfp:8 --baseline --bytes 64K --iters 1 --warmup 0 --threshold 0 > dev.txt 2> err.txt
  local rc=$?
  if [ $rc = 3 ]; then
    [ "$(wc -l < err.txt)" = 1 ] || die "--device cuda: stderr is not one line: $(cat err.txt)"
    [ -s dev.txt ] && die "--device cuda: exit 3 but wrote to stdout: $(cat dev.txt)"
    if [ "$CUDA" = ON ]; then
      grep -q '^hcomm-collective: --device cuda: \(rank [0-9]*: \)\?no CUDA device: .' err.txt ||
        die "--device cuda: not a no-device line: $(cat err.txt)"
    else
      grep -q '^hcomm-collective: --device cuda: \(rank [0-9]*: \)\?built without CUDA' err.txt ||
        die "--device cuda: not a built-without-CUDA line: $(cat err.txt)"
    fi
    echo "  ${launch[*]} --device cuda -> 3: $(cat err.txt)"
  elif [ $rc = 0 ] && [ "$CUDA" = ON ]; then
    python3 - dev.txt <<'EOF' || die "--device cuda JSON: $(cat dev.txt)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 15 and all(r["device"] == "cuda" and r["device_path"] == "resident" for r in rows), rows
assert all(r["transport"] in ("mpi_staged", "mpi_device") for r in rows), rows
for r in rows:
    assert r["identical"] in (True, None), r
    assert r["rel_error"] < (1e-2 if r["codec"] == "zfp:8" else 1e-6), r
EOF
    echo "  ${launch[*]} --device cuda -> measured on the device"
  else
    die "--device cuda: exit $rc (CUDA=$CUDA): $(cat err.txt)"
  fi
}
device_run env --
device_run "$MPIEXEC" "${FLAGS[@]}" -n 2 --

# Good arguments: one JSON line per measurement, the options' values in it.
timeout 300 "$MPIEXEC" "${FLAGS[@]}" -n 2 "$TOOL" --op allreduce,reduce_scatter --codec mpc,zfp:8 --baseline \
  --bytes 64K,8 --iters 1 --warmup 0 --threshold 0 --segment 16K --idle-sleep-us -1 > good.txt 2> err.txt ||
  die "good arguments: exit $?: $(cat err.txt)"
[ -s err.txt ] && die "good arguments wrote to stderr: $(cat err.txt)"
[ "$(grep -c '^{' good.txt)" = 12 ] || die "expected 12 JSON lines: $(cat good.txt)"
python3 - good.txt <<'EOF' || die "JSON lines: $(cat good.txt)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ["op", "codec", "bytes", "ranks", "iters", "seconds", "min_seconds", "algbw_gbs", "wire_bytes", "raw_bytes",
        "ratio", "max_error", "rel_error", "codec_seconds", "identical", "data", "threshold", "segment",
        "idle_sleep_us", "idle_wait_us", "validate", "compress_inside_node", "one_node", "round", "threads",
        "threads_source", "device"]
for r in rows:
    assert list(r) == keys, list(r)
    assert r["ranks"] == 2 and r["iters"] == 1 and r["threshold"] == 0 and r["segment"] == 16384, r
    assert r["bytes"] in (65536, 8) and r["idle_sleep_us"] == -1 and r["validate"] is True, r
    assert r["device"] == "cpu" and r["compress_inside_node"] is True and r["one_node"] is True, r
assert {r["codec"] for r in rows} == {"mpc:0", "zfp:8", "mpi"}  # canonical names (to_string)
assert {r["op"] for r in rows} == {"allreduce", "reduce_scatter"}
EOF
# --data FILE,FILE: rank r sends file r mod 2 (exact sums and gathers: max_error 0), --bytes
# defaults to the smaller file, the JSON names the files.
python3 -c 'import array; array.array("f", [0.5 * i for i in range(2048)]).tofile(open("ramp.f32", "wb"))'
timeout 120 "$MPIEXEC" "${FLAGS[@]}" -n 2 "$TOOL" --data ramp.f32,zeros.f32 --op allreduce,allgather,p2p --codec mpc \
  --iters 1 --warmup 0 --threshold 0 > files.txt 2> err.txt || die "--data ramp.f32,zeros.f32: exit $?: $(cat err.txt)"
python3 - files.txt <<'EOF' || die "--data files JSON: $(cat files.txt)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["op"] for r in rows] == ["allreduce", "allgather", "p2p"], rows
for r in rows:
    assert r["data"] == "ramp.f32,zeros.f32" and r["bytes"] == 4096 and r["max_error"] == 0, r
EOF
# --help: printed once (by rank 0), exit 0.
timeout 120 "$MPIEXEC" "${FLAGS[@]}" -n 2 "$TOOL" --help > help.txt 2> err.txt || die "--help: exit $?"
[ "$(grep -c '^Usage:' help.txt)" = 1 ] || die "--help not printed once: $(cat help.txt)"
grep -q -- '--idle-sleep-us' help.txt || die "--help lacks --idle-sleep-us"
grep -q -- '--device' help.txt || die "--help lacks --device"
grep -q -- '3 --device cuda without a usable CUDA device' help.txt || die "--help lacks exit status 3"
# A codec typed without its parameter is reported by its canonical name.
timeout 120 "$MPIEXEC" "${FLAGS[@]}" -n 2 "$TOOL" --codec int8,bf16 --bytes 4K --iters 1 --warmup 0 --threshold 0 \
  > names.txt 2> err.txt || die "int8,bf16: exit $?: $(cat err.txt)"
python3 -c 'import json,sys; c=[json.loads(l)["codec"] for l in open(sys.argv[1])]; sys.exit(c != ["int8:256", "bf16"])' \
  names.txt || die "codec names: $(cat names.txt)"
echo "ok: $n bad command lines rejected with one line from rank 0; --device cuda checked; good ones measure"
