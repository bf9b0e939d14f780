#!/usr/bin/env bash
# Unpacks Debian's prometheus package (for promtool, and the server the metrics tests start on
# 127.0.0.1) into a folder, without installing it: installing would start a system service.
# Prints the folder's usr/bin. Cached: a second call reuses what the first unpacked.
# usage: fetch_prometheus.sh [DIR]   (default ${XDG_CACHE_HOME:-~/.cache}/baton/prometheus)
set -euo pipefail
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/prometheus}
if [ -x "$dir/root/usr/bin/promtool" ]; then
  echo "$dir/root/usr/bin"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
rm -f prometheus_*.deb
apt-get download prometheus >&2 || { echo "fetch_prometheus: apt-get download prometheus failed" >&2; exit 69; }
rm -rf root
dpkg-deb -x prometheus_*.deb root
[ -x root/usr/bin/promtool ] || { echo "fetch_prometheus: no usr/bin/promtool in the package" >&2; exit 69; }
echo "$dir/root/usr/bin"
