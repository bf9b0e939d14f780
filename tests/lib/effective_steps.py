#!/usr/bin/env python3
"""effective_steps.py RUN_DIR: prints "step lr loss grad_norm" per step index of a run folder's
events files, a later attempt's row replacing an earlier one's (as the store's superseded rows
do), so the series is the one that led to the final weights. The one copy the trainer and the
integration tests share.

Attempts are read in the order they ran: events/<job>.<restart>[.<in-job seq>].jsonl sorted by
job id, then restart count, then in-job sequence, each as a number (a sort of the names would put
restart 10 before restart 2, and job 100 before job 99)."""
import glob
import json
import os
import sys


def attempt_order(path):
    parts = os.path.basename(path)[: -len(".jsonl")].split(".")
    job = parts[0]
    seq = int(parts[2]) if len(parts) > 2 else 0
    # Numeric job ids before any other (the trainer's own "local" outside SLURM).
    return ((0, int(job), "") if job.isdigit() else (1, 0, job), int(parts[1]), seq)


def main(run_dir):
    rows = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "events", "*.jsonl")), key=attempt_order):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("type") == "step":
                    rows[r["step"]] = (repr(r["lr"]), repr(r["loss"]), repr(r["grad_norm"]))
    for s in sorted(rows):
        print(s, *rows[s])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: effective_steps.py RUN_DIR")
    main(sys.argv[1])
