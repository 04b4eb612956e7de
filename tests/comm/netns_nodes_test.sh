#!/usr/bin/env bash
# The emulated cluster of scripts/netns-mpirun.sh, run by ctest (tests/comm/CMakeLists.txt,
# label netns):
#   - scripts/grid-axes.sh on the 2x2x2 grid: 2 ranks per node keep TP inside nodes, DP and
#     PP cross them; 4 per node keep DP inside too; bad arguments exit 2 with a message;
#   - netns-mpirun.sh's bad arguments exit 2 with one "netns-mpirun: " line;
#   then, as root with working `ip netns` (else exit 77, ctest's skip):
#   - placement: with --nodes 2 --ranks-per-node 2, ranks 0 and 1 share namespace <p>-0 and
#     ranks 2 and 3 share <p>-1 (same network namespace inode within a node, different
#     across); --ranks 2 still puts its 2 ranks in 2 namespaces;
#   - a 4 MiB allreduce of hcomm-collective on 2 nodes x 2 ranks succeeds, its bytes cross
#     the node links and, inside a node, not loopback TCP (OpenMPI's shared memory, vader):
#     the --stats counters, against BTL=self,tcp as the control whose intra-node traffic
#     goes over loopback; one node of 2 ranks runs on BTL=self,vader alone;
#   - the run prints the grid's axes (from --grid and from the command's --tp/--dp/--pp);
#   - without OMP_NUM_THREADS, hcomm's thread count counts the ranks of every node (one
#     machine, one kernel), not only a node's own;
#   - --compress-inside-node off (hcomm-collective): raw inside one node, compressed across;
#   - a failing rank's exit status comes back, and after it and after a SIGTERM mid-run
#     no namespace or /etc/netns entry of the prefix is left; a second run with the same
#     NETNS_PREFIX while one runs is refused (exit 2) and leaves the first one alone.
#
#   netns_nodes_test.sh SCRIPTS_DIR HCOMM_COLLECTIVE
set -uo pipefail
SCRIPTS=$1; TOOL=$2
RUN=$SCRIPTS/netns-mpirun.sh AXES=$SCRIPTS/grid-axes.sh
export NETNS_PREFIX=hcnt  # not the default hcn, so that a bench run at the same time is left alone
WORK=$(mktemp -d) || exit 1
trap 'rm -rf "$WORK"' EXIT
die() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# --- the axis printer -------------------------------------------------------------------
expect_axes() {  # GRID RPN EXPECTED
  local got
  got=$("$AXES" --grid "$1" --ranks-per-node "$2") || die "grid-axes $1 R=$2 failed"
  [ "$got" = "$3" ] || die "grid-axes $1 R=$2: '$got', expected '$3'"
  ok "grid $1, $2 ranks per node: $got"
}
expect_axes 2x2x2 2 "TP: inside nodes; DP: crosses nodes; PP: crosses nodes"
expect_axes 2x2x2 4 "TP: inside nodes; DP: inside nodes; PP: crosses nodes"
expect_axes 2x2x2 1 "TP: crosses nodes; DP: crosses nodes; PP: crosses nodes"
expect_axes 2x3x1 3 "TP: crosses nodes (1 of 3 groups); DP: crosses nodes; PP: inside nodes"

# expect_usage PROGRAM ARGS...: exit 2, nothing on stdout, one line on stderr naming PROGRAM.
expect_usage() {
  local prog=$1; shift
  "$prog" "$@" > "$WORK/out" 2> "$WORK/err"
  local rc=$? name
  name=$(basename "$prog" .sh)
  [ $rc = 2 ] || die "$name $*: exit $rc, expected 2: $(cat "$WORK/err")"
  [ ! -s "$WORK/out" ] || die "$name $*: wrote to stdout: $(cat "$WORK/out")"
  [ "$(wc -l < "$WORK/err")" = 1 ] || die "$name $*: stderr is not one line: $(cat "$WORK/err")"
  grep -q "^$name: " "$WORK/err" || die "$name $*: no '$name: ' message: $(cat "$WORK/err")"
}
for a in "--grid 2x2x2" "--ranks-per-node 2" "--grid 2x2 --ranks-per-node 2" "--grid 0x2x2 --ranks-per-node 2" \
         "--grid 2x2x2 --ranks-per-node 0" "--grid 2x2x2 --ranks-per-node x" "--grid 2x2x2 --ranks-per-node 3" \
         "--grid" "--bogus"; do
  expect_usage "$AXES" $a
