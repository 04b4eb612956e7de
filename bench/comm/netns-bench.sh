#!/usr/bin/env bash
# Collectives on a real bandwidth-limited network: for each rank count and link rate, runs
# hcomm-collective across network namespaces joined through a bridge namespace with tc tbf on
# every link (scripts/netns-mpirun.sh creates them and deletes everything on exit), comparing
# MPI's own collectives (--baseline) with hcomm's allreduce under none, mpc and zfp rates,
# plus point-to-point. Appends one JSON object per measurement (with "link" and "date" added)
# to OUT, then prints a table (summarize.py).
#
#   sudo bench/comm/netns-bench.sh                          # defaults below
#   RANKS="2 4" RATES="1gbit 10gbit" SIZES=1M,16M,64M,256M CODECS=none,mpc,zfp:4,zfp:8,zfp:16 \
#     sudo -E bench/comm/netns-bench.sh
#   NODES="2 4" RANKS_PER_NODE=2 sudo -E bench/comm/netns-bench.sh   # 4 and 8 ranks, 2 per node
#
# RANKS lists the runs' rank counts, one rank per node (namespace). NODES lists node counts
# instead (default: RANKS) and RANKS_PER_NODE (default 1) ranks share each node, over shared
# memory (scripts/netns-mpirun.sh --nodes --ranks-per-node; rank r on node r / R). Each JSON
# line records "nodes" and "ranks_per_node"; summarize.py groups by (link, ranks, op, bytes),
# so give runs with different RANKS_PER_NODE different OUT files.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN=${BIN:-$ROOT/build-comm/tools/hcomm-collective/hcomm-collective}
RANKS=${RANKS:-"2 4"}
NODES=${NODES:-$RANKS}
RANKS_PER_NODE=${RANKS_PER_NODE:-1}
RATES=${RATES:-"1gbit 10gbit"}
SIZES=${SIZES:-1M,16M,64M}
CODECS=${CODECS:-none,mpc,zfp:4,zfp:8,zfp:16}
OPS=${OPS:-allreduce,p2p}
ITERS=${ITERS:-2}
DATA=${DATA:-smooth}
EXTRA=${EXTRA:-}  # more hcomm-collective flags, e.g. EXTRA="--idle-sleep-us 100"
# Open MPI's allreduce algorithm for every MPI_Allreduce of the run (MPI's baseline and hcomm's
# uncompressed path): empty = Open MPI's own choice (default); 4 = ring, 6 = Rabenseifner, ...
# (ompi_info --param coll tuned --level 9). Its default choice need not be its fastest
# algorithm on a given network (on the emulated links it is not, for 4 ranks), so a fair
# comparison runs both the default and the ring (bench/comm/RESULTS.md).
MPI_ALLREDUCE_ALG=${MPI_ALLREDUCE_ALG:-}
# OpenMPI's waiting ranks yield the core (scripts/netns-mpirun.sh; YIELD=0: they poll, which
# starves the emulated links' kernel work when the ranks share few cores). Each JSON line
# records mpi_yield_when_idle.
export YIELD=${YIELD:-1}
if [ -n "$MPI_ALLREDUCE_ALG" ]; then
  export OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=$MPI_ALLREDUCE_ALG
fi
OUT=${OUT:-$HERE/results-$(date -u +%Y%m%d).jsonl}
[ -x "$BIN" ] || { echo "netns-bench: build hcomm-collective first ($BIN)" >&2; exit 2; }
stamp=$(date -u +%Y-%m-%dT%H:%MZ)
for n in $NODES; do
  for rate in $RATES; do
    echo "== $n nodes x $RANKS_PER_NODE ranks, $rate links" >&2
    "$ROOT/scripts/netns-mpirun.sh" --nodes "$n" --ranks-per-node "$RANKS_PER_NODE" --rate "$rate" -- \
      "$BIN" --op "$OPS" --codec "$CODECS" --baseline --bytes "$SIZES" --iters "$ITERS" --data "$DATA" $EXTRA |
      grep '^{' | sed "s/}\$/,\"link\":\"$rate\",\"nodes\":$n,\"ranks_per_node\":$RANKS_PER_NODE,\"date\":\"$stamp\",\"mpi_allreduce_alg\":\"${MPI_ALLREDUCE_ALG:-default}\",\"mpi_yield_when_idle\":$YIELD}/" | tee -a "$OUT"
  done
done
python3 "$HERE/summarize.py" "$OUT"
