#!/usr/bin/env python3
"""Step-time model of 3-D parallel GPT training with compressed communication.

Prints the speedup of the schemes none, naive, mzhybrid and zhybrid for GPT-NeoX-20B on
192 GPUs (TP=2, PP=4, DP=24) next to the paper's reported figures, and predicts the
collective times of the small measured configurations (bench/comm) so the model can be
checked against measurement.

Every input is stated in ASSUMPTIONS below; nothing is fitted to the paper's result.

With --sweep DIR it is checked against a measured sweep instead (bench/model/bench_sweep.sh:
the 2x2x2 grid on emulated nodes, every scheme at several link rates, plus every scheme over
shared memory without a link limit). See sweep_model() for that model and calibrate_hops()
for its two calibrated parameters.

Model (per optimizer step, per GPU on the critical path):
  compute      = Megatron FLOPs (with activation recomputation) / achieved FLOP/s
  pipeline     = bubble (p-1)/m of the compute, plus per micro-batch the stage-boundary
                 send forward and backward (1F1B: both on the critical path)
  tensor par.  = 4 allreduces of (s, b, h) per layer per micro-batch (2 fwd, 2 bwd), plus 2
                 more forward in the recomputation, synchronous (not overlapped)
  data par.    = ring allreduce of this GPU's gradient shard after the last backward (not
                 overlapped with compute; ZeRO-1 reduce-scatter + allgather moves the same bytes)
  compression  = compress + decompress time at the codec's GPU throughput; on TP and PP it
                 adds to the critical path; on DP the segmented ring overlaps it with the wire
                 time (cost = max(wire, codec) + one segment's codec time)
"""
import argparse
import json
import math
import sys

# ---------------------------------------------------------------------------------------
ASSUMPTIONS = {
    # GPT-NeoX-20B public config
    "layers": 44, "hidden": 6144, "seq": 2048, "micro_batch": 4, "vocab": 50432,
    "global_batch": 1536, "tp": 2, "pp": 4, "dp": 24, "bytes_per_value": 2,  # fp16
    # Lassen: V100 (125 TFLOP/s fp16 tensor peak); NeoX-20B on V100 typically reaches
    # ~30-40% of peak; we take 35 TFLOP/s achieved.
    "achieved_tflops": 35.0,
    # Links: TP pairs inside a node over NVLink2 (3 bricks, ~75 GB/s per direction); PP and
    # DP cross nodes over dual-rail EDR IB (2 x 12.5 GB/s per node, shared by 4 GPUs).
    "tp_bw_GBps": 75.0, "tp_lat_s": 5e-6,
    "inter_bw_GBps": 25.0 / 4, "inter_lat_s": 5e-6,
    # GPU codec throughputs (GB/s of raw data), from RESEARCH.md's peers on A100-class GPUs
    # scaled to V100 (about half): ZFP ~ 200, MPC ~ 100.
    "zfp_GBps": 200.0, "mpc_GBps": 100.0,
    # Lossless ratio of real training tensors (measured with ndzip/zstd in RESEARCH.md: ~1.1).
    "mpc_ratio": 1.10,
    # Wire data are fp16; ZFP codes fp32 values at `rate` bits, so ratio = 16 / rate.
    "dp_segment_bytes": 4 << 20,
}

PAPER = {  # reported speed-ups over the uncompressed baseline (TFLOPS / samples per s)
    "naive": "+22.5% / +23.6% (earlier version)",
    "mzhybrid": "+4.4% / +5.3%",
    "zhybrid": "+20.4% / +20.6%",
}


def ring_allreduce_time(size_bytes, n, bw_GBps, lat_s, ratio=1.0):
    """Ring allreduce: 2(n-1) steps, each moving size/n (compressed by `ratio`)."""
    if n <= 1:
        return 0.0
    chunk = size_bytes / n / ratio
    return 2 * (n - 1) * (lat_s + chunk / (bw_GBps * 1e9))


