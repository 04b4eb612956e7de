#!/usr/bin/env bash
# Runs an MPI program across N network namespaces joined through a bridge namespace, each
# link limited with tc tbf in both directions: a real bandwidth-limited network on one
# machine. Everything it creates (namespaces hcn-*, /etc/netns/hcn-*) is removed on exit.
#
#   scripts/netns-mpirun.sh --ranks 4 --rate 1gbit -- build/tools/hcomm-collective/hcomm-collective --op allreduce
#
# Needs root, iproute2 and OpenMPI. Uses only the private subnet 10.77.0.0/24 inside the
# namespaces it creates. MPIRUN_EXTRA adds options to mpirun's command line.
#
# OpenMPI's waiting ranks yield the core (mpi_yield_when_idle 1) unless YIELD=0: the emulated
# links are kernel work (veth, bridge, tbf in softirq context) on the same few cores as the
# ranks, and ranks that poll without yielding starve it; each namespace is a one-slot host
# to OpenMPI, so it does not know to yield by itself. Without yielding, on a machine with
# fewer cores than ranks, every OpenMPI collective with an exchange waits for a scheduler
# tick before the kernel moves its bytes, and a 2-rank allreduce falls well below the link
# rate (bench/comm/RESULTS.md has the figures).
YIELD=${YIELD:-1}
set -euo pipefail
RANKS=2
RATE=1gbit
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netns-mpirun: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "netns-mpirun: no command given" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "netns-mpirun: needs root (network namespaces)" >&2; exit 2; }

PREFIX=hcn
BR_NS=${PREFIX}-br
WORK=$(mktemp -d)

cleanup() {
  for i in $(seq 0 $((RANKS - 1))); do
    ip netns del "${PREFIX}-$i" 2>/dev/null || true
    rm -rf "/etc/netns/${PREFIX}-$i"
  done
  ip netns del "$BR_NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
cleanup_quiet() { cleanup; trap - EXIT; }
# A previous run killed hard may have left namespaces behind.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${PREFIX}-" || true); do ip netns del "$ns" || true; done

ip netns add "$BR_NS"
ip -n "$BR_NS" link add br0 type bridge
ip -n "$BR_NS" link set br0 up
ip -n "$BR_NS" link set lo up

HOSTS=""
for i in $(seq 0 $((RANKS - 1))); do HOSTS+="10.77.0.$((i + 1)) ${PREFIX}-$i"$'\n'; done

# tbf burst must hold at least one timer tick of traffic at the configured rate.
for i in $(seq 0 $((RANKS - 1))); do
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
  echo "$ns slots=1" >> "$WORK/hostfile"
done

# The launch agent OpenMPI calls as `agent HOST orted-command...`.
cat > "$WORK/agent" <<'AGENT'
#!/bin/sh
ns=$1; shift
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
AGENT
chmod +x "$WORK/agent"

set +e
ip netns exec "${PREFIX}-0" unshare --uts sh -c "hostname ${PREFIX}-0; exec \"\$@\"" sh \
  mpirun --allow-run-as-root -n "$RANKS" --hostfile "$WORK/hostfile" \
    --mca plm_rsh_agent "$WORK/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl self,tcp --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
    -x OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" \
    --mca mpi_yield_when_idle "$YIELD" \
    ${MPIRUN_EXTRA:-} \
    "$@"
rc=$?
set -e
exit $rc
