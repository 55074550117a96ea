#!/bin/sh
# Black-box tests of `dpd serve` (docs/studio.md): tests/studio.py against BUILD_DIR/dpd.
# Usage: tests/studio.sh [BUILD_DIR] [TEST_NAME...]. Prints "RESULT studio <passed> <failed> <skipped>";
# exits with tests/studio.py's status. STUDIO_QUICK=1 skips the slow tests (tests/studio.py says which).
BUILD=${1:-build}
[ $# -gt 0 ] && shift
if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP studio: python3 not found"
    echo "RESULT studio 0 0 1"
    exit 0
fi
PYTHONDONTWRITEBYTECODE=1 exec python3 "$(dirname "$0")/studio.py" "$BUILD/dpd" "$@"
