#!/usr/bin/env bash
# bench_overlap.sh: train_gpt's step time with --overlap off and on, alternating (off, on)
# REPEATS times, uncompressed (--scheme none), the same buckets both ways. GRID is DPxPPxTP
# (default 2x2x2, 8 ranks; 4x1x2 puts the 4-way DP across the nodes with no pipeline, 2x1x1 is
# two nodes of one rank: there the whole backward is the window the DP reduction can hide
# behind, while with PP the gradients are final only in the last micro-batch's backward).
# NET empty: the ranks over shared memory; NET=100mbit: scripts/netns-mpirun.sh, DPxPP nodes of
# TP ranks (TP inside a node, DP and PP across the rate-limited links). Prints one line per run
# (median ms/step without the first 2 steps, and the medians of its two parts as train_gpt's
# metrics report them: the 1F1B pipeline, then the wait for the DP reduction that the pipeline
# did not hide, each the maximum over the ranks) with the time of day and the load average:
# bench_ab.sh's lines, A overlap off and B on.
#
#   NET=100mbit REPEATS=3 bench/model/bench_overlap.sh build/examples/gpt/train_gpt
#   EXTRA="--layers 4 --heads 8" BUCKET_MB=0.02 STEPS=20 ...
#   NET=100mbit GRID=4x1x2 MODEL=small EXTRA="--batch 64" BUCKET_MB=0.25 STEPS=8 ...
#   NET=100mbit GRID=2x1x1 MODEL=small EXTRA="--batch 64" BUCKET_MB=0.25 STEPS=8 REPEATS=5 ...
set -euo pipefail
BUCKET_MB=${BUCKET_MB:-0.02}
export A="--bucket-mb $BUCKET_MB --overlap off" B="--bucket-mb $BUCKET_MB --overlap on" OUT=${OUT:-out/bench-overlap}
exec "$(dirname "$0")/bench_ab.sh" "$@"
