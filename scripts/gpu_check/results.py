#!/usr/bin/env python3
"""The bookkeeping of scripts/gpu_check.sh: reads what each check printed, keeps one JSON line per
check in results.jsonl, and renders report.md from it. Standard library only: it runs on the GPU
machine's Python as well as on Debian's.

  results.py record RESULTS --check C --status S --seconds N [--figures JSON] [--note TEXT]
  results.py gtest LOG                  -> {"passed": n, "failed": n, "failed_tests": [...]}
  results.py tensor-diff LOG            -> {"tensors": n, "bit_identical": n, "max_rel": x, "worst": name}
  results.py jsonl FILE                 -> [every JSON object printed in FILE, one per line]
  results.py report RESULTS META.json   -> report.md on stdout
"""
import json
import re
import sys

STATUS_MARK = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skipped": "skipped", "info": "-"}


def gtest(path):
    text = open(path, errors="replace").read()
    ok = re.findall(r"^\[       OK \] (\S+)", text, re.M)
    failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+\.\S+?)(?: \(|,|$)", text, re.M)))
    return {"passed": len(ok), "failed": len(failed), "failed_tests": failed}


def tensor_diff(path):
    # The summary line of `baton-train tensor-diff`, in its --max-rel or its --bitwise form.
    rel = re.compile(r"(\d+) tensors, (\d+) bit-identical; max relative difference (\S+)(?: in (\S+))?")
    bitwise = re.compile(r"(\d+) tensors, (\d+) bit-identical, (\d+) differ \(bitwise\)")
    found = None
    for line in open(path, errors="replace"):
        for pat in (rel, bitwise):
            m = pat.search(line)
            if m:
                found = (pat, m)
    if not found:
        return {"error": "no tensor-diff summary in " + path}
    pat, m = found
    r = {"tensors": int(m.group(1)), "bit_identical": int(m.group(2))}
    if pat is rel:
        r.update(max_rel=float(m.group(3)), worst=m.group(4) or "")
    else:
        r["differ"] = int(m.group(3))
    return r


def jsonl(path):
    rows = []
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def record(argv):
    import argparse
    p = argparse.ArgumentParser(prog="results.py record")
    p.add_argument("results")
    p.add_argument("--check", required=True)
    p.add_argument("--status", required=True, choices=sorted(STATUS_MARK))
    p.add_argument("--seconds", type=float, default=0.0)
    p.add_argument("--figures", default="{}")
    p.add_argument("--note", default="")
    a = p.parse_args(argv)
    try:
        figures = json.loads(a.figures) if a.figures else {}
    except ValueError as e:
        figures = {"unparsed": a.figures[:2000], "parse_error": str(e)}
    row = {"check": a.check, "status": a.status, "seconds": round(a.seconds, 1),
           "figures": figures, "note": a.note}
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")


def fmt(x):
    if isinstance(x, float):
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
            return "%.3g" % x
        return "%.4g" % x
    if isinstance(x, (list, dict)):
        return json.dumps(x)
    return str(x)


def report(results_path, meta_path):
    meta = json.load(open(meta_path))
    rows = jsonl(results_path)
    out = []
    mode = "dry run on the CPU (no GPU: the same steps, small sizes)" if meta.get("dry_run") \
        else "GPU run"
    out.append("# baton GPU check: %s" % mode)
    out.append("")
    for k in ("date", "commit", "machine", "gpu", "torch", "nvcc", "cmake", "compiler"):
        if meta.get(k):
            out.append("- %s: %s" % (k, meta[k]))
    out.append("")
    out.append("| check | result | seconds | key figures |")
    out.append("|---|---|---|---|")
    for r in rows:
        f = r.get("figures", {})
        key = f.get("summary") or ", ".join("%s %s" % (k, fmt(v)) for k, v in list(f.items())[:4])
        out.append("| %s | %s | %s | %s |" % (r["check"], STATUS_MARK.get(r["status"], r["status"]),
                                             r.get("seconds", ""), key.replace("|", "/")))
    out.append("")
    for r in rows:
        out.append("## %s: %s" % (r["check"], STATUS_MARK.get(r["status"], r["status"])))
        if r.get("note"):
            out.append("")
            out.append(r["note"])
        f = r.get("figures", {})
        if f:
            out.append("")
            for k, v in f.items():
                if k == "summary":
                    continue
                out.append("- %s: %s" % (k, fmt(v)))
        out.append("")
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    out.append("Totals: " + ", ".join("%s %d" % (k, v) for k, v in sorted(counts.items())))
    out.append("")
    out.append("Raw logs: logs.tar.gz beside this report; every figure as JSON: results.jsonl.")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "record":
        record(args)
    elif cmd == "gtest":
        print(json.dumps(gtest(args[0])))
    elif cmd == "tensor-diff":
        print(json.dumps(tensor_diff(args[0])))
    elif cmd == "jsonl":
        print(json.dumps(jsonl(args[0])))
    elif cmd == "report":
        sys.stdout.write(report(args[0], args[1]))
    else:
        sys.exit("results.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
