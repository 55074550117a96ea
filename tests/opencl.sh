#!/bin/sh
# opencl: the OpenCL provider's whole life through the dpd command, on whatever OpenCL device the
# ICD loader finds (PoCL, a real OpenCL device on the CPU, in CI): the pack built by
# scripts/pack.sh, installed with the helper probe (a real model on the device), listed; a quick
# GRU PA and a quick DPD trained on --provider opencl with the same metrics as cpu, dpd parity
# within 1e-5, a bitwise rerun, a resume equal to a straight run; the fallback cases (1 no pack,
# 3 a validation in progress, 4 a device that cannot activate, 5 a device failure during a run)
# and batch back-off with the real provider (DPD_OPENCL_FAIL and DPD_OPENCL_NOMEM, read by the
# test build only); then the pack removed. Case 2 (the active pack changed under a running
# studio) is tests/studio.py's providers_restart. Prints "RESULT opencl passed failed skipped".
# Usage: tests/opencl.sh BUILD
B=${1:-build}
DPD=$B/dpd
passed=0; failed=0; skipped=0
check() { if eval "$1"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $2"; fi; }
skip() { skipped=$((skipped + 1)); echo "SKIP opencl: $1"; }
done_() { echo "RESULT opencl $passed $failed $skipped"; exit $([ $failed -eq 0 ]); }
[ -f "$B/opencl/libdpd-opencl.so" ] || { skip "the OpenCL provider is not built (no OpenCL headers or ICD loader: scripts/deps.sh)"; done_; }
if ! command -v clinfo >/dev/null 2>&1 && [ ! -d /etc/OpenCL/vendors ]; then
    skip "no OpenCL ICD installed (pocl-opencl-icd)"; done_
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data"
PACKS="$XDG_DATA_HOME/dpd/packs"
V=$(sed -n 's/^#define DPD_VERSION "\(.*\)"/\1/p' include/dpd/dpd.h)
maxdev() { awk -F, 'NR == FNR { if (FNR > 1) { a[FNR] = $1; b[FNR] = $2 } next }
    FNR > 1 { d = $1 - a[FNR]; if (d < 0) d = -d; if (d > m) m = d; d = $2 - b[FNR]; if (d < 0) d = -d; if (d > m) m = d }
    END { printf "%.3g", m + 0 }' "$1" "$2"; }
tensors() { python3 -c 'import sys,json,struct; b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[:8])[0]; sys.stdout.buffer.write(b[8+n:])' "$1"; }

"$DPD" synth --out "$T/d" --seed 2 >/dev/null
# case 1: no pack installed
"$DPD" train-pa --data "$T/d" --preset quick --provider opencl --out "$T/x" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "no opencl pack is installed" "$T/err"' "fallback case 1: --provider opencl without a pack is refused, saying so ($(head -c 200 "$T/err"))"

# the release pack: built, installed with the helper probe, listed, ranked below cpu
BUILD=$B scripts/pack.sh opencl "$B/opencl/libdpd-opencl.so" "$T/dist" >"$T/pk" 2>"$T/err"
PK=$(cat "$T/pk")
check '[ -f "$PK" ] && [ -f "$PK.sha256" ] && tar -xOzf "$PK" pack.json | grep -q "\"provider\": \"opencl\""' "scripts/pack.sh opencl builds the archive with pack.json and its .sha256"
NEEDED=$(readelf -d "$B/opencl/libdpd-opencl.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -e '^lib[a-z]*san\.' | tr '\n' ' ')
check 'echo "$NEEDED" | grep -q libOpenCL.so.1 && ! echo "$NEEDED" | tr " " "\n" | grep -v -e "^libOpenCL\.so\.1$" -e "^libm\.so\.6$" -e "^libc\.so\.6$" -e "^$" | grep -q .' \
    "the provider library links only the OpenCL ICD loader and libc (NEEDED: $NEEDED)"
"$DPD" pack install "$PK" >"$T/out" 2>"$T/err"; rc=$?
if [ $rc -ne 0 ] && grep -q "cannot activate on this machine" "$T/err"; then
    skip "no OpenCL device here: $(head -c 300 "$T/err")"; done_
fi
check '[ $rc -eq 0 ] && grep -q "installed and active: opencl-$V" "$T/out" && "$DPD" pack verify "opencl-$V" >/dev/null' \
    "the opencl pack installs (the helper probe ran a model on the device) and verifies ($(head -c 300 "$T/err"))"
"$DPD" providers >"$T/prov" 2>&1
check 'grep -q "opencl: .*opencl-$V" "$T/prov" && grep -q "device 0: .*(.*)" "$T/prov" && grep -q "^active: cpu (cpu: opencl ranks below cpu" "$T/prov"' \
    "dpd providers lists the OpenCL platform's devices; auto keeps cpu above an OpenCL CPU device ($(tr '\n' '|' <"$T/prov"))"

# training on the device: the same metrics as cpu, a bitwise rerun, a resume equal to a straight run
pa() { "$DPD" train-pa --data "$T/d" --preset quick --no-plots --json "$@"; }
pa --provider opencl --out "$T/o1" >"$T/o1.json" 2>"$T/err"; rc=$?
pa --provider cpu --out "$T/c1" >"$T/c1.json" 2>/dev/null
pa --provider opencl --out "$T/o2" >/dev/null 2>&1
RUN=$(ls -d "$T"/o1/d/train_pa/* 2>/dev/null | head -n 1); REL=${RUN#"$T/o1/"}
nm() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.2f %.2f" % (j["val"]["NMSE"], j["test"]["NMSE"]))' "$1"; }
check '[ $rc -eq 0 ] && grep -q "\"provider\":\"opencl (opencl from" "$T/o1.json" && [ "$(nm "$T/o1.json")" = "$(nm "$T/c1.json")" ]' \
    "a quick GRU PA on --provider opencl: the cpu's NMSE to 0.01 dB ($(nm "$T/o1.json") vs $(nm "$T/c1.json"); $(tail -c 200 "$T/err"))"
# The work-group sizes PoCL compiled the layered kernels at, two steps of GRU-23 compiled into a
# cache of their own (PoCL's: PROGRAM/KERNEL/SIZE-1-1-...): every data-parallel kernel at a power of
# two up to 64 (provider.c's cpu_group; left to choose, PoCL took a divisor of the work, often all
# of it: 3200); the recurrent and AdamW kernels set their own.
mkdir "$T/pocl"
POCL_CACHE_DIR="$T/pocl" "$DPD" bench train --provider opencl --kernels ref --steps 2 >/dev/null 2>&1
sizes=$(find "$T/pocl" -mindepth 4 -maxdepth 4 -type d -name '*-1-1*' 2>/dev/null | awk -F/ '{ split($NF, g, "-"); print $(NF-1), g[1] }' |
    grep -v -e '^gru_fwd ' -e '^gru_bwd ' -e '^lstm_fwd ' -e '^lstm_bwd ' -e '^adamw ' -e '_train ' -e '_eval ' | sort -u)
if [ -z "$sizes" ]; then
    skip "no PoCL kernel cache to read the work-group sizes from (another OpenCL platform, or another PoCL cache layout)"
else
    bad=$(echo "$sizes" | awk '{ n = $2; while (n > 1 && n % 2 == 0) n /= 2; if (n != 1 || $2 > 64) print }' | tr '\n' ' ')
    check '[ -z "$bad" ] && echo "$sizes" | grep -q "^dense_fwd "' \
        "PoCL ran the data-parallel kernels in work-groups of a power of two up to 64 (not so: ${bad:-no dense_fwd})"
fi
tensors "$T/o2/$REL/last.safetensors" >"$T/o2.t" 2>/dev/null
check '[ -s "$T/o2.t" ] && tensors "$T/o1/$REL/last.safetensors" | cmp -s - "$T/o2.t"' \
    "the same run twice on the device is bitwise identical"
pa --provider opencl --out "$T/r" --epochs 2 >/dev/null 2>&1
"$DPD" train-pa --resume "$T/r/$REL" --epochs 4 --provider opencl --no-plots >/dev/null 2>"$T/err"
pa --provider opencl --out "$T/s" --epochs 4 >/dev/null 2>&1
check 'tensors "$T/r/$REL/last.safetensors" >"$T/r.t" && tensors "$T/s/$REL/last.safetensors" | cmp -s - "$T/r.t"' \
    "a resumed run on the device equals a straight one bit for bit (the optimizer state through get_state/set_state) ($(tail -c 200 "$T/err"))"
"$DPD" train-dpd --data "$T/d" --pa "$RUN" --preset quick --no-plots --json --provider opencl --out "$T/o1" >"$T/od.json" 2>"$T/err"; rc=$?
"$DPD" train-dpd --data "$T/d" --pa "$RUN" --preset quick --no-plots --json --provider cpu --out "$T/c1" >"$T/cd.json" 2>/dev/null
check '[ $rc -eq 0 ] && grep -q "\"provider\":\"opencl (opencl from" "$T/od.json" && [ "$(nm "$T/od.json")" = "$(nm "$T/cd.json")" ]' \
    "a quick DPD through the frozen PA on --provider opencl: the cpu's NMSE to 0.01 dB ($(nm "$T/od.json") vs $(nm "$T/cd.json"); $(tail -c 200 "$T/err"))"
"$DPD" parity --model "$RUN" --data "$T/d" --providers cpu,opencl --json >"$T/par.json" 2>"$T/err"
check 'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); p=j[\"providers\"][1]; sys.exit(not (j[\"compared\"] == 1 and p[\"provider\"] == \"opencl\" and p[\"max_rel\"] <= 1e-5))" "$T/par.json"' \
    "dpd parity cpu vs opencl within 1e-5 ($(head -c 400 "$T/par.json") $(head -c 200 "$T/err"))"

# case 3: a validation in progress
(flock "$PACKS/.validate.lock" sleep 3) &
sleep 0.5
"$DPD" eval --data "$T/d" --split val --model "$RUN" --provider opencl >/dev/null 2>"$T/err"; rc=$?
wait
check '[ $rc -eq 1 ] && grep -q "validation in progress, try again" "$T/err"' "fallback case 3: a validation in progress refuses --provider opencl ($(head -c 200 "$T/err"))"

# the test build's pack: a device that fails mid-run, and one that runs out of memory
"$DPD" pack remove "opencl-$V" >/dev/null
BUILD=$B scripts/pack.sh opencl "$B/opencl/test/libdpd-opencl.so" "$T/dist2" >"$T/pk2" 2>/dev/null
"$DPD" pack install "$(cat "$T/pk2")" >/dev/null 2>"$T/err"
"$DPD" config set provider opencl >/dev/null
"$DPD" run --model "$RUN" --input "$T/d/test_input.csv" --output "$T/bo0.csv" --provider cpu >/dev/null 2>&1
DPD_OPENCL_NOMEM=2 "$DPD" run --model "$RUN" --input "$T/d/test_input.csv" --output "$T/bo.csv" --section 500 --batch 8 \
    --provider opencl >/dev/null 2>"$T/err"; rc=$?
bod=$(maxdev "$T/bo.csv" "$T/bo0.csv")
check '[ $rc -eq 0 ] && awk "BEGIN { exit !($bod <= 1e-5) }"' \
    "batch back-off on the device: batches above 2 fail for memory, the run halves and finishes, equal to cpu within 1e-5 ($bod; $(head -c 200 "$T/err"))"
DPD_OPENCL_FAIL=40 "$DPD" train-pa --data "$T/d" --preset quick --no-plots --out "$T/f" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "opencl failed during the run: .*the device is not available" "$T/err" && "$DPD" config show | grep -qx "provider cpu"' \
    "fallback case 5: a device failure during a run ends it with an error and moves the preference to cpu ($(tail -c 300 "$T/err"))"
"$DPD" config set provider auto >/dev/null
# case 4: no OpenCL platform (the ICD loader pointed at an empty vendor directory)
mkdir -p "$T/novendors"
OCL_ICD_VENDORS="$T/novendors" "$DPD" providers >"$T/prov4" 2>&1
OCL_ICD_VENDORS="$T/novendors" "$DPD" eval --data "$T/d" --split val --model "$RUN" --provider opencl >/dev/null 2>"$T/err"; rc=$?
check 'grep -q "opencl: .*no OpenCL device" "$T/prov4" && [ $rc -eq 1 ] && grep -q "no OpenCL device" "$T/err"' \
    "fallback case 4: with no platform the provider is not usable, says why, and --provider opencl is refused ($(tr '\n' '|' <"$T/prov4" | head -c 300); $(head -c 200 "$T/err"))"
"$DPD" pack remove "opencl-$V" >/dev/null
OCL_ICD_VENDORS="$T/novendors" "$DPD" pack install "$(cat "$T/pk2")" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "cannot activate on this machine" "$T/err" && "$DPD" config show | grep -qx "provider cpu"' \
    "fallback case 4: installing where no device can activate sets the preference to cpu ($(head -c 200 "$T/err"))"
"$DPD" pack remove "opencl-$V" >/dev/null 2>&1
check '[ ! -e "$PACKS/opencl-$V" ] && [ ! -L "$PACKS/active-opencl" ]' "dpd pack remove"
done_
