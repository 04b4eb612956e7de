#!/bin/sh
# expect_run.sh CODE REGEX COUNT -- COMMAND...: runs COMMAND and passes when it exits with CODE
# and exactly COUNT lines of its output (stdout and stderr) match the extended REGEX, and no
# line reports a training step ("step N/M"), unless REGEX itself is about steps.
# Used by the trainer tests: one clear error, printed once (not once per rank), before training.
code=$1 regex=$2 count=$3
shift 3
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
got=$(printf '%s\n' "$out" | grep -Ec -- "$regex")
fail=0
if [ "$rc" != "$code" ]; then echo "expect_run: exit code $rc, expected $code"; fail=1; fi
if [ "$got" != "$count" ]; then echo "expect_run: $got lines match '$regex', expected $count"; fail=1; fi
case "$regex" in
  *step*) ;;
  *) if printf '%s\n' "$out" | grep -Eq '^step +[0-9]+/'; then echo "expect_run: training started"; fail=1; fi ;;
esac
exit $fail
