#!/usr/bin/env bash
# Builds and runs the trainer's CPU tests against a real libtorch 2.x: Debian trixie's libtorch-dev
# (2.6, CPU) in a trixie chroot, since its glibc is newer than the build machine's. It is how the
# code for libtorch >= 2 (c10d::Backend groups over Gloo, autocast, recompute, the SDPA bench path)
# is run, not only compiled (scripts/torch_api_check.sh), before it meets the GPU machine.
#
#   sudo bash scripts/torch2_runtime_check.sh [--root DIR] [--jobs N] [--only LIST] [--mirror URL]
#
# --root: the chroot (default /var/tmp/baton-trixie), made with debootstrap on the first run and
# reused after; its build folder (/build-torch2 inside) is kept, so a second run rebuilds only what
# changed. --jobs: build parallelism (default: nproc). --only: a comma list among build, unit,
# torch-tests, tools, shard, resume, bench-cases, gpu-check-dry, upstream (build is implied).
# --mirror: the Debian mirror for debootstrap (default deb.debian.org).
# Needs root (debootstrap, chroot, bind mounts) and debootstrap on the host. The checkout is bound
# read-only at /src in the chroot; the mounts are undone on exit. Logs: DIR/logs/<step>.log.
# Exit 0 when every step that ran passed, 1 otherwise, 2 on a usage or set-up error.
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=/var/tmp/baton-trixie jobs=$(nproc) only="" mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
  case $1 in
    --root) root=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --only) only=$2; shift ;;
    --mirror) mirror=$2; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "torch2_runtime_check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
die() { echo "torch2_runtime_check.sh: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || die "no debootstrap: apt-get install debootstrap"
selected() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

# The build and test dependencies (tests/CMakeLists.txt, CMakeLists.txt; the orchestrator is off).
# python3-numpy: ckpt_state.py; procps: pkill in resume_test.sh; git: gpu_check.sh's metadata.
packages=(g++ cmake ninja-build libtorch-dev libgloo-dev libyaml-cpp-dev nlohmann-json3-dev
  libcli11-dev libxxhash-dev libsnappy-dev libzstd-dev libgtest-dev python3 python3-numpy procps
  git ca-certificates)
# Optional: the upstream parity fixtures need torch in Python.
optional=(python3-torch)

t_start=$(date +%s)
root=$(realpath -m "$root")
logs=$root/logs

# ---- the chroot ---------------------------------------------------------------------------------
if [ ! -x "$root/usr/bin/apt-get" ] || [ ! -f "$root/.baton-base" ]; then
  [ -e "$root" ] && [ ! -f "$root/.baton-base" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ] &&
    die "$root exists but is not a finished chroot of this script; remove it (after checking nothing is mounted under it) or pick another --root"
  echo "debootstrap trixie (minbase) into $root ..."
  mkdir -p "$root"
  debootstrap --variant=minbase trixie "$root" "$mirror" >"/tmp/baton-debootstrap.log" 2>&1 ||
    die "debootstrap failed, see /tmp/baton-debootstrap.log"
  touch "$root/.baton-base"
fi
mkdir -p "$logs" "$root/src" "$root/build-torch2"

mounts=()
# Undone in reverse order on any exit; a mount left from an interrupted run is undone first.
unmount_all() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}" 2>/dev/null
  done
  mounts=()
}
trap unmount_all EXIT
trap 'exit 130' INT TERM
for m in "$root/src" "$root/dev" "$root/proc"; do
  mountpoint -q "$m" && { umount -R "$m" 2>/dev/null || umount -l "$m"; }
done
mount -t proc proc "$root/proc" && mounts+=("$root/proc") || die "cannot mount proc"
# /dev with /dev/shm (Gloo, OpenMP) and /dev/pts; rslave so unmounting never reaches the host's.
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounts+=("$root/dev") ||
  die "cannot bind /dev"
mount --bind "$src" "$root/src" && mounts+=("$root/src") || die "cannot bind $src"
mount -o remount,bind,ro "$root/src" || die "cannot make $root/src read-only"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
# Gloo's default device resolves the host name; the chroot's /etc/hosts must know it.
grep -qw "$(hostname)" "$root/etc/hosts" 2>/dev/null || echo "127.0.1.1 $(hostname)" >>"$root/etc/hosts"

in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TMPDIR=/tmp DEBIAN_FRONTEND=noninteractive "$@"
}

