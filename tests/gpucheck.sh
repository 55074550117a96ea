#!/bin/sh
# gpucheck: the device check's dry run on the build machine (no GPU): scripts/gpu-prepare.sh
# gathers the inputs from BUILD into a scratch folder, scripts/gpu-check.sh runs on them, and
# the results file must be what a program can read: every line one JSON object with exactly
# stage, provider, family, hidden (an integer or null), metric and value (a number, true/false or
# text); every stage recorded with a status (without a GPU each device stage "skipped", none
# failed or timed out), the preflight's host line, and the table printed last. Skips (counted)
# where the CUDA libraries were not built (no nvcc, or a sanitized build).
# Usage: tests/gpucheck.sh BUILD
B=${1:-build}
passed=0; failed=0; skipped=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL gpucheck: $*"; }
if [ ! -f "$B/cuda/libdpd-cuda-resident.so" ] || [ ! -f "$B/cuda/check" ]; then
    echo "SKIP gpucheck: $B/cuda has no CUDA libraries (no nvcc, or a sanitized build)"
    echo "RESULT gpucheck 0 0 1"; exit 0
fi
if [ ! -f "${DPD_SHARED:-../shared}/data/opendpd/DPA_200MHz/spec.json" ]; then
    echo "SKIP gpucheck: no ${DPD_SHARED:-../shared}/data/opendpd/DPA_200MHz (the device check's data)"
    echo "RESULT gpucheck 0 0 1"; exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if BUILD=$B GPU_CHECK_INPUTS=$T/gpu GPU_PREPARE_ARCHIVE=0 sh scripts/gpu-prepare.sh >"$T/prep.log" 2>&1; then ok; else bad "gpu-prepare: $(tail -n 3 "$T/prep.log")"; fi
for f in bin/dpd bin/check bin/test_conformance lib/libdpd-cuda-resident.so lib/libdpd-opencl-test.so data/DPA_200MHz/spec.json \
    ckpt/pa_gru23.safetensors; do
    [ -f "$T/gpu/$f" ] || bad "gpu-prepare left out $f"
done
ls "$T"/gpu/dist/dpd-pack-cuda-*.tar.gz "$T"/gpu/dist/dpd-pack-opencl-*.tar.gz >/dev/null 2>&1 && ok ||
    bad "gpu-prepare: a pack is missing: $(ls -R "$T/gpu/dist" | tr '\n' ' ')"
# the prepared folder must not need the build: run from it alone (the binaries with its lib/)
t0=$(date +%s)
GPU_CHECK_INPUTS=$T/gpu GPU_CHECK_JSONL=$T/out.jsonl GPU_CHECK_SECONDS=120 sh scripts/gpu-check.sh >"$T/check.log" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
[ $rc = 0 ] && ok || bad "gpu-check.sh exited $rc: $(tail -n 5 "$T/check.log")"
[ "$secs" -le 60 ] && ok || bad "the dry run took $secs s (no device: each stage should end at once)"
python3 - "$T/out.jsonl" <<'EOF' && ok || bad "the results file (above)"
import json, sys
keys = ["stage", "provider", "family", "hidden", "metric", "value"]
want = ["preflight", "conformance", "steps", "slope", "epochs", "run4", "pack", "gru_check", "opencl"]
status, errs = {}, []
lines = open(sys.argv[1]).read().splitlines()
for n, l in enumerate(lines, 1):
    try:
        o = json.loads(l)
    except ValueError as e:
        errs.append("line %d is not JSON (%s): %s" % (n, e, l)); continue
    if list(o) != keys:
        errs.append("line %d has the keys %s" % (n, list(o))); continue
    if not (o["hidden"] is None or type(o["hidden"]) is int):
        errs.append("line %d: hidden %r" % (n, o["hidden"]))
    if not isinstance(o["value"], (int, float, bool, str)):
        errs.append("line %d: value %r" % (n, o["value"]))
    if o["metric"] == "status":
        status[o["stage"]] = o["value"]
for s in want:
    if s not in status:
        errs.append("stage %s recorded no status" % s)
    elif s != "preflight" and not str(status[s]).startswith("skipped"):
        errs.append("stage %s: %s (no device here: skipped expected)" % (s, status[s]))
if status.get("preflight") != "ok":
    errs.append("preflight: %s" % status.get("preflight"))
if not any(json.loads(l)["metric"] == "cpus" for l in lines):
    errs.append("no preflight cpus line")
if not any(json.loads(l)["metric"] == "seconds" and json.loads(l)["stage"] == "total" for l in lines):
    errs.append("no total seconds line")
for e in errs:
    print("  " + e)
sys.exit(1 if errs else 0)
EOF
# the table: one row a line of the file, after the results header
rows=$(sed -n '/^== results/,$p' "$T/check.log" | tail -n +2 | wc -l)
lines=$(wc -l <"$T/out.jsonl")
[ "$rows" = "$lines" ] && [ "$lines" -gt 0 ] && ok || bad "the table has $rows rows for $lines results"
[ $failed = 0 ] || { echo "-- gpu-check.sh's output:"; tail -n 40 "$T/check.log"; }
echo "RESULT gpucheck $passed $failed $skipped"
[ $failed = 0 ]
