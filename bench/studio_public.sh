#!/bin/sh
# The capacity of `dpd serve --public` (bench/studio_public.py says what it measures), on loopback.
# Usage: bench/studio_public.sh [BUILD_DIR] [STREAMS] [SECONDS]   (defaults: build 1000 60)
BUILD=${1:-build}
exec python3 "$(dirname "$0")/studio_public.py" "$BUILD/dpd" "${2:-1000}" "${3:-60}"