want="${packages[*]} | ${optional[*]}"
if [ "$(cat "$root/.baton-packages" 2>/dev/null)" != "$want" ]; then
  echo "installing the build and test packages in the chroot ..."
  in_root apt-get update >"$logs/apt.log" 2>&1 &&
    in_root apt-get install -y --no-install-recommends "${packages[@]}" >>"$logs/apt.log" 2>&1 ||
    die "apt-get in the chroot failed, see $logs/apt.log"
  in_root apt-get install -y --no-install-recommends "${optional[@]}" >>"$logs/apt.log" 2>&1 ||
    echo "note: ${optional[*]} did not install; the upstream test will be skipped"
  echo "$want" >"$root/.baton-packages"
fi
torch_v=$(in_root dpkg-query -W -f '${Version}' libtorch-dev 2>/dev/null)
echo "chroot ready: $root, libtorch-dev $torch_v ($(($(date +%s) - t_start)) s)"

# ---- steps --------------------------------------------------------------------------------------
names=() results=() seconds=()
failed=0
# step NAME COMMAND...: runs COMMAND in the chroot, its output in $logs/NAME.log.
step() {
  local name=$1; shift
  selected "$name" || [ "$name" = build ] || return 0
  local t0=$(date +%s) rc=0
  in_root bash -c "$*" >"$logs/$name.log" 2>&1 || rc=$?
  local s=$(($(date +%s) - t0)) r=pass
  [ $rc -eq 0 ] || { r="FAIL (exit $rc)"; failed=1; }
  names+=("$name") results+=("$r") seconds+=("$s")
  printf '%-14s %-16s %5ss  %s\n' "$name" "$r" "$s" "$(tail -1 "$logs/$name.log" | cut -c1-100)"
  return $rc
}

B=/build-torch2
bt=$B/trainer/baton-train
bb=$B/bench/baton-bench-trainer
if ! step build "cmake -S /src -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATON_BUILD_ORCHESTRATOR=OFF \
    -DBATON_BUILD_TESTS=ON && cmake --build $B --target baton-train baton_torch_tests baton_unit_tests \
    baton-bench-trainer -- -j$jobs"; then
  echo "build failed: $logs/build.log"
  exit 1
fi
step unit "$B/tests/unit/baton_unit_tests --gtest_brief=1"
step torch-tests "$B/tests/unit/baton_torch_tests --gtest_brief=1"
step tools "bash /src/tests/trainer/tools_test.sh $bt"
step shard "bash /src/tests/trainer/shard_test.sh $bt"
step resume "bash /src/tests/trainer/resume_test.sh $bt"
step bench-cases "bash /src/tests/bench/trainer_cases_test.sh $bb $bt"
step gpu-check-dry "rm -rf /tmp/gpu-check-out && bash /src/scripts/gpu_check.sh --dry-run --bin-dir $B --out /tmp/gpu-check-out; rc=\$?; cat /tmp/gpu-check-out/report.md; exit \$rc"
if selected upstream; then
  if in_root python3 -c 'import torch' >/dev/null 2>&1; then
    step upstream "bash /src/tests/trainer/upstream_test.sh $bt"
  else
    names+=(upstream) results+=("skipped (no python3-torch)") seconds+=(0)
  fi
fi

# ---- figures ------------------------------------------------------------------------------------
if selected bench-cases; then
  figs=$(in_root bash -c "for p in dense:float32 sdpa:float32 sdpa:bfloat16; do
      $bb attention --tokens 2048 --path \${p%:*} --dtype \${p#*:} --check 2>&1 | tail -1; done" |
    python3 -c '
import json, sys
for l in sys.stdin:
    try:
        r = json.loads(l)
        print("attention %s vs sparse, 1920 tokens %s: max_rel_diff %.3e (%.0f ms)" % (r["path"], r["dtype"], r["max_rel_diff"], r["seconds"] * 1e3))
    except (ValueError, KeyError):
        print("attention: " + l.strip())
')
fi

echo
echo "libtorch-dev $torch_v (trixie chroot $root), source $src"
for i in "${!names[@]}"; do printf '  %-14s %-28s %5ss\n' "${names[$i]}" "${results[$i]}" "${seconds[$i]}"; done
[ -n "${figs:-}" ] && echo "$figs" | sed 's/^/  /'
echo "total $(($(date +%s) - t_start)) s; logs in $logs"
exit $failed
