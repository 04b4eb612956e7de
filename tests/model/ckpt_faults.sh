#!/bin/sh
# ckpt_faults.sh CASE WORKDIR MPIEXEC... -- TRAIN_GPT ARGS...: checkpoint sets under injected
# faults (examples/gpt/faults.hpp), on the ranks and grid that ARGS give (4 ranks, dp 2 pp 2).
# The trainer runs 30 steps; the full run's losses are the reference for every resume.
#   mixed     a set with one rank's file from another save is refused, within seconds
#   enospc    rank 3's write fails (ENOSPC) at step 20: the job stops with the reason, the set
#             of step 10 stays current, no attempt files remain, and it resumes bit-identically
#   continue  the same with --on-save-error continue: training goes on, the step-30 set saves
#   manifest  rank 0's manifest write fails: the same as a failed rank
#   kill      rank 2 dies (SIGKILL) halfway through its file at step 20: resume takes step 10
#             and reproduces the uninterrupted losses bit for bit
#   unshared  rank 1 does not see rank 0's files: the first save says so and the run stops
#   hang      rank 1 stops communicating at step 3: --comm-timeout 3 ends the job, naming the
#             rank, the operation and the step
#   oom       an allocation of rank 1 fails inside step 15 (as a GPU out of memory): rank 1
#             says so once, with the step, the job ends, the set of step 10 stays current and
#             resumes bit-identically
set -u
case_=$1 work=$2
shift 2
mpi=""
while [ "$1" != "--" ]; do mpi="$mpi $1"; shift; done
shift
run="$mpi $*"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "ckpt_faults $case_: $*"; exit 1; }
# expect CODE REGEX: the last command's exit code and exactly one line matching REGEX
expect() {
  [ "$rc" = "$1" ] || fail "exit code $rc, expected $1"
  n=$(grep -Ec -- "$2" out.txt)
  [ "$n" = 1 ] || fail "$n lines match '$2', expected 1"
}
go() { "$@" > out.txt 2>&1; rc=$?; cat out.txt; }
full() { go $run --losses-out full.txt; [ "$rc" = 0 ] || fail "the full run failed"; }
sets() { (cd "$1" && find . | sort | tr '\n' ' '); }
only10() {
  got=$(sets "$1")
  want=". ./step-00000010 ./step-00000010/manifest.json ./step-00000010/rank0.ckpt ./step-00000010/rank1.ckpt ./step-00000010/rank2.ckpt ./step-00000010/rank3.ckpt "
  [ "$got" = "$want" ] || fail "$1 holds: $got"
}
resume_matches() {
  go $run --resume "$1" --expect-losses full.txt --expect-rtol 0
  expect 0 "^expect-losses: 20 steps compared"
}
case $case_ in
  mixed)
    go $run --stop-at 10 --save a; [ "$rc" = 0 ] || fail "save a"
    go $run --stop-at 20 --save b; [ "$rc" = 0 ] || fail "save b"
    cp a/step-00000010/rank3.ckpt b/step-00000020/rank3.ckpt
    go timeout 60 $run --resume b
    expect 2 "^train_gpt: refusing checkpoint set b/step-00000020: rank 3: .*rank3.ckpt holds step 10, the set is step 20 \(a mixed set"
    ! grep -Eq '^step +[0-9]+/' out.txt || fail "training started" ;;
  enospc)
    full
    GPT_FAULT_SAVE_ENOSPC=3:20 go timeout 60 $run --save-every 10 --save c
    expect 3 "^train_gpt: checkpoint set c/step-00000020 not saved: rank 3: cannot write .*rank3.ckpt.tmp: No space left on device; the set at step 10 stays current"
    only10 c
    resume_matches c ;;
  continue)
    full
    GPT_FAULT_SAVE_ENOSPC=3:20 go timeout 60 $run --save-every 10 --save c --keep 5 --on-save-error continue --losses-out cont.txt
    expect 0 "^train_gpt: checkpoint set c/step-00000020 not saved: rank 3: .*No space left on device; the set at step 10 stays current; training goes on"
    cmp full.txt cont.txt || fail "losses differ from the full run"
    [ -f c/step-00000030/manifest.json ] && [ ! -e c/step-00000020 ] || fail "c holds: $(sets c)" ;;
  manifest)
    full
    GPT_FAULT_SAVE_ENOSPC=4:20 go timeout 60 $run --save-every 10 --save c
    expect 3 "^train_gpt: checkpoint set c/step-00000020 not saved: rank 0: cannot write .*manifest.json.tmp: No space left on device; the set at step 10 stays current"
    only10 c
    resume_matches c ;;
  kill)
    full
    GPT_FAULT_KILL_IN_SAVE=2:20 go timeout 60 $run --save-every 10 --save c
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "exit code $rc, expected the job to die"
    [ -f c/step-00000010/manifest.json ] && [ ! -f c/step-00000020/manifest.json ] || fail "c holds: $(sets c)"
    resume_matches c ;;
  unshared)
    GPT_FAULT_UNSHARED=1 go timeout 60 $run --save-every 10 --save c
    expect 3 "^train_gpt: checkpoint directory c is not shared: rank 1 cannot see rank 0's file .*every rank sees" ;;
  hang)
    GPT_FAULT_HANG=1:3 go timeout 60 $run --comm-timeout 3
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "exit code $rc, expected the watchdog to end the job"
    grep -Eq "^train_gpt \(rank [0-9]\): stuck for [0-9]+ s in .* at step 3 \(--comm-timeout 3\)" out.txt || fail "no watchdog message" ;;
  oom)
    full
    GPT_FAULT_ALLOC_STEP=1:15 go timeout 60 $run --save-every 10 --save c
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "exit code $rc, expected the job to end"
    n=$(grep -Ec "^train_gpt \(rank 1\): step 15: out of memory \(std::bad_alloc\)$" out.txt)
    [ "$n" = 1 ] || fail "$n lines name rank 1's failure in step 15, expected 1"
    ! grep -Eq '^step +15/' out.txt || fail "step 15 was reported as done"
    only10 c
    resume_matches c ;;
  *) fail "unknown case" ;;
esac
echo "ckpt_faults $case_: ok"
