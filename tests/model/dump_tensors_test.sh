#!/usr/bin/env bash
# dump_tensors_test.sh MODE WORKDIR MPIEXEC... -- PROGRAM ARGS...: train_gpt --dump-tensors
# (examples/gpt/dump.hpp) and hcomm-collective --data FILE on what it wrote.
#
#   dump        PROGRAM ARGS: train_gpt on the tiny model, 2x2x2 (8 ranks), 4 steps. Step 3
#               dumped into WORKDIR/dump: every rank's files with the sizes the model gives,
#               finite and not all zero, TP-replicated activations equal on both TP ranks, the
#               manifest; the losses the same as without the dump; a second run into the
#               same directory, or one into a path under a file, exits 2 with one line
#               before training and changes nothing there.
#   collective  PROGRAM: hcomm-collective on 2 ranks, on WORKDIR/dump (the dump case's
#               fixture): a DP pair's gradients through allreduce and an activation through
#               p2p report ratio, errors and identical; a file shorter than --bytes and a
#               missing file exit 2 with one line from rank 0.
set -uo pipefail
MODE=$1 WORK=$2
shift 2
MPI=()
while [ "$1" != "--" ]; do MPI+=("$1"); shift; done
shift
die() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
DUMP=$WORK/dump

# one_line WANT_RC REGEX: the last run (rc, out.txt, err.txt) exited WANT_RC with exactly one
# line (train_gpt with --quiet), matching REGEX: it trained or measured nothing. Lines of
# mpirun's own event library ("[warn] Epoll ...", seen now and then on exit) are not counted.
one_line() {
  local want=$1 re=$2 all
  all=$(cat out.txt err.txt | grep -v '^\[warn\] ')
  [ "$rc" = "$want" ] || die "exit $rc, expected $want: $all"
  [ "$(printf '%s\n' "$all" | grep -c .)" = 1 ] || die "not one line: $all"
  printf '%s\n' "$all" | grep -Eq -- "$re" || die "the line does not match '$re': $all"
  echo "  -> $all"
}
snapshot() { (cd "$DUMP" && find . -type f | sort | xargs md5sum && find . -printf '%p %s %T@\n' | sort); }

case "$MODE" in
  dump)
    rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
    "${MPI[@]}" "$@" --dump-tensors "$DUMP" --dump-step 3 --losses-out dumped.txt > out.txt 2> err.txt
    rc=$?
    cat out.txt err.txt
    [ $rc = 0 ] || die "the dumping run exited $rc"
    grep -q "^dumped step 3's communicated tensors to $DUMP (manifest.tsv)$" out.txt || die "no 'dumped step 3' line"
    "${MPI[@]}" "$@" --quiet --losses-out plain.txt > /dev/null 2>&1 || die "the run without the dump failed"
    cmp -s dumped.txt plain.txt || die "the dump changed the losses: $(paste dumped.txt plain.txt)"
    ok "dumped step 3; the losses are those of the run without the dump, bit for bit"
    # tiny: L2 C64 NH4 T32 V256, one layer per stage, one sequence per micro-batch (N = 32).
    # dp-grad: stage 0 wte shard 128x64 + wpe 32x64 + a block (C/2 heads' and 4C/2 hidden
    # units' shards: 25184); stage 1 the block + lnf 128 + the tied wte copy 8192.
    # TP, micro-batch 0 (N x C = 2048 each): forward on stage 0 the embedding and 2 per block,
    # on stage 1 2 per block (the cross-entropy's sums go exactly, uncompressed, and are not
    # dumped); backward 2 per block, + the lm head on stage 1.
    python3 - "$DUMP" <<'EOF' || die "the dumped files"