def codec_time(size_bytes, GBps):
    return 0.0 if GBps is None else size_bytes / (GBps * 1e9)


def scheme_axes(name, rates):
    """axis -> (codec, ratio, throughput GB/s) for a scheme."""
    a = ASSUMPTIONS
    def zfp(rate):
        return ("zfp:%d" % rate, a["bytes_per_value"] * 8 / rate, a["zfp_GBps"])
    mpc = ("mpc", a["mpc_ratio"], a["mpc_GBps"])
    none = ("none", 1.0, None)
    if name == "none":
        return {"tp": none, "pp": none, "dp": none}
    if name == "naive":
        return {"tp": zfp(rates[0]), "pp": zfp(rates[0]), "dp": zfp(rates[0])}
    if name == "mzhybrid":
        return {"tp": mpc, "pp": mpc, "dp": zfp(rates[0])}
    if name == "zhybrid":
        return {"tp": zfp(rates[0]), "pp": zfp(rates[0]), "dp": zfp(rates[1])}
    raise ValueError(name)


def step_time(name, rates):
    a = ASSUMPTIONS
    L, h, s, b, V = a["layers"], a["hidden"], a["seq"], a["micro_batch"], a["vocab"]
    tp, pp, dp = a["tp"], a["pp"], a["dp"]
    micro = a["global_batch"] // (dp * b)
    # Megatron-LM (Narayanan et al. 2021) FLOPs per step with recomputation, whole model.
    B = a["global_batch"]
    flops = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    compute = flops / (tp * pp * dp) / (a["achieved_tflops"] * 1e12)
    bubble = compute * (pp - 1) / micro
    axes = scheme_axes(name, rates)

    msg = s * b * h * a["bytes_per_value"]  # one (s, b, h) activation tensor
    # Tensor parallel: 2 fwd + 2 bwd + 2 recompute allreduces per layer per micro-batch.
    n_tp = 6 * (L // pp) * micro
    codec, ratio, gbps = axes["tp"]
    t_tp_wire = n_tp * ring_allreduce_time(msg, tp, a["tp_bw_GBps"], a["tp_lat_s"], ratio)
    # ring allreduce compresses each chunk at each of its (n-1) reduce steps + once to gather
    t_tp_codec = n_tp * (2 * codec_time(msg, gbps) * (tp) / tp) if gbps else 0.0
    # Pipeline: one forward send and one backward send per micro-batch on the critical path.
    codec_p, ratio_p, gbps_p = axes["pp"]
    n_pp = 2 * micro
    t_pp_wire = n_pp * (a["inter_lat_s"] + msg / ratio_p / (a["inter_bw_GBps"] * 1e9))
    t_pp_codec = n_pp * 2 * codec_time(msg, gbps_p)
    # Data parallel: ring allreduce of the gradient shard (fp16).
    params = 12 * L * h * h + 2 * V * h
    grad_bytes = params / (tp * pp) * a["bytes_per_value"]
    codec_d, ratio_d, gbps_d = axes["dp"]
    t_dp_wire = ring_allreduce_time(grad_bytes, dp, a["inter_bw_GBps"], a["inter_lat_s"], ratio_d)
    if gbps_d:
        # each rank compresses 2(n-1)/n of the buffer and decompresses as much; overlapped
        # with the wire by segmenting, leaving one segment's codec time exposed
        t_codec_total = 2 * codec_time(grad_bytes * 2 * (dp - 1) / dp, gbps_d)
        t_dp = max(t_dp_wire, t_codec_total) + 2 * codec_time(a["dp_segment_bytes"], gbps_d)
    else:
        t_dp = t_dp_wire
    total = compute + bubble + t_tp_wire + t_tp_codec + t_pp_wire + t_pp_codec + t_dp
    return {
        "scheme": name if name == "none" else "%s:%s" % (name, ",".join(map(str, rates))),
        "compute_s": compute, "bubble_s": bubble,
        "tp_s": t_tp_wire + t_tp_codec, "pp_s": t_pp_wire + t_pp_codec, "dp_s": t_dp,
        "step_s": total,
        "bytes": {"tp": n_tp * msg * 2 * (tp - 1) / tp, "pp": n_pp * msg / 2, "dp": grad_bytes * 2 * (dp - 1) / dp},
    }


def neox_table(naive_rate, mz_rate, zh_rates):
    base = step_time("none", ())
    rows = [base, step_time("naive", (naive_rate,)), step_time("mzhybrid", (mz_rate,)),
            step_time("zhybrid", zh_rates)]
    out = []
    for r in rows:
        r["speedup_pct"] = 100.0 * (base["step_s"] / r["step_s"] - 1.0)
        r["paper"] = PAPER.get(r["scheme"].split(":")[0], "baseline")
        out.append(r)
    return out


def small_predictions(ranks_list, sizes_mib, bw_Gbps, host_codec_GBps, ratios):
    """Predicted allreduce seconds on the rate-limited namespace network (bench/comm)."""
    rows = []
    for n in ranks_list:
        for mib in sizes_mib:
            size = mib * (1 << 20)
            for codec, ratio in ratios.items():
                wire = ring_allreduce_time(size, n, bw_Gbps / 8.0, 50e-6, ratio)
                gbps = host_codec_GBps.get(codec)
                cod = 0.0 if not gbps else 2 * codec_time(size * 2 * (n - 1) / n, gbps)
                rows.append({"ranks": n, "MiB": mib, "codec": codec,
                             "predicted_s": max(wire, cod) + (cod / (2 * (n - 1)) if cod else 0.0)})
    return rows


# ---------------------------------------------------------------------------------------
# The measured sweep (bench/model/bench_sweep.sh). Layout of DIR:
#   DIR/round<k>/shm/<scheme>.jsonl     the scheme over shared memory, no link limit
#   DIR/round<k>/<rate>/<scheme>.jsonl  the scheme on the emulated cluster at <rate>
# (scheme names with ':', ',' and '+' replaced by '_'; train_gpt --metrics files).

# Bytes a link carries per byte of TCP payload: with a 1500-byte MTU and TCP timestamps a
# segment carries 1448 payload bytes in a 1514-byte frame (tc tbf on a veth counts the
# Ethernet header), and the delayed ACKs of the traffic coming the other way (a 66-byte
# frame per two segments) share the same direction of the link.
TCP_FRAMING = 1514 / 1448 + 66 / (2 * 1448)


# The emulated links' token buckets (scripts/netns-mpirun.sh: tc tbf ... burst 256kb): a link
# idle for a while sends up to this many bytes at once.
TBF_BURST_BYTES = 256 * 1024
# Bits of one full Ethernet frame: what each store-and-forward tbf on a message's path holds
# back once per message (a message's last frame leaves a tbf one frame time after it arrived).
FRAME_BITS = 1514 * 8


def sweep_wire_ms(local_ms, node_bytes, rate_mbit):
    """(ms, waiting share): the step without a link limit (compute and codecs, measured over
    shared memory) plus the time a node's link takes to carry the bytes the node sends to
    other nodes per step, less what the token bucket lets through at once (it refills while the
    link idles during the step's compute: at most TBF_BURST_BYTES, at most the no-limit step's
    worth of rate); and the share of those bytes that waited for tokens (0 when the burst
    covers them all)."""
    wire = node_bytes * 8 * TCP_FRAMING / (rate_mbit * 1e6) * 1e3
    credit = min(TBF_BURST_BYTES * 8 / (rate_mbit * 1e6) * 1e3, local_ms)
    return local_ms + max(0.0, wire - credit), (max(0.0, 1 - credit / wire) if wire > 0 else 0.0)


def _hop_terms(local_ms, node_bytes, rate_mbit):
    """(ms of sweep_wire_ms, ms per hop of frame delay): a hop's frame delay counts only for the
    share of the traffic that waited for tokens (a tbf with tokens passes frames at once)."""
    ms, waiting = sweep_wire_ms(local_ms, node_bytes, rate_mbit)
    return ms, waiting * FRAME_BITS / (rate_mbit * 1e6) * 1e3


def sweep_model(local_ms, node_bytes, rate_mbit, hops, hop_us):
    """Predicted ms per step at rate_mbit: sweep_wire_ms plus the latency of the `hops`
    messages that cross a link one after another on the step's critical path (pipeline
    sends, the ring's steps, the small world-wide reductions): each waits one frame time at
    the rate where the link is out of tokens, and hop_us of software latency (TCP, veth and the
    bridge, the scheduler) always. hops and hop_us are the same for every scheme and rate:
    calibrate_hops() takes them from the uncompressed runs at the lowest and the highest rate."""
    ms, frame_ms = _hop_terms(local_ms, node_bytes, rate_mbit)
    return ms + hops * (frame_ms + hop_us / 1e3)


def calibrate_hops(local_ms, lo, hi):
    """(hops, hop_us) such that sweep_model matches both (rate_mbit, node_bytes, measured ms)
    points lo and hi exactly (two linear equations in hops and hops * hop_us)."""
    (m1, f1), (m2, f2) = _hop_terms(local_ms, lo[1], lo[0]), _hop_terms(local_ms, hi[1], hi[0])
    d1, d2 = lo[2] - m1, hi[2] - m2
    hops = max(0.0, (d1 - d2) / (f1 - f2)) if f1 != f2 else 0.0
    hop_us = max(0.0, (d2 - hops * f2) / hops * 1e3) if hops > 0 else 0.0
    return hops, hop_us


def _mbit(rate):
    import re
    m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate)
    if not m:
        raise SystemExit(f"step_model: rate folder '{rate}' is not a tc rate such as 20mbit")
    return float(m.group(1)) * {"k": 1e-3, "m": 1.0, "g": 1e3, "": 1e-6}[m.group(2)]


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p * (len(xs) - 1))))]


