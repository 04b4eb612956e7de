#!/usr/bin/env bash
# Runs an MPI program on an emulated cluster on one machine: N nodes, each a network
# namespace holding R ranks, joined through a bridge namespace by links limited with tc tbf in
# both directions (one link per node: node -> bridge and bridge -> node). A node's ranks reach
# each other over shared memory (OpenMPI's vader BTL, as GPUs of a node over NVLink); ranks of
# different nodes over TCP on the rate-limited links. Everything it creates (namespaces
# hcn-*, /etc/netns/hcn-*) is removed on exit, also on failure and on Ctrl-C.
#
#   scripts/netns-mpirun.sh --ranks 4 --rate 1gbit -- build/tools/hcomm-collective/hcomm-collective --op allreduce
#   scripts/netns-mpirun.sh --nodes 4 --ranks-per-node 2 --rate 1gbit -- \
#     build/examples/gpt/train_gpt --dp 2 --pp 2 --tp 2 ...
#
#   --nodes N            nodes (namespaces hcn-0 .. hcn-N-1; default 2, at most 250)
#   --ranks-per-node R   ranks sharing each node (default 1)
#   --ranks N            N nodes of one rank each (the same as --nodes N --ranks-per-node 1)
#   --rate RATE          every node link's rate each way, in tc's units (default 1gbit)
#   --grid TPxDPxPP      print which axes of this 3-D grid cross nodes (scripts/grid-axes.sh);
#                        without it, taken from the command's --tp/--dp/--pp when it has any
#   --stats              after the run, print each node's bytes over its link and over
#                        loopback (TCP inside a node; near zero when shared memory is used)
#
# Placement: consecutive ranks share a node (OpenMPI's by-slot mapping on a hostfile with R
# slots per node): rank r runs on node r / R, in namespace hcn-(r / R). With train_gpt's
# Megatron rank order (TP fastest, then DP, then PP) the TP groups of --tp R stay inside
# nodes and DP and PP cross them.
#
# Needs root, iproute2, util-linux (unshare, flock) and OpenMPI. Uses only the private subnet
# 10.77.0.0/24 inside the namespaces it creates. Environment: MPIRUN_EXTRA adds options to
# mpirun's command line; BTL (default self,vader,tcp) sets OpenMPI's BTLs; BIND (default
# none) is mpirun's --bind-to: every namespace is a host to OpenMPI, which would otherwise
# bind the first rank of each node to the same core 0; NETNS_PREFIX (default hcn) names the
# namespaces, so that two runs with different prefixes can coexist (a run refuses to start
# while another holds its prefix, and deletes what a run killed hard left behind).
#
# OMP_NUM_THREADS goes to the ranks when it is set; unset, hcomm's automatic thread count
# divides the machine's CPUs among the ranks of all nodes (they share one kernel: see
# hcomm::mpi::machine_id), as on a real node among its own ranks.
#
# OpenMPI's waiting ranks yield the core (mpi_yield_when_idle 1) unless YIELD=0: the emulated
# links are kernel work (veth, bridge, tbf in softirq context) on the same few cores as the
# ranks, and ranks that poll without yielding starve it; the ranks of all nodes share the
# machine's cores, which OpenMPI, counting each node's slots only, does not know. Without
# yielding, on a machine with fewer cores than ranks, every OpenMPI collective with an
# exchange waits for a scheduler tick before the kernel moves its bytes, and a 2-rank
# allreduce falls well below the link rate (bench/comm/RESULTS.md has the figures).
#
# The TCP BTL's progress thread (btl_tcp_progress_thread 1) moves a message's fragments while
# the rank computes, as a cluster's NIC does (RDMA) without the rank calling into MPI; unless
# PROGRESS=0. Without it a non-blocking collective started during backward advances only in
# the rank's MPI_Test calls, which a rank sharing its core with compute makes every few ms, and
# the overlapped DP reduction hides half as much (bench/model/RESULTS.md).
YIELD=${YIELD:-1}
PROGRESS=${PROGRESS:-1}
BTL=${BTL:-self,vader,tcp}
BIND=${BIND:-none}
PREFIX=${NETNS_PREFIX:-hcn}
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
die() { echo "netns-mpirun: $*" >&2; exit 2; }
posint() { [[ $2 =~ ^[1-9][0-9]{0,5}$ ]] || die "$1 '$2' is not a positive integer"; }

