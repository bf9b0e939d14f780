# Sourced by the browser tests (browser_*_test.sh): the checks that chromium and playwright-core
# are there, a temp folder removed on exit with every process started through it, and
# `baton serve` on a free port. A test sets `test_name`, `baton` and `node_modules` first.
#   browser_setup            check the tools; make $tmp and $BATON_HOME; trap the clean-up
#   track_pid PID            kill PID at exit
#   start_serve ARGS...      `baton serve --port 0 ARGS` into $tmp/serve.log; sets $url
chromium=${BATON_CHROMIUM:-/usr/bin/chromium}
tracked_pids=""

browser_cleanup() {
  for p in $tracked_pids; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}

browser_setup() {
  [ -x "$chromium" ] || { echo "$test_name: $chromium not found (apt-get install chromium)"; exit 1; }
  [ -d "$node_modules/playwright-core" ] ||
    { echo "$test_name: $node_modules/playwright-core missing (build target baton_web_test_npm)"; exit 1; }
  tmp=$(mktemp -d)
  trap browser_cleanup EXIT
  export BATON_HOME=$tmp/home
  mkdir -p "$BATON_HOME"
}

track_pid() { tracked_pids="$tracked_pids $1"; }

start_serve() {
  "$baton" serve --port 0 "$@" >"$tmp/serve.log" 2>&1 &
  local pid=$!
  track_pid "$pid"
  url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/serve.log" | head -1 || true)
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { echo "$test_name: baton serve did not start"; cat "$tmp/serve.log"; exit 1; }
}
