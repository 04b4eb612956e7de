#!/usr/bin/env bash
# scripts/run-main.sh (the README's main command) in a reduced form, run by ctest
# (tests/model/CMakeLists.txt): the tiny model for 4 steps, with the built train_gpt.
#
#   run_main_test.sh netns TRAIN_GPT   the emulated cluster: the calibration prints the
#                                      compute step, the bytes crossing nodes and the rate;
#                                      the runs go through netns-mpirun.sh (4 nodes x 2
#                                      ranks): ZHybrid with TP (inside nodes) uncompressed
#                                      and DP, PP compressed, none, ZHybrid and MZHybrid on
#                                      every axis;
#                                      then RATE=100mbit skips the calibration, and
#                                      INSIDE_NODE=on compresses TP too and skips the third.
#                                      Needs root and network namespaces, else exit 77 (skip).
#   run_main_test.sh shm TRAIN_GPT     HCOMM_NO_NETNS=1: says why and runs over shared
#                                      memory; bad settings exit 2 with one message line.
#
# Each run must exit 0 and end with the summary: tokens/s of both, the speed-up, the final
# validation losses and their gap, the bytes per axis, the plot (when matplotlib is there).
set -uo pipefail
MODE=$1 TRAIN_GPT=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT
export NETNS_PREFIX=hcmt  # not netns-mpirun.sh's default, so that a main job at the same time is left alone
die() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# main_job NAME VAR=VALUE...: run-main.sh reduced, with the settings given; output in WORK/NAME.out.
main_job() {
  local name=$1; shift
  env TRAIN_GPT="$TRAIN_GPT" MODEL=tiny STEPS=4 CAL_STEPS=3 EVAL_EVERY=2 EVAL_BATCHES=1 \
      OUT_DIR="$WORK/$name" "$@" bash "$ROOT/scripts/run-main.sh" > "$WORK/$name.out" 2>&1
}
has() {  # NAME REGEX [what]
  grep -Eq "$2" "$WORK/$1.out" || { cat "$WORK/$1.out" >&2; die "$1: no line matching '$2'${3:+ ($3)}"; }
}
summary_ok() {  # NAME: the summary lines and the files of a finished run
  local n=$1 f
  has "$n" '^summary: 4 steps each' "the run length"
  has "$n" '^summary: zhybrid:16,8 +[0-9]+ tokens/s +[0-9.]+ ms/step +final val loss [0-9.]+$'
  has "$n" '^summary: none +[0-9]+ tokens/s +[0-9.]+ ms/step +final val loss [0-9.]+'
  has "$n" '^summary: speed-up zhybrid:16,8 / none: [0-9.]+x tokens/s'
  has "$n" '^summary: val loss gap zhybrid:16,8 - none: [-+][0-9.]+ \([-+][0-9.]+%\), (within|outside) 0.5% of none'
  has "$n" '^summary: MB per step raw->sent \(all ranks\), zhybrid:16,8: dp [0-9.]+->[0-9.]+, pp [0-9.]+->[0-9.]+, tp '
  has "$n" '^summary: MB per step raw->sent \(all ranks\), none +: dp '
  has "$n" '^run-main: done in [0-9]+ s$'
  for f in main.jsonl none.jsonl; do
    [ "$(grep -c '"step"' "$WORK/$n/$f")" = 4 ] || die "$n: $f does not hold 4 steps"
  done
  if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    has "$n" "^summary: plot .* in $WORK/$n/main.png$"
    [ -s "$WORK/$n/main.png" ] || die "$n: no plot"
  fi
}

sent_ok() {  # RUN/FILE raw|compressed: the last step's tp bytes sent raw or compressed, dp and pp compressed
  /usr/bin/python3 - "$WORK/$1" "$2" <<'PY'
import json, sys
c = [json.loads(l) for l in open(sys.argv[1])][-1]["comm"]
tp_ok = c["tp"]["sent"] == c["tp"]["raw"] > 0 if sys.argv[2] == "raw" else c["tp"]["sent"] < c["tp"]["raw"]
sys.exit(0 if tp_ok and c["dp"]["sent"] < c["dp"]["raw"] and c["pp"]["sent"] < c["pp"]["raw"] else 1)
PY
}

