# Sourced by every bench script: states the load the bench starts under and warns when the
# machine is not idle, so a figure taken while other work shared the CPUs is never mistaken for
# an idle one. Prints the load averages, the CPU time used by other processes over a short
# sample, and the busiest of them.
#   bench_machine_load [SECONDS]   (default BATON_BENCH_LOAD_SAMPLE_S or 2)
# Idle means: 1-minute load average below 0.5 and no other process above 10 % of one CPU
# during the sample. Needs python3 and /proc (Linux); never fails the bench.

bench_machine_load() {
  local secs=${1:-${BATON_BENCH_LOAD_SAMPLE_S:-2}}
  python3 - "$secs" "$$" <<'PY' || echo "load: could not be read (no /proc?)"
import os, sys, time

secs, me = float(sys.argv[1]), int(sys.argv[2])
hz = os.sysconf("SC_CLK_TCK")
ncpu = os.cpu_count() or 1


def procs():
    """pid -> (comm, ppid, utime + stime ticks) of every readable process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1 : s.rindex(")")]
        rest = s[s.rindex(")") + 2 :].split()
        out[int(d)] = (comm, int(rest[1]), int(rest[11]) + int(rest[12]))
    return out


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
        return " ".join(w.decode(errors="replace") for w in words if w)[:90]
    except OSError:
        return ""


a = procs()
t0 = time.monotonic()
time.sleep(secs)
b = procs()
dt = time.monotonic() - t0
mine = {me, os.getpid(), os.getppid()}
busy = []
for pid, (comm, ppid, ticks) in b.items():
    if pid in mine or ppid in mine or pid not in a:
        continue
    pct = 100.0 * (ticks - a[pid][2]) / hz / dt
    if pct >= 1.0:
        busy.append((pct, pid, comm))
busy.sort(reverse=True)
load1, load5, load15 = os.getloadavg()
others = sum(p for p, _, _ in busy)
print(f"load: averages {load1:.2f} / {load5:.2f} / {load15:.2f} (1 / 5 / 15 min) on {ncpu} CPUs; "
      f"other processes used {others:.0f} % of one CPU over {dt:.1f} s")
for pct, pid, comm in busy[:5]:
    print(f"  {pct:5.0f} %  pid {pid:<7} {comm:<16} {cmdline(pid)}")
if load1 >= 0.5 or any(p >= 10.0 for p, _, _ in busy):
    print("WARNING: the machine is not idle: absolute figures below are not comparable to an idle "
          "run; trust only the ratios of cases measured side by side")
else:
    print("load: the machine is idle")
PY
}
