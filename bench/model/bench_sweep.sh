#!/usr/bin/env bash
# The paper's experiment against link bandwidth: bench/model/bench_schemes.sh on the emulated
# cluster (4 nodes x 2 ranks, 2x2x2, TP inside nodes, DP and PP across) at each inter-node
# RATE, every scheme at every rate, schemes alternating within a rate. Writes, under $OUT,
# one folder of metrics per rate, sweep.md (median ms/step with the 10th-90th percentile
# range of the steps, and tokens/s speed-up over none) and sweep.png (speed-up against
# bandwidth). Needs root and network namespaces (scripts/netns-mpirun.sh).
#
#   bench/model/bench_sweep.sh
#   RATES="20mbit 100mbit" SCHEMES="none zhybrid:16,8" STEPS=20 OUT=out/sweep bench/model/bench_sweep.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RATES=${RATES:-"10mbit 20mbit 50mbit 100mbit 1000mbit"}
export SCHEMES=${SCHEMES:-"none naive:8 mzhybrid:8 zhybrid:16,8 zhybrid:16,4+ef bf16 int8:256+ef"}
export STEPS=${STEPS:-20}
OUT=${OUT:-out/bench-sweep}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
{
  echo "date: $(date -u)"
  echo "host: $(uname -srm), $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "steps $STEPS, schemes: $SCHEMES, rates: $RATES"
} > "$OUT/conditions.txt"
for r in $RATES; do
  echo "== $r (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/conditions.txt"
  NET=$r RANKS_PER_NODE=2 OUT="$OUT/$r" bench/model/bench_schemes.sh > "$OUT/$r.md" 2> "$OUT/$r.log" ||
    { echo "bench_sweep: $r failed (see $OUT/$r.log)" >&2; exit 1; }
done
/usr/bin/python3 - "$OUT" $RATES <<'PY'
import json, os, re, statistics, sys
out, rates = sys.argv[1], sys.argv[2:]
schemes = os.environ["SCHEMES"].split()
def mbit(r):
    m = re.match(r"([0-9.]+)([kmg]?)bit", r)
    return float(m.group(1)) * {"k": 1e-3, "m": 1.0, "g": 1e3, "": 1e-6}[m.group(2)]
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p * (len(xs) - 1))))]
res = {}
for r in rates:
    for s in schemes:
        f = os.path.join(out, r, re.sub(r"[:,+]", "_", s) + ".jsonl")
        rows = [json.loads(l) for l in open(f)] if os.path.exists(f) else []
        ms = [row["ms"] for row in rows[2:]]  # the first two steps warm up
        if ms:
            val = [row["val_loss"] for row in rows if "val_loss" in row]
            res[(r, s)] = (statistics.median(ms), pct(ms, 0.1), pct(ms, 0.9), val[-1] if val else float("nan"))
lines = ["| scheme | " + " | ".join(rates) + " |", "|---|" + "---:|" * len(rates)]
for s in schemes:
    cells = []
    for r in rates:
        if (r, s) not in res:
            cells.append("-")
            continue
        med, lo, hi, _ = res[(r, s)]
        base = res.get((r, "none"))
        sp = f", **{base[0] / med:.2f}x**" if base and s != "none" else ""
        cells.append(f"{med:.0f} ({lo:.0f}-{hi:.0f}){sp}")
    lines.append(f"| {s} | " + " | ".join(cells) + " |")
lines += ["", "Median ms/step (10th-90th percentile of steps 3..), speed-up of tokens/s over none.", "",
          "| scheme | " + " | ".join(f"val loss @{r}" for r in rates) + " |", "|---|" + "---:|" * len(rates)]
for s in schemes:
    lines.append(f"| {s} | " + " | ".join(f"{res[(r, s)][3]:.4f}" if (r, s) in res else "-" for r in rates) + " |")
open(os.path.join(out, "sweep.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, ax = plt.subplots(figsize=(7, 4.5))
for s in schemes:
    if s == "none":
        continue
    xs, ys, lo, hi = [], [], [], []
    for r in rates:
        if (r, s) in res and (r, "none") in res:
            med, l, h, _ = res[(r, s)]
            b = res[(r, "none")][0]
            xs.append(mbit(r)); ys.append(b / med); lo.append(b / med - b / h); hi.append(b / l - b / med)
    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=s)
ax.axhline(1.0, color="gray", lw=0.8)
ax.set_xscale("log")
ax.set_xlabel("inter-node link rate (Mbit/s)")
ax.set_ylabel("tokens/s speed-up over none")
ax.set_title("2x2x2 on 4 emulated nodes x 2 ranks (TP inside nodes)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(out, "sweep.png"), dpi=120)
PY
