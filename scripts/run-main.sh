#!/usr/bin/env bash
# The main job: train a GPT on the default corpus (data/kjv.txt) on 8 MPI ranks, 2x2x2
# (DP x PP x TP), with the ZHybrid scheme (ZFP everywhere, 16 bits/value on pipeline and
# tensor traffic, 8 on data-parallel gradients). Prints train_gpt's summary at the end:
# final train and validation loss, tokens/s, and bytes saved per axis.
#
# Every message is compressed (--compress-min-bytes 0): the small models' messages are all below
# hcomm's 1 MiB default threshold, which exists for large clusters.
#
# Override with environment variables, e.g. SCHEME=mzhybrid:8 STEPS=100 bash scripts/run-main.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCHEME=${SCHEME:-zhybrid:16,8}
STEPS=${STEPS:-60}
MODEL=${MODEL:-small}
ARCH=${ARCH:-gpt2}
OUT=${OUT_DIR:-out}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

[ -s data/kjv.txt ] || { echo "run-main: data/kjv.txt missing: run scripts/setup.sh first" >&2; exit 1; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target train_gpt >/dev/null

mkdir -p "$OUT"
mpiexec --oversubscribe -n 8 -x OMP_NUM_THREADS=1 build/examples/gpt/train_gpt \
  --arch "$ARCH" --model "$MODEL" --dp 2 --pp 2 --tp 2 --scheme "$SCHEME" --compress-min-bytes 0 \
  --data data/kjv.txt --steps "$STEPS" --eval-every 20 --metrics "$OUT/main.jsonl" --sample 200
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 scripts/plot_metrics.py "$OUT/main.jsonl" -o "$OUT/main.png" && echo "run-main: plot in $OUT/main.png"
fi