import array, math, os, sys
d = sys.argv[1]
lines = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "manifest.tsv"))]
head, rows = lines[0], lines[1:]
assert head == "file axis kind rank dp pp tp step micro_batch values dtype group".split(), head
want = {}
for r in range(8):
    tp, dp, pp = r % 2, (r // 2) % 2, r // 4
    tpg = "{},{}".format(r - tp, r - tp + 1)
    want["dp-grad.r%d.f32" % r] = ("dp", "grad", 35424 if pp == 0 else 33504, "{},{}".format(r - 2 * dp, r - 2 * dp + 2), "all")
    if pp == 0:
        want["pp-act-fwd.r%d.mb0.f32" % r] = ("pp", "act-fwd", 2048, "{},{}".format(r, r + 4), "0")
    else:
        want["pp-grad-bwd.r%d.mb0.f32" % r] = ("pp", "grad-bwd", 2048, "{},{}".format(r, r - 4), "0")
    want["tp-partial-fwd.r%d.mb0.f32" % r] = ("tp", "partial-fwd", 3 * 2048 if pp == 0 else 2 * 2048, tpg, "0")
    want["tp-partial-bwd.r%d.mb0.f32" % r] = ("tp", "partial-bwd", 2 * 2048 if pp == 0 else 3 * 2048, tpg, "0")
assert sorted(r[0] for r in rows) == sorted(want), sorted(r[0] for r in rows)
files = set(os.listdir(d)) - {"manifest.tsv"}
assert files == set(want), files ^ set(want)
for f, axis, kind, rank, dp, pp, tp, step, mb, values, dtype, group in rows:
    r = int(rank)
    assert (axis, kind, int(values), group, mb) == want[f], (f, want[f])
    assert (int(dp), int(pp), int(tp), step, dtype) == ((r // 2) % 2, r // 4, r % 2, "3", "f32"), f
    assert os.path.getsize(os.path.join(d, f)) == 4 * int(values), f
    a = array.array("f", open(os.path.join(d, f), "rb").read())
    assert all(math.isfinite(x) for x in a), f + ": not finite"
    assert any(x != 0 for x in a), f + ": all zero"
# after the TP all-reduces the activations are the same on both TP ranks of a stage
for r in (0, 2):
    a, b = (open(os.path.join(d, "pp-act-fwd.r%d.mb0.f32" % q), "rb").read() for q in (r, r + 1))
    assert a == b, "pp-act-fwd of ranks %d and %d differ" % (r, r + 1)
print("  %d files as the model gives them" % len(rows))
EOF
    ok "the files: names, sizes, finite values, the manifest"
    before=$(snapshot)
    "${MPI[@]}" "$@" --quiet --dump-tensors "$DUMP" --dump-step 3 > out.txt 2> err.txt
    rc=$?
    one_line 2 "^train_gpt: --dump-tensors $DUMP: rank 0: .* exists \(an earlier dump\?\); nothing is overwritten"
    [ "$(snapshot)" = "$before" ] || die "the refused run changed $DUMP"
    ok "a second run into the same directory: exit 2, one line, nothing changed"
    : > afile
    "${MPI[@]}" "$@" --quiet --dump-tensors "$WORK/afile/sub" > out.txt 2> err.txt
    rc=$?
    one_line 2 "^train_gpt: --dump-tensors $WORK/afile/sub: rank 0: cannot create the directory"
    ok "a directory under a file: exit 2, one line"
    ;;
  collective)
    [ -f "$DUMP/manifest.tsv" ] || die "no dump in $DUMP (the gpt_dump_tensors fixture)"
    TMP=$(mktemp -d) || exit 1
    trap 'rm -rf "$TMP"' EXIT
    cd "$TMP" || exit 1
    PAIR=$DUMP/dp-grad.r0.f32,$DUMP/dp-grad.r2.f32  # a DP group: the files that sum together
    "${MPI[@]}" "$@" --data "$PAIR" --codec mpc,zfp:8,bf16,none --baseline --threshold 0 --iters 1 --warmup 0 \
      > out.txt 2> err.txt
    rc=$?
    cat out.txt err.txt
    [ $rc = 0 ] || die "allreduce on the dumped gradients exited $rc"
    [ -s err.txt ] && die "wrote to stderr"
    python3 - out.txt "$PAIR" <<'EOF' || die "allreduce JSON"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["codec"] for r in rows] == ["mpc:0", "zfp:8", "bf16", "none", "mpi"], rows
for r in rows:
    assert r["data"] == sys.argv[2] and r["bytes"] == 4 * 35424 and r["ranks"] == 2, r
    assert r["identical"] is True and r["ratio"] > 0, r
    assert r["rel_error"] < {"zfp:8": 0.5, "bf16": 1e-2}.get(r["codec"], 1e-6), r
assert rows[0]["ratio"] > 0.9 and rows[1]["ratio"] > 3, rows  # mpc about 1 on gradients, zfp:8 about 4
print("  " + ", ".join("%s ratio %s rel_error %s" % (r["codec"], r["ratio"], r["rel_error"]) for r in rows))
EOF
    ok "allreduce of a DP pair's dumped gradients: ratio, errors, identical"
    "${MPI[@]}" "$@" --op p2p --data "$DUMP/pp-act-fwd.r0.mb0.f32" --codec mpc --threshold 0 --iters 1 --warmup 0 \
      > out.txt 2> err.txt || die "p2p on the dumped activation: $(cat err.txt)"
    python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read()); sys.exit(not (r["max_error"] == 0 and r["bytes"] == 8192 and r["ratio"] > 0))' \
      out.txt || die "p2p JSON: $(cat out.txt)"
    ok "p2p of a dumped activation with mpc: exact"
    "${MPI[@]}" "$@" --data "$DUMP/dp-grad.r0.f32" --bytes $((4 * 35424 + 4)) > out.txt 2> err.txt
    rc=$?
    one_line 2 "^hcomm-collective: --bytes 141700 is larger than --data $DUMP/dp-grad.r0.f32 \(141696 bytes\)"
    "${MPI[@]}" "$@" --data "$DUMP/no-such.f32" > out.txt 2> err.txt
    rc=$?
    one_line 2 "^hcomm-collective: --data $DUMP/no-such.f32: no such file"
    ok "a file shorter than --bytes, a missing file: exit 2, one line from rank 0"
    ;;
  *) die "usage: dump_tensors_test.sh dump|collective WORKDIR MPIEXEC... -- PROGRAM ARGS..." ;;
esac
