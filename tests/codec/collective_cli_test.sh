#!/usr/bin/env bash
# hcomm-collective's command line, run by ctest (see tests/codec/extra.cmake): every bad
# argument exits 2 with exactly one line on stderr, from rank 0 only (the job runs on 2
# ranks), naming the option; nothing on stdout; and good arguments still measure.
#
#   collective_cli_test.sh MPIEXEC TOOL
#
# mpiexec --quiet drops Open MPI's own banner about non-zero exits, so what remains on stderr
# is the tool's.
set -uo pipefail
MPIEXEC=$1; TOOL=$2
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
FLAGS=(--quiet --oversubscribe)
[ "$(id -u)" = 0 ] && FLAGS+=(--allow-run-as-root)
mkdir adir

die() { echo "FAIL: $*" >&2; exit 1; }

n=0
# expect_usage NAMED ARGS...: exit 2, one "hcomm-collective: " line containing NAMED.
expect_usage() {
  local named=$1; shift
  n=$((n + 1))
  timeout 120 "$MPIEXEC" "${FLAGS[@]}" -n 2 "$TOOL" "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc = 2 ] || die "$*: exit $rc, expected 2: $(cat err.txt)"
  [ "$(wc -l < err.txt)" = 1 ] || die "$*: stderr is not one line: $(cat err.txt)"
  grep -q '^hcomm-collective: ' err.txt || die "$*: the line lacks the hcomm-collective: prefix: $(cat err.txt)"
  grep -qF -- "$named" err.txt || die "$*: the message does not name '$named': $(cat err.txt)"
  [ -s out.txt ] && die "$*: wrote to stdout: $(cat out.txt)"
  echo "  $* -> $(cat err.txt)"
}

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
expect_usage --bytes --op allreduce,reduce_scatter --bytes 4
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
expect_usage --idle-sleep-us --idle-sleep-us -2
expect_usage --idle-sleep-us --idle-sleep-us 1000001
expect_usage --idle-sleep-us --idle-sleep-us x
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
expect_usage --fast --fast
expect_usage extra --bytes 4K extra

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
        "idle_sleep_us", "idle_wait_us", "validate", "round", "threads", "threads_source"]
for r in rows:
    assert list(r) == keys, list(r)
    assert r["ranks"] == 2 and r["iters"] == 1 and r["threshold"] == 0 and r["segment"] == 16384, r
    assert r["bytes"] in (65536, 8) and r["idle_sleep_us"] == -1 and r["validate"] is True, r
assert {r["codec"] for r in rows} == {"mpc", "zfp:8", "mpi"}
assert {r["op"] for r in rows} == {"allreduce", "reduce_scatter"}
EOF
# --help: printed once (by rank 0), exit 0.
timeout 120 "$MPIEXEC" "${FLAGS[@]}" -n 2 "$TOOL" --help > help.txt 2> err.txt || die "--help: exit $?"
[ "$(grep -c '^Usage:' help.txt)" = 1 ] || die "--help not printed once: $(cat help.txt)"
grep -q -- '--idle-sleep-us' help.txt || die "--help lacks --idle-sleep-us"
echo "ok: $n bad command lines rejected with one line from rank 0; good ones measure"