done
ok "grid-axes: bad arguments exit 2 with a message"
for a in "--nodes 0 -- true" "--nodes x -- true" "--nodes -1 -- true" "--ranks-per-node 0 -- true" \
         "--ranks-per-node 2.5 -- true" "--ranks 0 -- true" "--ranks two -- true" "--nodes 251 -- true" \
         "--ranks 2 --nodes 2 -- true" "--ranks 2 --ranks-per-node 2 -- true" "--rate fast -- true" \
         "--nodes 2" "--nodes 2 --" "--nodes" "--bogus -- true" "true" \
         "--grid 2x2 --nodes 4 -- true" "--grid 2x2x2 --nodes 2 --ranks-per-node 2 -- true"; do
  expect_usage "$RUN" $a
done
expect_usage "$RUN" --nodes "" -- true
ok "netns-mpirun: bad arguments exit 2 with a message"

# --- the emulated cluster (root, ip netns) ------------------------------------------------
[ "$(id -u)" = 0 ] || { echo "SKIP: not root (network namespaces need root)"; exit 77; }
command -v mpirun > /dev/null || { echo "SKIP: no mpirun"; exit 77; }
probe=${NETNS_PREFIX}probe$$
if ! ip netns add "$probe" 2> "$WORK/err"; then
  echo "SKIP: ip netns does not work here: $(head -1 "$WORK/err")"; exit 77
fi
ip netns del "$probe"

left_behind() {
  local ns
  ns=$(ip netns list | awk '{print $1}' | grep "^${NETNS_PREFIX}-" || true)
  [ -z "$ns" ] || die "$1: namespaces left behind: $ns"
  ! ls -d /etc/netns/"${NETNS_PREFIX}"-* > /dev/null 2>&1 || die "$1: /etc/netns/${NETNS_PREFIX}-* left behind"
}

# placement RUN-ARGS...: lines "rank R NS INODE" of every rank, sorted by rank.
placement() {
  timeout 40 "$RUN" "$@" -- sh -c 'echo "rank $OMPI_COMM_WORLD_RANK $(ip netns identify) $(readlink /proc/self/ns/net)"' \
    2> "$WORK/err" | grep '^rank ' | sort -n -k2 > "$WORK/place" || die "placement $*: failed: $(cat "$WORK/err")"
}
placement --nodes 2 --ranks-per-node 2
cat "$WORK/place"
[ "$(wc -l < "$WORK/place")" = 4 ] || die "placement: not 4 ranks"
declare -A ino
while read -r _ r ns i; do
  [ "$ns" = "${NETNS_PREFIX}-$((r / 2))" ] || die "placement: rank $r in namespace '$ns', expected ${NETNS_PREFIX}-$((r / 2))"
  ino[$r]=$i
done < "$WORK/place"
{ [ "${ino[0]}" = "${ino[1]}" ] && [ "${ino[2]}" = "${ino[3]}" ] && [ "${ino[0]}" != "${ino[2]}" ]; } ||
  die "placement: network namespaces ${ino[*]}"
ok "2 nodes x 2 ranks: ranks 0,1 share ${NETNS_PREFIX}-0 and 2,3 share ${NETNS_PREFIX}-1"
placement --ranks 2
[ "$(awk '{print $3}' "$WORK/place" | tr '\n' ' ')" = "${NETNS_PREFIX}-0 ${NETNS_PREFIX}-1 " ] ||
  die "--ranks 2: $(cat "$WORK/place")"
ok "--ranks 2: one rank per namespace"
left_behind "placement"

