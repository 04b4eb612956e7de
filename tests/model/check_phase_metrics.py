#!/usr/bin/env python3
"""Checks train_gpt's --metrics file for the step's two timed parts: every step has
pipeline_ms and dp_wait_ms, finite, pipeline_ms > 0 (forward and backward ran) and
dp_wait_ms >= 0, each at most the step's ms plus the skew between ranks' clocks of a step
(the maxima come from any rank; the step's ms is rank 0's). Every axis has codec_ms, the
step's encoding and decoding time: 0 when SCHEME is none, and with a compressing scheme
positive on TP (compressed at every step) and within the same bound.

  check_phase_metrics.py METRICS.jsonl STEPS [SCHEME]
"""
import json
import math
import sys


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    scheme = sys.argv[3] if len(sys.argv) > 3 else None
    rows = [json.loads(l) for l in open(path) if l.strip()]
    if len(rows) != steps:
        sys.exit(f"check_phase_metrics: {len(rows)} rows in {path}, expected {steps}")
    for r in rows:
        for k in ("pipeline_ms", "dp_wait_ms"):
            if k not in r or not math.isfinite(r[k]) or r[k] < 0:
                sys.exit(f"check_phase_metrics: step {r['step']}: {k} missing or invalid ({r.get(k)})")
        if r["pipeline_ms"] <= 0:
            sys.exit(f"check_phase_metrics: step {r['step']}: pipeline_ms {r['pipeline_ms']} is not positive")
        for k in ("pipeline_ms", "dp_wait_ms"):
            if r[k] > 2 * r["ms"] + 50:
                sys.exit(f"check_phase_metrics: step {r['step']}: {k} {r[k]:.1f} exceeds the step's {r['ms']:.1f} ms")
        if scheme is None:
            continue
        for ax in ("dp", "pp", "tp"):
            c = r["comm"][ax].get("codec_ms")
            if c is None or not math.isfinite(c) or c < 0 or c > 2 * r["ms"] + 50:
                sys.exit(f"check_phase_metrics: step {r['step']}: {ax} codec_ms missing or invalid ({c})")
            if scheme == "none" and c != 0:
                sys.exit(f"check_phase_metrics: step {r['step']}: {ax} codec_ms {c} with no compression")
        if scheme != "none" and r["comm"]["tp"]["codec_ms"] <= 0:
            sys.exit(f"check_phase_metrics: step {r['step']}: tp codec_ms is 0 with --scheme {scheme}")
    print(f"check_phase_metrics: {len(rows)} steps, median pipeline "
          f"{sorted(r['pipeline_ms'] for r in rows)[len(rows) // 2]:.1f} ms, DP wait "
          f"{sorted(r['dp_wait_ms'] for r in rows)[len(rows) // 2]:.1f} ms"
          + (f", codec tp {sorted(r['comm']['tp']['codec_ms'] for r in rows)[len(rows) // 2]:.2f} ms" if scheme else ""))


if __name__ == "__main__":
    main()
