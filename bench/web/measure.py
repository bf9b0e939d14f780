#!/usr/bin/env python3
"""Times GET requests against a running `baton serve`: median / p95 latency and payload size.

usage: measure.py [--line LABEL] BASE_URL REPEATS PATH [PATH ...]
With --line, each path is followed by one line "LABEL: p50 A ms, p95 B ms".
"""
import json
import statistics
import sys
import time
import urllib.request


def main():
    args = sys.argv[1:]
    label = None
    if args[:1] == ["--line"]:
        label, args = args[1], args[2:]
    base, repeats, paths = args[0].rstrip("/"), int(args[1]), args[2:]
    for path in paths:
        times, size, body = [], 0, b""
        for i in range(repeats + 1):
            t0 = time.perf_counter()
            with urllib.request.urlopen(base + path) as r:
                body = r.read()
            if i > 0:  # the first request warms the page cache and the connection pool
                times.append(time.perf_counter() - t0)
            size = len(body)
        times.sort()
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        try:
            doc = json.loads(body)
        except ValueError:  # /metrics is text
            doc = {}
        extra = ""
        if "series" in doc:
            pts = sum(v["points"] for v in doc["series"].values())
            extra = f"rows {doc['rows']:,} (+{doc['superseded_rows']:,} superseded), points returned {pts:,}"
        elif "runs" in doc:
            extra = f"runs returned {len(doc['runs'])} of {doc['page']['total']:,}"
        print(f"{path}\n    median {statistics.median(times) * 1000:8.1f} ms   p95 {p95 * 1000:8.1f} ms   "
              f"payload {size / 1024:8.1f} KiB   {extra}")
        if label:
            print(f"{label}: p50 {statistics.median(times) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms")


if __name__ == "__main__":
    main()