# collective BTL NODES RPN: a 4 MiB allreduce with --stats; sets LINK_MIN (smallest bytes a
# node sent over its link) and LO_MAX (largest loopback bytes of a node).
collective() {
  BTL=$1 timeout 40 "$RUN" --nodes "$2" --ranks-per-node "$3" --stats -- \
    "$TOOL" --op allreduce --codec none --bytes 4M --iters 1 --warmup 0 --rounds 1 \
    > "$WORK/out" 2> "$WORK/err" || die "allreduce on $2 x $3, BTL=$1 failed: $(tail -5 "$WORK/err")"
  grep -q '^{"op":"allreduce"' "$WORK/out" || die "allreduce on $2 x $3, BTL=$1: no measurement: $(cat "$WORK/out")"
  grep 'stats' "$WORK/err"
  [ "$(grep -c ': stats ' "$WORK/err")" = "$2" ] || die "allreduce on $2 x $3: not $2 stats lines"
  LINK_MIN=$(sed -n 's/.*link sent \([0-9]*\) .*/\1/p' "$WORK/err" | sort -n | head -1)
  LO_MAX=$(sed -n 's/.*loopback \([0-9]*\) bytes.*/\1/p' "$WORK/err" | sort -n | tail -1)
}
MIB=1048576
collective self,vader,tcp 2 2
[ "$LINK_MIN" -gt "$MIB" ] || die "2 x 2: a node sent only $LINK_MIN bytes over its link"
[ "$LO_MAX" -lt "$MIB" ] || die "2 x 2: $LO_MAX bytes over loopback: the ranks of a node used TCP, not shared memory"
ok "2 nodes x 2 ranks allreduce: >= $LINK_MIN bytes per node over the links, <= $LO_MAX over loopback (shared memory)"
collective self,tcp 2 2
[ "$LO_MAX" -gt $((4 * MIB)) ] || die "control BTL=self,tcp: only $LO_MAX bytes over loopback; the check would not see TCP"
ok "control, BTL=self,tcp: $LO_MAX bytes over loopback"
collective self,vader 1 2
ok "1 node x 2 ranks on BTL=self,vader alone"
left_behind "allreduce"

# --compress-inside-node off: hcomm finds the nodes as MPI does (MPI_COMM_TYPE_SHARED, each
# namespace a node): a communicator across 2 nodes still compresses (ratio near 2 at zfp:16),
# one whose 2 ranks share a node sends raw (ratio 1); on, both compress.
inside_node() {  # NODES RPN ON|OFF: sets RATIO and ONE_NODE of a 64 KiB zfp:16 allreduce
  timeout 40 "$RUN" --nodes "$1" --ranks-per-node "$2" -- "$TOOL" --op allreduce --codec zfp:16 --bytes 64K \
    --threshold 0 --iters 1 --warmup 0 --rounds 1 --compress-inside-node "$3" > "$WORK/out" 2> "$WORK/err" ||
    die "inside-node $* failed: $(tail -5 "$WORK/err")"
  RATIO=$(grep -o '"ratio":[0-9.]*' "$WORK/out" | head -1 | cut -d: -f2)
  ONE_NODE=$(grep -o '"one_node":[a-z]*' "$WORK/out" | head -1 | cut -d: -f2)
  [ -n "$RATIO" ] && [ -n "$ONE_NODE" ] || die "inside-node $*: no ratio or one_node: $(cat "$WORK/out")"
}
inside_node 2 1 off
[ "$ONE_NODE" = false ] && awk -v r="$RATIO" 'BEGIN { exit !(r > 1.9) }' ||
  die "2 nodes x 1 rank, --compress-inside-node off: one_node $ONE_NODE, ratio $RATIO (expected false, ~2)"
inside_node 1 2 off
[ "$ONE_NODE" = true ] && [ "$RATIO" = 1.0 ] ||
  die "1 node x 2 ranks, --compress-inside-node off: one_node $ONE_NODE, ratio $RATIO (expected true, 1.0)"
