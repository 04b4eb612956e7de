#!/bin/bash
cd /work/main
S="none naive:8 mzhybrid:8 zhybrid:16,8 zhybrid:16,6+ef bf16 int8:256+ef"
for r in 1 2; do
  echo "== round $r TP raw $(date -u +%T)"
  NET=420mbit RANKS_PER_NODE=2 MODEL=small EXTRA="--uncompressed-axes tp --eval-batches 8" STEPS=60 SCHEMES="$S" OUT=/tmp/q/mainbw/raw$r TRAIN_GPT=/work/main/build/examples/gpt/train_gpt bench/model/bench_schemes.sh 2>/tmp/q/mainbw_raw$r.err
  echo "== round $r every axis $(date -u +%T)"
  NET=420mbit RANKS_PER_NODE=2 MODEL=small EXTRA="--eval-batches 8" STEPS=60 SCHEMES="$S" OUT=/tmp/q/mainbw/all$r TRAIN_GPT=/work/main/build/examples/gpt/train_gpt bench/model/bench_schemes.sh 2>/tmp/q/mainbw_all$r.err
done
