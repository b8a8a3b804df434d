#!/usr/bin/env python3
"""Independent check of wulf's "does not fit" (issue 28): the rms relative
residual of the free Hockney line t = a + n/b through a sweep's medians,
fitted here by weighted least squares (weights 1/t^2, closed form), to set
beside the "rms residual" of the one-segment fit in `wulf report`'s HTML.

Usage: bench/fit_residual.py RESULT.json [REPORT.html]
Prints this script's rms and, given the report, the rms wulf printed for
each segment and whether it says "does not fit" (threshold 15%).
"""
import json
import math
import re
import sys


def free_rms(points):
    n = [float(p["bytes"]) for p in points if p.get("median_ns", 0) > 0]
    t = [float(p["median_ns"]) for p in points if p.get("median_ns", 0) > 0]
    w = [1.0 / (x * x) for x in t]
    sw = sum(w)
    mn = sum(wi * ni for wi, ni in zip(w, n)) / sw
    mt = sum(wi * ti for wi, ti in zip(w, t)) / sw
    snn = sum(wi * (ni - mn) ** 2 for wi, ni in zip(w, n))
    snt = sum(wi * (ni - mn) * (ti - mt) for wi, ni, ti in zip(w, n, t))
    slope = snt / snn
    a = mt - slope * mn
    rss = sum(((ti - a - slope * ni) / ti) ** 2 for ni, ti in zip(n, t))
    return math.sqrt(rss / len(n)), a, slope


def main():
    r = json.load(open(sys.argv[1]))
    rms, a, slope = free_rms(r["points"])
    print(f"{r['transport']} {r['mode']}: free line alpha {a:.0f} ns, "
          f"{slope:.4f} ns/B, rms relative residual {100 * rms:.1f}% "
          f"({'does not fit' if rms > 0.15 else 'fits'} at 15%)")
    if len(sys.argv) > 2:
        html = open(sys.argv[2]).read()
        shown = re.findall(r"<td class=num>([0-9.]+)%</td></tr>", html)
        print(f"wulf report: segment rms {', '.join(s + '%' for s in shown)}; "
              f"'does not fit' {'shown' if 'does not fit' in html else 'not shown'}")


if __name__ == "__main__":
    main()
