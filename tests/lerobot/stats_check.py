"""Checks `baton-train lerobot-stats --json` output (one line per episode, on stdin) against a
LeRobot meta/episodes_stats.jsonl: every parquet column's min/max/mean/std/count within 1e-6
(relative to the value's size when it is above 1).

  baton-train lerobot-stats DIR --episode N --json | python3 stats_check.py DIR/meta/episodes_stats.jsonl
"""
import json
import sys


def flat(x):
    if isinstance(x, list):
        return [v for e in x for v in flat(e)]
    return [x]


def main():
    want = {}
    for line in open(sys.argv[1]):
        if line.strip():
            j = json.loads(line)
            want[j["episode_index"]] = j["stats"]
    checked = 0
    for line in sys.stdin:
        got = json.loads(line)
        ep = got["episode_index"]
        for col, s in got["stats"].items():
            ref = want[ep][col]
            for key in ("min", "max", "mean", "std", "count"):
                a, b = flat(s[key]), flat(ref[key])
                if len(a) != len(b):
                    sys.exit(f"episode {ep} {col}.{key}: {len(a)} values, LeRobot has {len(b)}")
                for k, (x, y) in enumerate(zip(a, b)):
                    if abs(x - y) > 1e-6 * max(1.0, abs(y)):
                        sys.exit(f"episode {ep} {col}.{key}[{k}]: {x!r} vs LeRobot's {y!r}")
                    checked += 1
        parquet_cols = set(got["stats"])
        missing = [c for c in want[ep] if c not in parquet_cols and not c.startswith("observation.images")]
        if missing:
            sys.exit(f"episode {ep}: columns {missing} not computed")
    print(f"stats match to 1e-6: {checked} figures")


if __name__ == "__main__":
    main()
