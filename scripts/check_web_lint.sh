#!/usr/bin/env bash
# Fails (exit 1) when eslint finds a problem in the web UI's JavaScript (web/*.js) or the browser
# tests' drivers (tests/web/*.cjs), with the rules of scripts/web_lint/eslint.config.mjs; each
# problem is named by file:line. eslint itself comes from npm at the versions of
# scripts/web_lint/package-lock.json, installed once into build/web_lint. Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "check_web_lint: npm is not installed (scripts/setup.sh installs it)" >&2; exit 69; }
dir=${BATON_BUILD_DIR:-build}/web_lint
mkdir -p "$dir"
if ! cmp -s scripts/web_lint/package-lock.json "$dir/package-lock.json" || [ ! -x "$dir/node_modules/.bin/eslint" ]; then
  cp scripts/web_lint/package.json scripts/web_lint/package-lock.json "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
# The config goes beside the packages it imports; its patterns are relative to here.
cp scripts/web_lint/eslint.config.mjs "$dir/"
if ! "$dir/node_modules/.bin/eslint" --config "$dir/eslint.config.mjs" \
    --max-warnings 0 web/*.js tests/web/*.cjs; then
  echo "check_web_lint: eslint found problems (above); fix them in the named files" >&2
  exit 1
fi
echo "check_web_lint: the web UI's JavaScript passes eslint"
