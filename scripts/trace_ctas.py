#!/usr/bin/env python3
"""Which CTAs end a kernel late: a summary of the per-CTA trace of one decode step.

jllm-run --profile with JLLM_TRACE=1 and JLLM_TRACE_DUMP=FILE writes every CTA's stamps of the
traced step (graph_runner.cc, TraceDecodeStep) as tab-separated rows: launch, label, x, y, and
entry, wait, mark, streamed, exit in ns from the step's first CTA entry (-1: not stamped).

For each kernel label (its launches pooled), the CTAs that end in the last quarter of a launch's
spread (median end -> last end) are its late ones; this prints how many there are, where they
sit in the grid (blockIdx.x by eighths), and against the launch's other CTAs how much later they
passed the wait, how much longer they staged and streamed, and how long their tail was — so a
spread from late starts, from heavier ranges or from the end chain reads apart. With the dump's
SM column: how many of the late CTAs (and of the rest) entered only after the launch before had
left their SM (they waited for room on it), and how many sat on an SM where that launch had a
late CTA of its own.

  scripts/trace_ctas.py FILE [--label TEXT]
"""
import argparse
import collections
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--label", default="", help="only labels containing this text")
    args = ap.parse_args()

    launches = collections.defaultdict(list)  # launch index -> rows
    labels = {}
    with open(args.file) as f:
        header = f.readline().rstrip("\n").split("\t")
        times = ["entry_ns", "wait_ns", "mark_ns", "streamed_ns", "exit_ns"]
        with_sm = header == ["launch", "label", "x", "y", "sm"] + times
        if not with_sm and header != ["launch", "label", "x", "y"] + times:  # (dumps before the SM column)
            sys.exit(f"{args.file}: not a trace dump (header {header})")
        t0 = 5 if with_sm else 4
        for line in f:
            p = line.rstrip("\n").split("\t")
            i = int(p[0])
            labels[i] = p[1]
            launches[i].append(dict(x=int(p[2]), y=int(p[3]), sm=int(p[4]) if with_sm else -1,
                                    entry=float(p[t0]), wait=float(p[t0 + 1]), mark=float(p[t0 + 2]),
                                    streamed=float(p[t0 + 3]), exit=float(p[t0 + 4])))

    def phase(c, a, b):
        return c[b] - c[a] if c[a] >= 0 and c[b] >= 0 else None

    def late_cut(ctas):
        exits = sorted(c["exit"] for c in ctas)
        median, last = exits[len(exits) // 2], exits[-1]
        return median + 0.75 * (last - median), median, last

    per_label = collections.OrderedDict()
    order = sorted(launches)
    for n, i in enumerate(order):
        if args.label not in labels[i]:
            continue
        ctas = launches[i]
        cut, median, last = late_cut(ctas)
        # The launch before on each SM: when its last CTA there left, and whether one of them was late.
        prev_exit, prev_late = {}, set()
        if n > 0:
            before = launches[order[n - 1]]
            pcut, pmed, plast = late_cut(before)
            for c in before:
                if c["sm"] < 0:
                    continue
                prev_exit[c["sm"]] = max(prev_exit.get(c["sm"], 0.0), c["exit"])
                if c["exit"] >= pcut and plast > pmed:
                    prev_late.add(c["sm"])
        grid = max(c["x"] for c in ctas) + 1
        s = per_label.setdefault(labels[i], dict(launches=0, ctas=0, late=0, spread=0.0, eighths=[0] * 8,
                                                 d=collections.defaultdict(list),
                                                 sm=collections.defaultdict(lambda: [0, 0, 0])))
        s["launches"] += 1
        s["ctas"] += len(ctas)
        s["spread"] += last - median
        waits = [c["wait"] for c in ctas if c["wait"] >= 0]
        wait_med = statistics.median(waits) if waits else None
        for c in ctas:
            late = c["exit"] >= cut and last > median
            key = "late" if late else "rest"
            if late:
                s["late"] += 1
                s["eighths"][min(7, c["x"] * 8 // grid)] += 1
            if c["sm"] in prev_exit:  # [CTAs, entered after the SM's last CTA before left, on a late one's SM]
                tally = s["sm"][key]
                tally[0] += 1
                tally[1] += c["entry"] >= prev_exit[c["sm"]]
                tally[2] += c["sm"] in prev_late
            if wait_med is not None and c["wait"] >= 0:
                s["d"][key + " wait"].append(c["wait"] - wait_med)
            for name, a, b in (("staged", "wait", "mark"), ("stream", "mark", "streamed"),
                               ("tail", "streamed", "exit")):
                v = phase(c, a, b)
                if v is not None:
                    s["d"][key + " " + name].append(v)

    def mean_us(xs):
        return f"{statistics.fmean(xs) / 1000:7.2f}" if xs else "      -"

    def pct(tally, k):
        return f"{100 * tally[k] / tally[0]:3.0f}%" if tally[0] else "   -"

    print("| kernel | launches | CTAs | late | spread us | late by grid eighth | wait late/rest us | "
          "staged late/rest | stream late/rest | tail late/rest | entered after the SM's last CTA before left "
          "late/rest | on the SM of a late CTA before late/rest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, s in per_label.items():
        d = s["d"]
        cols = " | ".join(f"{mean_us(d['late ' + n])} / {mean_us(d['rest ' + n])}"
                          for n in ("wait", "staged", "stream", "tail"))
        late, rest = s["sm"]["late"], s["sm"]["rest"]
        sm_cols = f"{pct(late, 1)} / {pct(rest, 1)} | {pct(late, 2)} / {pct(rest, 2)}"
        print(f"| {label[:56]} | {s['launches']} | {s['ctas']} | {s['late']} | "
              f"{s['spread'] / s['launches'] / 1000:.2f} | {' '.join(map(str, s['eighths']))} | {cols} | {sm_cols} |")


if __name__ == "__main__":
    main()