NODES="" RPN="" RANKS="" RATE=1gbit GRID="" STATS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes|--ranks-per-node|--ranks|--rate|--grid)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --nodes) posint "$1" "$2"; NODES=$2 ;;
        --ranks-per-node) posint "$1" "$2"; RPN=$2 ;;
        --ranks) posint "$1" "$2"; RANKS=$2 ;;
        --rate) RATE=$2 ;; --grid) GRID=$2 ;;
      esac
      shift 2 ;;
    --stats) STATS=1; shift ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) die "unexpected '$1' (put -- before the command)" ;;
  esac
done
[ $# -gt 0 ] || die "no command given (... -- PROGRAM ARGS)"
if [ -n "$RANKS" ]; then
  [ -z "$NODES$RPN" ] || die "--ranks N means N nodes of one rank: give either it or --nodes/--ranks-per-node"
  NODES=$RANKS RPN=1
fi
NODES=${NODES:-2} RPN=${RPN:-1}
[ "$NODES" -le 250 ] || die "--nodes $NODES: at most 250 (one address each in 10.77.0.0/24)"
[ "$RPN" -le 4096 ] || die "--ranks-per-node $RPN: at most 4096"
[[ $RATE =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT]i?)?(bit|bps)$ ]] ||
  die "--rate '$RATE' is not a tc rate such as 100mbit, 1gbit or 125mbps"
