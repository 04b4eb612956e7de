#!/usr/bin/env bash
# scripts/bench-codecs.sh: runs bench/codec/bench_codecs (Google Benchmark, JSON) and turns the
# JSON into a markdown table (python3).
#
#   scripts/bench-codecs.sh [--large] [--build DIR] [--out DIR] [--min-time S] [-- BENCH_ARGS...]
#
#   --large       add 256 MiB arrays (about 1.5 GiB resident and a few more minutes)
#   --build DIR   CMake build folder (default build; the target is built there when missing)
#   --out DIR     where codecs.json, console.txt and codecs.md go (default DIR/bench-codecs)
#   --min-time S  Google Benchmark minimum time per benchmark in seconds (default 0.05)
#   --table JSON  only turn an existing codecs.json into markdown (stdout)
#   BENCH_ARGS    passed on, e.g. --hcomm_codecs=mpc,zfp:8 --hcomm_threads=1 --hcomm_dtype=f64
#
# The default run (1, 16 and 64 MiB; none, mpc, zfp:4/8/16; libzfp 4/8/16; smooth and noise;
# 1 and 2 threads) takes about 2-4 minutes on a quiet 2-core machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=""
MIN_TIME=0.05
SIZES=1,16,64
TABLE_ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --large) SIZES=1,16,64,256 ;;
    --build) BUILD=$2; shift ;;
    --out) OUT=$2; shift ;;
    --min-time) MIN_TIME=$2; shift ;;
    --table) TABLE_ONLY=$2; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "bench-codecs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-$BUILD/bench-codecs}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

to_markdown() {
  "$PY" - "$1" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
ctx = doc.get("context", {})
rows = {}
order = []
for b in doc["benchmarks"]:
    if b.get("run_type") == "aggregate" or b.get("error_occurred"):
        continue
    f = dict(p.split("=", 1) for p in b["name"].split("/") if "=" in p)
    key = (f["codec"], f["data"], int(f["mib"]), int(f["threads"]))
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key][f["op"]] = b

def impl_rank(codec):
    return 0 if codec == "memcpy" else 1 if codec.startswith("hcomm:") else 2

def gbps(b):
    return "%.3f" % (b["bytes_per_second"] / 1e9) if b else "-"

scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def cpu_gbps(b, mib, threads):
    # raw bytes per second of the benchmark thread's CPU time: only meaningful single-threaded
    if not b or threads != 1: return "-"
    return "%.3f" % (mib * 2**20 / (b["cpu_time"] * scale[b.get("time_unit", "ns")]) / 1e9)

cache = ", ".join("L%d %s %dKiB" % (c["level"], c["type"][0], c["size"] // 1024) for c in ctx.get("caches", []))
print("Machine: %s, %s CPUs @ %s MHz (%s); load average at start %s; libbenchmark build %s." % (
    ctx.get("host_name", "?"), ctx.get("num_cpus", "?"), ctx.get("mhz_per_cpu", "?"), cache,
    ", ".join("%.2f" % x for x in ctx.get("load_avg", [])), ctx.get("library_build_type", "?")))
print("Date: %s. Element type %s, hcomm payload checksum %s, hcomm codecs run: %s; libzfp %s." % (
    ctx.get("date", "?"), ctx.get("hcomm_dtype", "?"), ctx.get("hcomm_checksum", "?"),
    ctx.get("hcomm_codecs", "?"), ctx.get("libzfp", "not built")))
print()
print("GB/s = 1e9 bytes of raw (uncompressed) input per second of wall time, mean over the")
print("iterations of one Google Benchmark run. ratio = raw bytes / compressed bytes")
print("(hcomm: whole frame, 64-byte header included). nrmse = RMS error / value range of the input.")
print("The (CPU) columns divide by the benchmark thread's CPU time instead of wall time (threads = 1")
print("only): on a loaded machine they estimate what one quiet core does, cache contention aside.")
print()
print("| data | MiB | codec | threads | compress GB/s | decompress GB/s | compress (CPU) | decompress (CPU) | ratio | nrmse |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
keys = sorted(order, key=lambda k: (k[1] != "any", k[1], k[2], impl_rank(k[0]), order.index(k)))
for k in keys:
    r = rows[k]
    c, d = r.get("compress") or r.get("copy"), r.get("decompress")
    any_b = c or d
    ratio = "%.3f" % any_b["ratio"] if "ratio" in any_b else "-"
    err = d["nrmse"] if d and "nrmse" in d else (any_b.get("nrmse") if k[0] == "memcpy" else None)
    err = "-" if err is None else ("0" if err == 0 else "%.2e" % err)
    name = k[0] + (" (copy)" if k[0] == "memcpy" else "")
    d2 = d if k[0] != "memcpy" else c
    print("| %s | %d | %s | %d | %s | %s | %s | %s | %s | %s |" % (k[1], k[2], name, k[3], gbps(c), gbps(d2),
          cpu_gbps(c, k[2], k[3]), cpu_gbps(d2, k[2], k[3]), ratio, err))
EOF
}

if [ -n "$TABLE_ONLY" ]; then to_markdown "$TABLE_ONLY"; exit 0; fi

BIN=$BUILD/bench/codec/bench_codecs
if [ ! -x "$BIN" ]; then
  [ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" --target bench_codecs -j2
fi
[ -x "$BIN" ] || { echo "bench-codecs.sh: $BIN was not built (is libbenchmark-dev installed?)" >&2; exit 1; }
mkdir -p "$OUT"

echo "bench-codecs.sh: running $BIN (sizes $SIZES MiB), console in $OUT/console.txt"
"$BIN" --hcomm_sizes="$SIZES" --benchmark_min_time="$MIN_TIME" \
  --benchmark_out="$OUT/codecs.json" --benchmark_out_format=json "$@" | tee "$OUT/console.txt"

to_markdown "$OUT/codecs.json" > "$OUT/codecs.md"
echo
cat "$OUT/codecs.md"
echo
echo "bench-codecs.sh: table in $OUT/codecs.md, raw results in $OUT/codecs.json"