inside_node 1 2 on
awk -v r="$RATIO" 'BEGIN { exit !(r > 1.9) }' || die "1 node x 2 ranks, --compress-inside-node on: ratio $RATIO"
ok "--compress-inside-node off: compressed across 2 nodes, raw inside 1 node (which compresses with it on)"
left_behind "inside-node"

# The axes, from --grid and from the command line.
timeout 40 "$RUN" --nodes 4 --ranks-per-node 2 --grid 2x2x2 -- true 2> "$WORK/err" || die "--grid run failed: $(cat "$WORK/err")"
grep -qx "netns-mpirun: grid 2x2x2 (TPxDPxPP): TP: inside nodes; DP: crosses nodes; PP: crosses nodes" "$WORK/err" ||
  die "--grid 2x2x2 on 4 x 2: $(cat "$WORK/err")"
timeout 40 "$RUN" --nodes 2 --ranks-per-node 4 -- true --dp 2 --pp=2 --tp 2 2> "$WORK/err" || die "grid from the command failed: $(cat "$WORK/err")"
grep -qx "netns-mpirun: grid 2x2x2 (TPxDPxPP): TP: inside nodes; DP: inside nodes; PP: crosses nodes" "$WORK/err" ||
  die "the command's --dp 2 --pp=2 --tp 2 on 2 x 4: $(cat "$WORK/err")"
ok "the runs print the grid's axes"

# Threads per rank without OMP_NUM_THREADS: the ranks of all nodes share this machine's CPUs
# (one kernel), so hcomm's automatic count divides them among all 4, not a node's 2.
env -u OMP_NUM_THREADS timeout 40 "$RUN" --nodes 2 --ranks-per-node 2 -- \
  "$TOOL" --op allreduce --codec none --bytes 64K --iters 1 --warmup 0 --rounds 1 > "$WORK/out" 2> "$WORK/err" ||
  die "threads run failed: $(tail -5 "$WORK/err")"
grep -q '"threads_source":"affinity [0-9]* CPUs\? / 4 overlapping local ranks' "$WORK/out" ||
  die "2 nodes x 2 ranks: the thread count did not count the 4 ranks of the machine: $(grep -o '"threads_source":"[^"]*"' "$WORK/out")"
ok "2 nodes x 2 ranks: $(grep -o '"threads_source":"[^"]*"' "$WORK/out" | head -1)"

# Failure and interruption clean up.
timeout 40 "$RUN" --nodes 2 --ranks-per-node 2 -- sh -c '[ "$OMPI_COMM_WORLD_RANK" != 3 ] || exit 5' > /dev/null 2>&1
rc=$?
[ $rc = 5 ] || die "rank 3 exiting 5: exit $rc, expected 5"
left_behind "a failing command"
# (A second run with the same prefix meanwhile is refused, leaving the first one alone.)
timeout -s TERM 6 "$RUN" --nodes 2 --ranks-per-node 2 -- sleep 60 > /dev/null 2> "$WORK/err" &
first=$!
for _ in $(seq 1 50); do ip netns list | grep -q "^${NETNS_PREFIX}-1" && break; sleep 0.1; done
"$RUN" --ranks 2 -- true > /dev/null 2> "$WORK/err2"
rc=$?
[ $rc = 2 ] && grep -q "^netns-mpirun: another netns-mpirun run uses" "$WORK/err2" ||
  die "a second run with the same prefix: exit $rc: $(cat "$WORK/err2")"
ip netns list | grep -q "^${NETNS_PREFIX}-1" || die "the refused second run deleted the first run's namespaces"
wait $first
rc=$?
[ $rc = 124 ] || die "SIGTERM mid-run: exit $rc, expected timeout's 124: $(cat "$WORK/err")"
grep -q "interrupted, cleaning up" "$WORK/err" || die "SIGTERM mid-run: no cleanup message: $(cat "$WORK/err")"
left_behind "SIGTERM mid-run"
ok "a rank exiting 5 (exit status 5) and SIGTERM mid-run leave nothing behind; a concurrent run is refused"
echo "PASS"