[[ $PREFIX =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "NETNS_PREFIX '$PREFIX' is not 1-6 lower-case letters or digits"
NP=$((NODES * RPN))

# The grid whose axes to report: --grid, else the command's --tp/--dp/--pp (train_gpt's
# options; each defaults to 1 there).
GRID_FROM="--grid"
if [ -z "$GRID" ]; then
  tp=1 dp=1 pp=1 found=0 prev=""
  for a in "$@"; do
    case "$prev" in --tp) tp=$a found=1 ;; --dp) dp=$a found=1 ;; --pp) pp=$a found=1 ;; esac
    case "$a" in --tp=*) tp=${a#*=} found=1 ;; --dp=*) dp=${a#*=} found=1 ;; --pp=*) pp=${a#*=} found=1 ;; esac
    prev=$a
  done
  [ $found = 0 ] || GRID=${tp}x${dp}x${pp} GRID_FROM="the command's --tp/--dp/--pp"
fi
AXES=""
if [ -n "$GRID" ]; then
  if ! [[ $GRID =~ ^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$ ]]; then
    [ "$GRID_FROM" != --grid ] || die "--grid '$GRID' is not TPxDPxPP with positive sizes (e.g. 2x2x2)"
    echo "netns-mpirun: $GRID_FROM are not positive numbers; axes not reported" >&2
  elif [ $((BASH_REMATCH[1] * BASH_REMATCH[2] * BASH_REMATCH[3])) != "$NP" ]; then
    msg="grid $GRID from $GRID_FROM has $((BASH_REMATCH[1] * BASH_REMATCH[2] * BASH_REMATCH[3])) ranks, not the $NP of --nodes x --ranks-per-node"
    [ "$GRID_FROM" != --grid ] || die "$msg"
    echo "netns-mpirun: $msg; axes not reported" >&2
  else
    AXES=$("$HERE/grid-axes.sh" --grid "$GRID" --ranks-per-node "$RPN")
  fi
fi
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"

BR_NS=${PREFIX}-br
LOCK=/tmp/netns-mpirun.${PREFIX}.lock
exec 9>"$LOCK"
flock -n 9 || die "another netns-mpirun run uses the namespaces ${PREFIX}-* (NETNS_PREFIX sets another prefix)"
WORK=""
RUN_PID=""

# Deletes the prefix's namespaces; with "kill", first ends the processes still in them (this
# run's ranks, stopped hard), SIGTERM then SIGKILL, by their ids.
remove_namespaces() {
  local ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-([0-9]+|br)\$" || true); do
    pids=""
    [ "${1:-}" != kill ] || pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      kill -TERM $pids 2>/dev/null || true
      sleep 1
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf /etc/netns/"${PREFIX}"-[0-9]*
}
cleanup() { remove_namespaces kill; [ -z "$WORK" ] || rm -rf "$WORK"; }
# On a signal: mpirun, which a Ctrl-C reaches too, gets a few seconds to end the job, then
# SIGTERM, then SIGKILL; the EXIT trap then removes the namespaces.
on_signal() {
  trap '' INT TERM HUP
  echo "netns-mpirun: interrupted, cleaning up" >&2
  if [ -n "$RUN_PID" ]; then
    local i
    for i in $(seq 1 20); do
      kill -0 "$RUN_PID" 2>/dev/null || break
      [ "$i" != 6 ] || kill -TERM "$RUN_PID" 2>/dev/null || true
      sleep 0.5
    done
    kill -KILL "$RUN_PID" 2>/dev/null || true
  fi
  exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP
# A previous run killed hard may have left namespaces behind (we hold the prefix's lock);
# they are deleted (what still runs in them keeps running, without a network).
remove_namespaces
WORK=$(mktemp -d)

ip netns add "$BR_NS"
ip -n "$BR_NS" link add br0 type bridge
ip -n "$BR_NS" link set br0 up
ip -n "$BR_NS" link set lo up

HOSTS=""
for i in $(seq 0 $((NODES - 1))); do HOSTS+="10.77.0.$((i + 1)) ${PREFIX}-$i"$'\n'; done

# tbf burst must hold at least one timer tick of traffic at the configured rate.
for i in $(seq 0 $((NODES - 1))); do
  ns=${PREFIX}-$i
  ip netns add "$ns"
  ip link add "v${i}a" netns "$ns" type veth peer name "v${i}b" netns "$BR_NS"
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev "v${i}a"
  ip -n "$ns" link set "v${i}a" up
  ip -n "$ns" link set lo up
  ip -n "$BR_NS" link set "v${i}b" master br0
  ip -n "$BR_NS" link set "v${i}b" up
  ip netns exec "$ns" tc qdisc add dev "v${i}a" root tbf rate "$RATE" burst 256kb latency 50ms
  ip netns exec "$BR_NS" tc qdisc add dev "v${i}b" root tbf rate "$RATE" burst 256kb latency 50ms
  mkdir -p "/etc/netns/$ns"
  { echo "127.0.0.1 localhost"; printf '%s' "$HOSTS"; } > "/etc/netns/$ns/hosts"
  echo "$ns" > "/etc/netns/$ns/hostname"
  echo "$ns slots=$RPN" >> "$WORK/hostfile"
done

# The launch agent OpenMPI calls as `agent HOST orted-command...`.
cat > "$WORK/agent" <<'AGENT'
#!/bin/sh
ns=$1; shift
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
AGENT
chmod +x "$WORK/agent"

place="rank r on node r / $RPN"
[ "$RPN" != 1 ] || place="rank r on node r"
nodes="$NODES nodes" ranks="$RPN ranks"
[ "$NODES" != 1 ] || nodes="1 node"
[ "$RPN" != 1 ] || ranks="1 rank"
echo "netns-mpirun: $nodes x $ranks ($place, namespaces ${PREFIX}-0..$((NODES - 1))), $RATE links each way" >&2
[ -z "$AXES" ] || echo "netns-mpirun: grid $GRID (TPxDPxPP): $AXES" >&2

# In the background so that the signal traps run while it does (wait returns at once);
# without the lock's descriptor, which only this script holds.
set +e
ip netns exec "${PREFIX}-0" unshare --uts sh -c "hostname ${PREFIX}-0; exec \"\$@\"" sh \
  mpirun --allow-run-as-root -n "$NP" --hostfile "$WORK/hostfile" --map-by slot --bind-to "$BIND" \
    --mca plm_rsh_agent "$WORK/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl "$BTL" --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
    ${OMP_NUM_THREADS:+-x OMP_NUM_THREADS="$OMP_NUM_THREADS"} \
    --mca mpi_yield_when_idle "$YIELD" --mca btl_tcp_progress_thread "$PROGRESS" \
    ${MPIRUN_EXTRA:-} \
    "$@" <&0 9>&- &
RUN_PID=$!
wait "$RUN_PID"
rc=$?
RUN_PID=""
set -e

if [ "$STATS" = 1 ]; then
  for i in $(seq 0 $((NODES - 1))); do
    ns=${PREFIX}-$i
    # (ip netns exec mounts the namespace's own /sys.)
    mapfile -t b < <(ip netns exec "$ns" cat /sys/class/net/v${i}a/statistics/tx_bytes \
                     /sys/class/net/v${i}a/statistics/rx_bytes /sys/class/net/lo/statistics/tx_bytes)
    echo "netns-mpirun: stats $ns ranks $((i * RPN))-$((i * RPN + RPN - 1)): link sent ${b[0]} received ${b[1]} bytes, loopback ${b[2]} bytes" >&2
  done
fi
exit $rc
