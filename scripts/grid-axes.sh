#!/usr/bin/env bash
# Which axes of a 3-D parallel grid cross nodes, for ranks placed R per node in rank order
# (rank r on node r / R, as scripts/netns-mpirun.sh and OpenMPI's by-slot mapping place them):
#
#   scripts/grid-axes.sh --grid 2x2x2 --ranks-per-node 2
#   TP: inside nodes; DP: crosses nodes; PP: crosses nodes
#
# --grid TPxDPxPP lists the sizes fastest-varying first. The rank order is hcomm::grid's
# (include/hcomm/topology/grid.hpp, the grid constructor and grid::world_rank_of; the trainer's
# plain_comm grid in examples/gpt/plain_comm.hpp uses the same), Megatron-LM's:
#   world rank = tp + TP * (dp + DP * pp)
# An axis is "inside nodes" when each of its groups (the ranks that differ only in that
# coordinate) lies on one node, "crosses nodes" when every group spans several nodes, and
# "crosses nodes (K of G groups)" when only some do. Exit 2 with a message on bad arguments.
set -euo pipefail
die() { echo "grid-axes: $*" >&2; exit 2; }
GRID="" RPN=""
while [ $# -gt 0 ]; do
  case "$1" in
    --grid|--ranks-per-node)
      [ $# -ge 2 ] || die "$1 needs a value"
      if [ "$1" = --grid ]; then GRID=$2; else RPN=$2; fi
      shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (usage: grid-axes.sh --grid TPxDPxPP --ranks-per-node R)" ;;
  esac
done
[ -n "$GRID" ] || die "--grid TPxDPxPP is required"
[ -n "$RPN" ] || die "--ranks-per-node R is required"
[[ $GRID =~ ^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$ ]] ||
  die "--grid '$GRID' is not TPxDPxPP with positive sizes (e.g. 2x2x2)"
TP=${BASH_REMATCH[1]} DP=${BASH_REMATCH[2]} PP=${BASH_REMATCH[3]}
[[ $RPN =~ ^[1-9][0-9]{0,5}$ ]] || die "--ranks-per-node '$RPN' is not a positive integer"
N=$((TP * DP * PP))
[ "$N" -le 65536 ] || die "grid $GRID has $N ranks (at most 65536)"
[ $((N % RPN)) = 0 ] || die "$RPN ranks per node do not divide the grid's $N ranks"

# axis NAME: the verdict for the groups of axis NAME (tp, dp or pp).
axis() {
  local name=$1 size groups=0 crossing=0 crosses a b k t d p first r
  case $name in tp) size=$TP ;; dp) size=$DP ;; pp) size=$PP ;; esac
  # a: the group (the other two coordinates in one number); k: the coordinate inside it.
  for ((a = 0; a < N / size; a++)); do
    groups=$((groups + 1)) first=-1 crosses=0
    for ((k = 0; k < size; k++)); do
      case $name in
        tp) t=$k d=$((a % DP)) p=$((a / DP)) ;;
        dp) t=$((a % TP)) d=$k p=$((a / TP)) ;;
        pp) t=$((a % TP)) d=$((a / TP)) p=$k ;;
      esac
      r=$((t + TP * (d + DP * p)))
      if [ $first -lt 0 ]; then first=$((r / RPN)); elif [ $((r / RPN)) != $first ]; then crosses=1; fi
    done
    crossing=$((crossing + crosses))
  done
  b=${name^^}
  if [ $crossing = 0 ]; then echo "$b: inside nodes"
  elif [ $crossing = $groups ]; then echo "$b: crosses nodes"
  else echo "$b: crosses nodes ($crossing of $groups groups)"; fi
}
echo "$(axis tp); $(axis dp); $(axis pp)"
