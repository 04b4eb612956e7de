#!/usr/bin/env bash
# The paper's experiment at our scale: the same model, data and steps trained on 8 ranks
# (2x2x2) with each communication scheme; step time, final validation loss and bytes per
# axis side by side (markdown table on stdout, metrics + plot under $OUT).
#
#   bench/model/bench_schemes.sh                      # shared memory
#   NET=1gbit bench/model/bench_schemes.sh            # rate-limited network namespaces (root)
#   NET=1gbit RANKS_PER_NODE=2 bench/model/bench_schemes.sh   # 4 nodes x 2 ranks
#   SCHEMES="none zhybrid:16,8" STEPS=40 MODEL=small bench/model/bench_schemes.sh
#
# With NET, every rank is a node of its own (namespace) unless RANKS_PER_NODE (default 1)
# ranks share each node over shared memory, NODES (default 8 / RANKS_PER_NODE) of them; rank
# r is on node r / RANKS_PER_NODE, and with the trainer's rank order (TP fastest, then DP,
# then PP) RANKS_PER_NODE=2 keeps the TP pairs inside nodes while DP and PP cross them, the
# paper's layout; 4 would put both DP replicas on one node. scripts/netns-mpirun.sh prints
# which axes cross nodes. Give each layout its own OUT (the metrics files are per scheme).
#
# --compress-min-bytes 0: the tiny/small models' messages are far below hcomm's 1 MiB
# default threshold, and the point is to see what compression does to them.
set -euo pipefail
cd "$(dirname "$0")/../.."
EXE=${TRAIN_GPT:-build/examples/gpt/train_gpt}
SCHEMES=${SCHEMES:-"none naive:8 mzhybrid:8 zhybrid:16,8 zhybrid:16,6+ef"}
STEPS=${STEPS:-30}
MODEL=${MODEL:-tiny}
EXTRA=${EXTRA:-"--layers 4 --heads 8"}
NET=${NET:-}
RANKS_PER_NODE=${RANKS_PER_NODE:-1}
[[ $RANKS_PER_NODE =~ ^[1-9][0-9]*$ ]] || { echo "bench_schemes: RANKS_PER_NODE '$RANKS_PER_NODE' is not a positive integer" >&2; exit 2; }
NODES=${NODES:-$((8 / RANKS_PER_NODE))}
OUT=${OUT:-out/bench-schemes}  # under /out/, which git ignores
[ -z "$NET" ] || [ $((NODES * RANKS_PER_NODE)) = 8 ] ||
  { echo "bench_schemes: NODES=$NODES x RANKS_PER_NODE=$RANKS_PER_NODE is not the 8 ranks of the 2x2x2 grid" >&2; exit 2; }
EXE=$(readlink -f "$EXE")
[ -x "$EXE" ] || { echo "bench_schemes: no $EXE (build the train_gpt target or set TRAIN_GPT)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

files=()
for s in $SCHEMES; do
  name=${s//[:,+]/_}
  args=(--model "$MODEL" $EXTRA --dp 2 --pp 2 --tp 2 --steps "$STEPS" --eval-every "$STEPS" --scheme "$s"
        --compress-min-bytes 0 --data "$PWD/data/kjv.txt" --metrics "$OUT/$name.jsonl" --quiet --sample 0)
  rm -f "$OUT/$name.jsonl"
  if [ -n "$NET" ]; then
    scripts/netns-mpirun.sh --nodes "$NODES" --ranks-per-node "$RANKS_PER_NODE" --rate "$NET" -- "$EXE" "${args[@]}" >&2 || echo "bench_schemes: $s failed" >&2
  else
    mpiexec --oversubscribe -n 8 -x OMP_NUM_THREADS "$EXE" "${args[@]}" >&2 || echo "bench_schemes: $s failed" >&2
  fi
  files+=("$OUT/$name.jsonl")
done

/usr/bin/python3 - "${files[@]}" <<'EOF'
import json, os, statistics, sys
print(f"# {os.uname().nodename}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}")
print("| scheme | median ms/step | final train loss | final val loss | dp MB raw->sent | pp MB raw->sent | tp MB raw->sent |")
print("|---|---|---|---|---|---|---|")
for f in sys.argv[1:]:
    rows = [json.loads(l) for l in open(f)]
    ms = statistics.median(r["ms"] for r in rows[2:]) if len(rows) > 3 else rows[-1]["ms"]
    val = [r["val_loss"] for r in rows if "val_loss" in r]
    tot = {a: [sum(r["comm"][a]["raw"] for r in rows) / 1e6, sum(r["comm"][a]["sent"] for r in rows) / 1e6]
           for a in ("dp", "pp", "tp")}
    name = os.path.splitext(os.path.basename(f))[0]
    print(f"| {name} | {ms:.1f} | {rows[-1]['loss']:.4f} | {val[-1] if val else float('nan'):.4f} | "
          + " | ".join(f"{tot[a][0]:.1f}->{tot[a][1]:.1f}" for a in ("dp", "pp", "tp")) + " |")
EOF
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 scripts/plot_metrics.py "${files[@]}" -o "$OUT/schemes.png" >&2
fi
