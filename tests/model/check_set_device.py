#!/usr/bin/python3
"""Checks that the newest checkpoint set in DIR records the backend and precision that wrote it
(manifest.json's "device" and "precision"; recorded, not checked on resume).

    check_set_device.py DIR DEVICE PRECISION
"""
import glob
import json
import sys


def main():
    d, device, precision = sys.argv[1:4]
    paths = sorted(glob.glob(d + "/step-*/manifest.json"))
    if not paths:
        sys.exit(f"FAIL: no checkpoint set in {d}")
    m = json.load(open(paths[-1]))
    got = (m.get("device"), m.get("precision"))
    print(f"{paths[-1]}: device {got[0]}, precision {got[1]}")
    if got != (device, precision):
        sys.exit(f"FAIL: expected device {device}, precision {precision}")


if __name__ == "__main__":
    main()
