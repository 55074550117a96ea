#!/bin/sh
# The studio's browser UI in a real headless Chromium (tests/ui/ui.test.mjs, playwright-core from
# npm driving Debian's chromium) against the real `dpd serve --test-workers`.
# Usage: sh tests/ui.sh BUILD_DIR. Prints PASS/FAIL/SKIP lines and `RESULT ui P F S` last; exits
# non-zero on a failure. Without node, npm or chromium it skips (RESULT ui 0 0 1).
set -u
BUILD=${1:-build}
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
here=$(cd "$here" && pwd)
dir=$here/ui
S=$(mktemp -d) # npm's log and the test's output
trap 'rm -rf "$S"' EXIT

skip() {
    echo "SKIP ui: $1"
    echo "RESULT ui 0 0 1"
    exit 0
}

command -v node >/dev/null 2>&1 || skip "node is not installed (apt-get install nodejs)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$major" -ge 18 ] 2>/dev/null || skip "node $major is too old (18 or later)"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
    CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
    [ -n "$CHROMIUM" ] || skip "chromium is not installed (apt-get install chromium)"
fi
if [ ! -x "$BUILD/dpd" ]; then
    echo "FAIL ui: $BUILD/dpd is not built"
    echo "RESULT ui 0 1 0"
    exit 1
fi

# playwright-core, pinned by tests/ui/package-lock.json; installed again when the lock is newer
if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ ! -d "$dir/node_modules/playwright-core" ] ||
    [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    if ! (cd "$dir" && npm ci --no-audit --no-fund) >"$S/npm.log" 2>&1; then
        tail -5 "$S/npm.log"
        skip "npm ci failed in tests/ui (no access to the npm registry?)"
    fi
fi

out=$S/out
to=""
command -v timeout >/dev/null 2>&1 && to="timeout 600"
CHROMIUM=$CHROMIUM $to node "$dir/ui.test.mjs" "$BUILD" >"$out" 2>&1
rc=$?
cat "$out"
if ! tail -n 1 "$out" | grep -q '^RESULT ui '; then
    echo "FAIL ui: the test script stopped early (exit $rc)"
    echo "RESULT ui 0 1 0"
    exit 1
fi
exit $rc
