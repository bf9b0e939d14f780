#!/usr/bin/env python3
"""The series endpoint's two query paths side by side against a running `baton serve`: the
rollups (default) and the row path (source=rows, what every request did before the rollups).
Checks that both answer the same points, then prints median / p95 of each and the ratio.

usage: compare_paths.py BASE_URL REPEATS PATH [PATH ...]   (PATH without source=)
"""
import json
import statistics
import sys
import time
import urllib.request


def fetch(url):
    t0 = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def timed(url, repeats):
    fetch(url)  # warm-up: page cache, connection pool
    times = sorted(fetch(url)[0] for _ in range(repeats))
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))]


def main():
    base, repeats, paths = sys.argv[1].rstrip("/"), int(sys.argv[2]), sys.argv[3:]
    print(f"{'request':<78} {'rollups':>16} {'rows (old)':>16} {'speed-up':>9}")
    for path in paths:
        sep = "&" if "?" in path else "?"
        new, old = base + path, base + path + sep + "source=rows"
        a, b = json.loads(fetch(new)[1]), json.loads(fetch(old)[1])
        same = a.get("series") == b.get("series") and a.get("superseded") == b.get("superseded")
        if a.get("source") != "rollups" or not same:
            print(f"{path}: MISMATCH (source {a.get('source')}, same points {same})")
            sys.exit(1)
        (nm, np95), (om, op95) = timed(new, repeats), timed(old, repeats)
        pts = sum(v["points"] for v in a["series"].values())
        print(f"{path:<78} {nm * 1000:7.1f} ms p95 {np95 * 1000:5.0f} {om * 1000:7.1f} ms p95 {op95 * 1000:5.0f}"
              f" {om / nm:8.1f}x   ({pts:,} points, same as the row path)")


if __name__ == "__main__":
    main()
