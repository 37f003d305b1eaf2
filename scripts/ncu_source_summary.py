#!/usr/bin/env python3
"""Summarises an `ncu --page source --print-source sass --csv` export (scripts/gpu-check.sh
ncu-source): where a kernel's warp instructions and stall samples go, by SASS opcode and by
phase of the code (cut after the grid wait, barriers, mbarrier waits, warp syncs, shuffles, bulk
copies and exits: the cuts docs/PERF.md's GEMV phase table was read from), and the hottest
instructions.

  scripts/ncu_source_summary.py ncu-source-0.csv [--top 25]
"""
import argparse
import collections
import csv
import re
import sys


def column(header, *needles):
    for i, name in enumerate(header):
        low = name.lower()
        if all(n in low for n in needles):
            return i
    return None


def number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = list(csv.reader(f))
    start = next((i for i, r in enumerate(rows) if any("Source" == c.strip() for c in r)), None)
    if start is None:
        sys.exit(f"{a.csv}: no header row with a 'Source' column (is it ncu --page source --csv?)")
    header = rows[start]
    src = column(header, "source")
    ex = column(header, "instructions executed") or column(header, "warp instructions executed")
    samp = column(header, "stall sampling (all")
    # Per-reason sample columns ("stall_long_sb"; their "(Not Issued)" twins are a subset).
    stall_cols = [(i, h) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    body = [r for r in rows[start + 1:] if len(r) > max(src, ex or 0)]

    def ex_of(r):
        return number(r[ex]) if ex is not None else 0.0

    def samples_of(r):
        return number(r[samp]) if samp is not None else 0.0

    def opcode(r):
        return re.sub(r"^@!?U?P\w+\s+", "", r[src].strip()).split(" ")[0]

    total_ex = sum(ex_of(r) for r in body)
    total_s = sum(samples_of(r) for r in body)
    by_op = collections.Counter()
    samples_op = collections.Counter()
    stalls = collections.Counter()
    for r in body:
        by_op[opcode(r)] += ex_of(r)
        samples_op[opcode(r)] += samples_of(r)
        for i, h in stall_cols:
            stalls[h] += number(r[i])
    print(f"{a.csv}: {len(body)} SASS instructions, {total_ex:,.0f} warp instructions executed, {total_s:,.0f} stall samples")
    print("\nby opcode (executed, % of samples):")
    for op, e in by_op.most_common(20):
        print(f"  {op:16s} {e:12,.0f}  {100 * samples_op[op] / max(total_s, 1):5.1f} %")

    # Phases: the code cut after each executed instruction that ends one — the grid wait
    # (ACQBULK), a barrier, an mbarrier wait (SYNCS), a warp sync, a shuffle, a bulk copy, an exit.
    markers = ("ACQBULK", "BAR", "SYNCS", "WARPSYNC", "SHFL", "UBLKCP", "EXIT", "RET")
    cuts = [0] + [i + 1 for i, r in enumerate(body) if ex_of(r) > 0 and opcode(r).startswith(markers)] + [len(body)]
    print("\nby phase (instructions [a, b), cut after the grid wait, barriers, syncs, shuffles, bulk copies;")
    print("phases under 1 % of both columns left out):")
    for a0, b0 in zip(cuts, cuts[1:]):
        if a0 >= b0:
            continue
        part = body[a0:b0]
        s_part = sum(samples_of(r) for r in part)
        e_part = sum(ex_of(r) for r in part)
        if s_part < 0.01 * total_s and e_part < 0.01 * total_ex:
            continue
        reasons = collections.Counter()
        for r in part:
            for i, h in stall_cols:
                reasons[h[len("stall_"):]] += number(r[i])
        top = ", ".join(f"{k}={v:.0f}" for k, v in reasons.most_common(3) if v)
        print(f"  [{a0:5d},{b0:5d}) samples {100 * s_part / max(total_s, 1):5.1f} %, executed "
              f"{100 * e_part / max(total_ex, 1):5.1f} %, ends {part[-1][src].strip()[:40]:40s} {top}")
    if stalls:
        print("\nstall reasons (samples):")
        for h, v in stalls.most_common(12):
            print(f"  {h:40s} {v:10,.0f}")
    print(f"\nhottest {a.top} instructions by stall samples:")
    for r in sorted(body, key=lambda r: -samples_of(r))[: a.top]:
        print(f"  {samples_of(r):8,.0f}  {ex_of(r):10,.0f}  {r[src].strip()[:90]}")


if __name__ == "__main__":
    main()