case "$MODE" in
  shm)
    # bad settings: exit 2, one line naming the setting, before anything runs
    for bad in "RATE=fast" "RATE=10" "STEPS=0" "STEPS=x" "CAL_STEPS=-1" "EVAL_EVERY=often" \
               "EVAL_BATCHES=0" "HCOMM_NO_NETNS=yes" "INSIDE_NODE=maybe" "TRAIN_GPT=$WORK/missing"; do
      env TRAIN_GPT="$TRAIN_GPT" OUT_DIR="$WORK/bad" "$bad" bash "$ROOT/scripts/run-main.sh" > "$WORK/bad.out" 2>&1
      rc=$?
      [ $rc = 2 ] || { cat "$WORK/bad.out" >&2; die "$bad: exit $rc, expected 2"; }
      [ "$(wc -l < "$WORK/bad.out")" = 1 ] && grep -q "^run-main: ${bad%%=*}='" "$WORK/bad.out" ||
        die "$bad: not one 'run-main: ${bad%%=*}=...' line: $(cat "$WORK/bad.out")"
      [ ! -e "$WORK/bad" ] || die "$bad: wrote $WORK/bad before refusing"
    done
    for bad in "SCHEME=bogus" "SCHEME=zhybrid:16" "ALSO=mzhybrid:7" "MODEL=huge" "ARCH=gpt5"; do
      env TRAIN_GPT="$TRAIN_GPT" OUT_DIR="$WORK/bad" "$bad" bash "$ROOT/scripts/run-main.sh" > "$WORK/bad.out" 2>&1
      rc=$?
      [ $rc = 2 ] || { cat "$WORK/bad.out" >&2; die "$bad: exit $rc, expected 2"; }
      [ "$(wc -l < "$WORK/bad.out")" = 1 ] && grep -q "^run-main: train_gpt refuses .*${bad%%=*}='${bad#*=}'.*: train_gpt: " "$WORK/bad.out" ||
        die "$bad: not one 'run-main: train_gpt refuses ...' line with train_gpt's reason: $(cat "$WORK/bad.out")"
      [ ! -e "$WORK/bad" ] || die "$bad: wrote $WORK/bad before refusing"
    done
    ok "bad settings exit 2 with one line"
    main_job shm HCOMM_NO_NETNS=1 || { cat "$WORK/shm.out" >&2; die "HCOMM_NO_NETNS=1 run: exit $?"; }
    has shm '^run-main: no emulated cluster \(HCOMM_NO_NETNS=1 is set\): running on 8 ranks over shared memory'
    ! grep -q '^netns-mpirun:\|^run-main: calibration' "$WORK/shm.out" || die "shm: used the emulated cluster"
    summary_ok shm
    sent_ok shm/main.jsonl compressed || die "shm: tp was not compressed (one node: every axis is)"
    ! grep -q '^summary: .*on every axis' "$WORK/shm.out" || die "shm: a third run"
    has shm '^summary: shared memory, no rate-limited links \(HCOMM_NO_NETNS=1 is set\)$'
    ok "HCOMM_NO_NETNS=1: shared memory, with the reason and the summary"
    # scripts/main_job.py on bad input: exit 2, one line naming the problem
    J=$ROOT/scripts/main_job.py M=$WORK/shm/main.jsonl
    head -n 2 "$M" > "$WORK/short.jsonl"
    echo '{"step": 1}' > "$WORK/nocomm.jsonl"
    for args in "rate --metrics $WORK/missing.jsonl --grid 2x2x2 --nodes 4 --ranks-per-node 2|cannot read" \
                "rate --metrics $M --grid 2x2 --nodes 4 --ranks-per-node 2|grid-axes: --grid '2x2'" \
                "rate --metrics $M --grid 2x2x2 --nodes 4 --ranks-per-node 2|a compressed run" \
                "rate --metrics $WORK/nocomm.jsonl --grid 2x2x2 --nodes 4 --ranks-per-node 2|lacks ms" \
                "summary --scheme z --metrics $M --none $WORK/short.jsonl|not the same run length" \
                "summary --scheme z --metrics $M --none $M --also mzhybrid:8|wants SCHEME=FILE" \
                "summary --scheme z --metrics $M --none $M --also mz=$WORK/short.jsonl|not the same run length"; do
      /usr/bin/python3 "$J" ${args%|*} > "$WORK/j.out" 2>&1
      rc=$?
      [ $rc = 2 ] && [ "$(wc -l < "$WORK/j.out")" = 1 ] && grep -q -- "${args#*|}" "$WORK/j.out" ||
        die "main_job.py ${args%|*}: exit $rc, expected 2 and one line with '${args#*|}': $(cat "$WORK/j.out")"
    done
    ok "main_job.py: bad input exits 2 with one line"
    ;;
  netns)
    [ "$(id -u)" = 0 ] || { echo "SKIP: not root (network namespaces)"; exit 77; }
    unshare --net sh -c 'ip link set lo up && tc qdisc add dev lo root tbf rate 1mbit burst 32kb latency 50ms' \
      2>/dev/null || { echo "SKIP: no rate-limited network namespaces here"; exit 77; }
    main_job netns || { cat "$WORK/netns.out" >&2; die "netns run: exit $?"; }
    has netns '^run-main: emulated cluster: 4 nodes x 2 ranks, grid 2x2x2 \(TPxDPxPP\): TP: inside nodes; DP: crosses nodes; PP: crosses nodes$'
    has netns '^run-main: calibration: compute step [0-9.]+ ms'
    has netns '^run-main: calibration: bytes crossing nodes per step [0-9.]+ MB \(dp [0-9.]+ \+ pp [0-9.]+, all ranks\), [0-9.]+ MB per node link each way$'
    has netns '^run-main: calibration: link rate [0-9.]+ Mbit/s'
    has netns '^run-main: links of [0-9]+kbit each way$'
    [ "$(grep -c '^netns-mpirun: 4 nodes x 2 ranks' "$WORK/netns.out")" = 4 ] || die "netns: not all 4 runs on the emulated cluster"
    summary_ok netns
    has netns '^summary: zhybrid:16,8 as run: --compress-inside-node off: uncompressed inside one node: tp; compressed by the scheme: dp, pp$'
    has netns '^summary: zhybrid:16,8 on every axis \(inside nodes too\): [0-9]+ tokens/s, [0-9.]+ ms/step, [0-9.]+x none \(target (met|not met)\), final val loss [0-9.]+ \([-+][0-9.]+% of none.s\)$'
    has netns '^summary: mzhybrid:8 on every axis \(inside nodes too\): [0-9]+ tokens/s, [0-9.]+ ms/step, [0-9.]+x none \(target (met|not met)\), final val loss [0-9.]+ \([-+][0-9.]+% of none.s\)$'
    # what went raw is what the metrics say: tp sent raw in the main run, compressed in the every-axis one
    sent_ok netns/main.jsonl raw || die "netns: the main run's tp was not sent raw"
    sent_ok netns/everywhere.jsonl compressed || die "netns: the every-axis run's tp was not compressed"
    sent_ok netns/also.jsonl compressed || die "netns: the mzhybrid:8 run's tp was not compressed"
    has netns '^summary: none .* = [0-9.]+x the compute step \([0-9]+ ms\)$'
    has netns '^summary: links of [0-9]+kbit each way$'
    has netns '^summary: speed-up .* tokens/s \(target at least 1.3x: (met|not met)\)$'
    ok "the emulated cluster: calibration, both runs, the summary"
    main_job fixed RATE=100mbit INSIDE_NODE=on || { cat "$WORK/fixed.out" >&2; die "RATE=100mbit run: exit $?"; }
    ! grep -q '^run-main: calibration' "$WORK/fixed.out" || die "RATE=100mbit: calibrated anyway"
    has fixed '^netns-mpirun: 4 nodes x 2 ranks .* 100mbit links each way$'
    summary_ok fixed
    ! grep -q '^summary: .*on every axis\|as run: --compress-inside-node' "$WORK/fixed.out" || die "INSIDE_NODE=on: a third run or a raw note"
    sent_ok fixed/main.jsonl compressed || die "INSIDE_NODE=on: tp was not compressed"
    ok "RATE=100mbit INSIDE_NODE=on: no calibration, that rate, every axis compressed"
    [ -z "$(ip netns list 2>/dev/null | grep "^$NETNS_PREFIX-")" ] || die "namespaces $NETNS_PREFIX-* left behind"
    ;;
  *) die "usage: run_main_test.sh netns|shm TRAIN_GPT" ;;
esac