def sweep_report(out, schemes, crossing, nodes, plot=True):
    """Reads the sweep under `out`, writes out/sweep.md and out/sweep.png, prints the table."""
    import glob
    import os
    import re
    import statistics
    rounds = sorted(glob.glob(os.path.join(out, "round*")))
    if not rounds:
        raise SystemExit(f"step_model: no round*/ folders under {out} (bench/model/bench_sweep.sh writes them)")
    rates = sorted({os.path.basename(d) for r in rounds for d in glob.glob(os.path.join(r, "*"))
                    if os.path.isdir(d) and os.path.basename(d) != "shm"}, key=_mbit)

    def steps(where, s):  # the steady steps (3..) of every round, and each round's median
        pooled, per_round, sent, val, pipe, dpw = [], [], [], [], [], []
        for r in rounds:
            f = os.path.join(r, where, re.sub(r"[:,+]", "_", s) + ".jsonl")
            if not os.path.exists(f):
                continue
            rows = [json.loads(l) for l in open(f) if l.strip()]
            ms = [row["ms"] for row in rows[2:]]
            if not ms:
                continue
            pooled += ms
            per_round.append(statistics.median(ms))
            sent += [sum(row["comm"][a]["sent"] for a in crossing) for row in rows[2:]]
            val += [row["val_loss"] for row in rows if "val_loss" in row][-1:]
            pipe += [row["pipeline_ms"] for row in rows[2:] if "pipeline_ms" in row]
            dpw += [row["dp_wait_ms"] for row in rows[2:] if "dp_wait_ms" in row]
        if not pooled:
            return None
        return {"med": statistics.median(pooled), "lo": _pct(pooled, 0.1), "hi": _pct(pooled, 0.9),
                "rounds": per_round, "node_bytes": statistics.median(sent) / nodes,
                "val": val[-1] if val else float("nan"),
                "pipeline": statistics.median(pipe) if pipe else None,
                "dp_wait": statistics.median(dpw) if dpw else None}

    local = {s: steps("shm", s) for s in schemes}
    # Whether the runs left TP uncompressed (--uncompressed-axes tp): a compressing scheme's TP
    # sent its raw bytes in the shared-memory calibration.
    tp_raw = False
    for s in schemes[1:]:
        f = os.path.join(rounds[0], "shm", re.sub(r"[:,+]", "_", s) + ".jsonl")
        if os.path.exists(f):
            first = json.loads(open(f).readline())["comm"]["tp"]
            tp_raw = first["raw"] > 0 and first["sent"] == first["raw"]
            break
    meas = {(r, s): steps(r, s) for r in rates for s in schemes}
    pred = {}
    calib = set()
    hops, hop_us = 0.0, 0.0
    if len(rates) >= 2 and local.get("none") and meas[(rates[0], "none")] and meas[(rates[-1], "none")]:
        calib = {(rates[0], "none"), (rates[-1], "none")}
        pts = [(_mbit(r), meas[(r, "none")]["node_bytes"], meas[(r, "none")]["med"]) for r in (rates[0], rates[-1])]
        hops, hop_us = calibrate_hops(local["none"]["med"], *pts)
    for (r, s), m in meas.items():
        if m and local[s]:
            pred[(r, s)] = sweep_model(local[s]["med"], m["node_bytes"], _mbit(r), hops, hop_us)
    L = [f"{len(rounds)} round(s); median ms/step over the steady steps (3..) of all rounds, "
         "10th-90th percentile, the range of the rounds' medians; the model's prediction and its error."
         + (" TP uncompressed in every run (its bytes sent raw: --uncompressed-axes tp); DP and PP by the scheme."
            if tp_raw else ""), "",
         "The model (bench/model3d/step_model.py sweep_model): the no-link-limit step, plus each node's bytes "
         f"at the link rate with TCP framing less the token bucket's burst ({TBF_BURST_BYTES // 1024} KiB, refilled "
         f"during compute), plus {hops:.1f} message hops per step on the critical path, each one frame time at the "
         f"rate (for the share of the bytes that waited for tokens) plus {hop_us:.0f} us"
         + (f", these two calibrated on none at {rates[0]} and {rates[-1]} (marked *, left out of the error count)."
            if calib else " (no calibration: needs none at two rates or more)."), "",
         "| scheme | no link limit | " + " | ".join(rates) + " |", "|---|---:|" + "---:|" * len(rates)]
    errors = []
    for s in schemes:
        c = [f"{local[s]['med']:.0f}" if local[s] else "-"]
        for r in rates:
            m = meas[(r, s)]
            if not m:
                c.append("-")
                continue
            cell = f"{m['med']:.0f} ({m['lo']:.0f}-{m['hi']:.0f}; rounds {min(m['rounds']):.0f}-{max(m['rounds']):.0f})"
            if (r, s) in pred:
                e = pred[(r, s)] / m["med"] - 1
                if (r, s) in calib:
                    cell += f", model {pred[(r, s)]:.0f}*"
                else:
                    errors.append((abs(e), r, s))
                    cell += f", model {pred[(r, s)]:.0f} ({100 * e:+.0f}%)"
            c.append(cell)
        L.append(f"| {s} | " + " | ".join(c) + " |")
    L += ["", "Tokens/s speed-up over none, measured (model):", "",
          "| scheme | " + " | ".join(rates) + " |", "|---|" + "---:|" * len(rates)]
    for s in schemes:
        if s == "none":
            continue
        c = []
        for r in rates:
            m, b = meas[(r, s)], meas[(r, "none")]
            if not m or not b:
                c.append("-")
                continue
            sp = f"{b['med'] / m['med']:.2f}x"
            if (r, s) in pred and (r, "none") in pred:
                sp += f" ({pred[(r, 'none')] / pred[(r, s)]:.2f}x)"
            c.append(sp)
        L.append(f"| {s} | " + " | ".join(c) + " |")
    if "none" in schemes and local["none"]:
        L += ["", "Share of the uncompressed step in exposed communication (1 - no-limit step / step at the rate), "
              "and the bytes each node link carries per step:", "",
              "| | " + " | ".join(rates) + " |", "|---|" + "---:|" * len(rates)]
        L.append("| exposed share | " + " | ".join(
            f"{100 * (1 - local['none']['med'] / meas[(r, 'none')]['med']):.0f}%" if meas[(r, "none")] else "-"
            for r in rates) + " |")
        if all(meas[(r, "none")] and meas[(r, "none")]["dp_wait"] is not None for r in rates):
            # train_gpt's metrics (runs since they have them): the step's parts, medians of the
            # ranks' maxima; the DP wait is the DP reduction's exposed part.
            L.append("| pipeline, ms (measured) | " + " | ".join(
                f"{meas[(r, 'none')]['pipeline']:.0f}" for r in rates) + " |")
            L.append("| DP wait after it, ms (measured) | " + " | ".join(
                f"{meas[(r, 'none')]['dp_wait']:.0f} ({100 * meas[(r, 'none')]['dp_wait'] / meas[(r, 'none')]['med']:.0f}%)"
                for r in rates) + " |")
        L.append("| MB per node link | " + " | ".join(
            f"{meas[(r, 'none')]['node_bytes'] / 1e6:.3f}" if meas[(r, "none")] else "-" for r in rates) + " |")
    if errors:
        worst = max(errors)
        within = sum(e <= 0.15 for e, _, _ in errors)
        L += ["", f"Model error: {within} of {len(errors)} predicted points within 15%; median |error| "
              f"{100 * statistics.median(e for e, _, _ in errors):.0f}%, worst {100 * worst[0]:.0f}% "
              f"({worst[2]} at {worst[1]})."]
    L += ["", "| scheme | final val loss (last round) |", "|---|---:|"]
    for s in schemes:
        v = [meas[(r, s)]["val"] for r in rates if meas[(r, s)]]
        L.append(f"| {s} | {v[-1]:.4f} |" if v else f"| {s} | - |")
    text = "\n".join(L) + "\n"
    open(os.path.join(out, "sweep.md"), "w").write(text)
    print(text, end="")
    if not plot:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("step_model: matplotlib missing, no sweep.png")
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for i, s in enumerate(x for x in schemes if x != "none"):
        col = "C%d" % i
        xs, ys, lo, hi, px, py = [], [], [], [], [], []
        for r in rates:
            m, b = meas[(r, s)], meas[(r, "none")]
            if m and b:
                xs.append(_mbit(r)); ys.append(b["med"] / m["med"])
                lo.append(ys[-1] - b["med"] / m["hi"]); hi.append(b["med"] / m["lo"] - ys[-1])
            if (r, s) in pred and (r, "none") in pred:
                px.append(_mbit(r)); py.append(pred[(r, "none")] / pred[(r, s)])
        ax.errorbar(xs, ys, yerr=[[max(0, v) for v in lo], [max(0, v) for v in hi]], marker="o", capsize=3,
                    color=col, ls="none", label=s + " (measured)")
        ax.plot(px, py, color=col, ls="--", lw=1)
    ax.plot([], [], color="gray", ls="--", lw=1, label="step model")
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("inter-node link rate (Mbit/s)")
    ax.set_ylabel("tokens/s speed-up over none")
    ax.set_title("2x2x2 on 4 emulated nodes x 2 ranks (TP inside nodes%s)" % (", uncompressed" if tp_raw else ""))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sweep.png"), dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--naive-rate", type=int, default=8)
    ap.add_argument("--mz-rate", type=int, default=8)
    ap.add_argument("--zh-rates", default="12,4", help="MP rate, DP rate")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--small", action="store_true", help="also predict the small measured configurations")
    ap.add_argument("--host-zfp-gbps", type=float, default=1.0, help="measured host ZFP GB/s (bench/codec)")
    ap.add_argument("--host-mpc-gbps", type=float, default=2.0, help="measured host MPC GB/s (bench/codec)")
    ap.add_argument("--mpc-ratio", type=float, default=1.10, help="measured MPC ratio on the benchmark data")
    ap.add_argument("--sweep", metavar="DIR", help="check the model against bench/model/bench_sweep.sh's DIR instead")
    ap.add_argument("--schemes", default="none naive:8 mzhybrid:8 zhybrid:16,8 zhybrid:16,6+ef bf16 int8:256+ef",
                    help="with --sweep: the schemes, none first")
    ap.add_argument("--crossing", default="dp,pp", help="with --sweep: the axes that cross nodes")
    ap.add_argument("--nodes", type=int, default=4, help="with --sweep: emulated nodes")
    args = ap.parse_args()
    if args.sweep:
        sweep_report(args.sweep, args.schemes.split(), args.crossing.split(","), args.nodes)
        return
    zh = tuple(int(x) for x in args.zh_rates.split(","))
    rows = neox_table(args.naive_rate, args.mz_rate, zh)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        print("GPT-NeoX-20B, 192 GPUs (TP=2 PP=4 DP=24, mb=4, seq=2048, fp16), modelled step time")
        print("%-16s %9s %9s %8s %8s %8s %9s %9s  %s" % ("scheme", "compute", "bubble", "TP", "PP", "DP",
                                                          "step(s)", "speedup", "paper"))
        for r in rows:
            print("%-16s %9.2f %9.2f %8.2f %8.2f %8.2f %9.2f %8.1f%%  %s" % (
                r["scheme"], r["compute_s"], r["bubble_s"], r["tp_s"], r["pp_s"], r["dp_s"], r["step_s"],
                r["speedup_pct"], r["paper"]))
    # The paper's gains need communication to be a large share of the step. Sweep the
    # effective inter-node bandwidth per GPU (contention, ZeRO-1's extra collectives and
    # MPI overheads make it far lower than the nominal link) and show where each scheme's
    # modelled speed-up lands.
    if not args.json:
        print("\nSpeed-up against effective inter-node bandwidth per GPU (GB/s); TP stays on NVLink:")
        print("%10s %8s %10s %10s %10s" % ("GB/s", "comm%", "naive", "mzhybrid", "zhybrid"))
        nominal = ASSUMPTIONS["inter_bw_GBps"]
        for bw in (nominal, 2.0, 1.0, 0.5, 0.25, 0.125):
            ASSUMPTIONS["inter_bw_GBps"] = bw
            t = neox_table(args.naive_rate, args.mz_rate, zh)
            comm = (t[0]["tp_s"] + t[0]["pp_s"] + t[0]["dp_s"]) / t[0]["step_s"] * 100
            print("%10.3f %7.1f%% %9.1f%% %9.1f%% %9.1f%%" % (bw, comm, t[1]["speedup_pct"], t[2]["speedup_pct"],
                                                              t[3]["speedup_pct"]))
        ASSUMPTIONS["inter_bw_GBps"] = nominal
    if args.small:
        ratios = {"none": 1.0, "mpc": args.mpc_ratio, "zfp:4": 8.0, "zfp:8": 4.0, "zfp:16": 2.0}
        gb = {"mpc": args.host_mpc_gbps, "zfp:4": args.host_zfp_gbps, "zfp:8": args.host_zfp_gbps,
              "zfp:16": args.host_zfp_gbps}
        print("\nPredicted allreduce seconds at 1 Gbit/s (compare with bench/comm measurements):")
        for r in small_predictions([2, 4], [1, 16, 64, 256], 1.0, gb, ratios):
            print("  ranks=%d %4d MiB %-7s %.3f s" % (r["ranks"], r["MiB"], r["codec"], r["predicted_s"]))


if __name__ == "__main__":
    main()
