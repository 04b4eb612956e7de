#!/usr/bin/env python3
"""Compares the per-axis byte counts of two train_gpt --metrics files (first step): for each
named axis the raw bytes of B are RATIO times those of A, to 1% (--precision bf16's wire:
0.5; TP's exact statistics, the cross-entropy's sums, stay float32).

  check_wire_bytes.py A.jsonl B.jsonl RATIO AXIS [AXIS...]
"""
import json
import sys


def main():
    a_path, b_path, ratio, axes = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
    a = json.loads(open(a_path).readline())["comm"]
    b = json.loads(open(b_path).readline())["comm"]
    for ax in axes:
        ra, rb = a[ax]["raw"], b[ax]["raw"]
        if ra <= 0 or abs(rb / ra - ratio) > 0.01:
            sys.exit(f"check_wire_bytes: {ax}: {rb:.0f} raw bytes against {ra:.0f}, expected ratio {ratio}")
        print(f"check_wire_bytes: {ax}: {rb:.0f} raw bytes against {ra:.0f} ({rb / ra:.3f})")


if __name__ == "__main__":
    main()
