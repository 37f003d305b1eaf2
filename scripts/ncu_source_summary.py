#!/usr/bin/env python3
"""Summarises an `ncu --page source --print-source sass --csv` export (scripts/gpu-check.sh
ncu-source): where a kernel's warp instructions and stall samples go, by SASS opcode and by
region of the code (cut at the barriers: BAR / SYNCS / WARPSYNC and branch targets are too fine,
so regions are runs between BAR.SYNC instructions), and the hottest instructions.

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
    nis = column(header, "stall sampling (not")
    stall_cols = [(i, h) for i, h in enumerate(header) if h.lower().startswith("stall_") or "stall " in h.lower() and "sampling" not in h.lower()]
    body = [r for r in rows[start + 1:] if len(r) > max(src, ex or 0)]
    by_op = collections.Counter()
    samples_op = collections.Counter()
    regions = [[0.0, 0.0, 0, ""]]
    stalls = collections.Counter()
    total_ex = total_s = 0.0
    for r in body:
        ins = r[src].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", ins).split(" ")[0]
        e = number(r[ex]) if ex is not None else 0.0
        s = number(r[samp]) if samp is not None else 0.0
        by_op[op] += e
        samples_op[op] += s
        total_ex += e
        total_s += s
        reg = regions[-1]
        reg[0] += e
        reg[1] += s
        reg[2] += 1
        if not reg[3]:
            reg[3] = ins[:60]
        for i, h in stall_cols:
            stalls[h] += number(r[i])
        if op.startswith("BAR") or op.startswith("SYNCS"):
            regions.append([0.0, 0.0, 0, ""])
    print(f"{a.csv}: {len(body)} SASS instructions, {total_ex:,.0f} warp instructions executed, {total_s:,.0f} stall samples")
    print("\nby opcode (executed, % of samples):")
    for op, e in by_op.most_common(20):
        print(f"  {op:16s} {e:12,.0f}  {100 * samples_op[op] / max(total_s, 1):5.1f} %")
    print("\nby region (cut after each BAR / SYNCS instruction):")
    for i, (e, s, n, first) in enumerate(regions):
        if e or s:
            print(f"  {i:3d}: {n:5d} instr, executed {e:12,.0f} ({100 * e / max(total_ex, 1):5.1f} %), samples {100 * s / max(total_s, 1):5.1f} %  from: {first}")
    if stalls:
        print("\nstall reasons (samples):")
        for h, v in stalls.most_common(12):
            print(f"  {h:40s} {v:10,.0f}")
    print(f"\nhottest {a.top} instructions by stall samples:")
    hot = sorted(body, key=lambda r: -(number(r[samp]) if samp is not None else 0))[: a.top]
    for r in hot:
        print(f"  {number(r[samp]):8,.0f}  {number(r[ex]) if ex is not None else 0:10,.0f}  {r[src].strip()[:90]}")


if __name__ == "__main__":
    main()
