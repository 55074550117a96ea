#!/bin/sh
# The one device run (issue 5 §7): the CUDA GRU's parity and speed check, then the runtime pack
# end to end — install (checksum, bounded extraction, pack.json, helper-process probe on the
# GPU, activation), dpd providers, and dpd parity on DPA_200MHz between cpu and cuda. Prints a
# short table; finishes in well under 8 minutes on one GPU.
#
# Inputs (built on the dev machine and carried, since the device has no package access):
#   build/cuda (check, libdpd-cuda.so), dist/ (make pack-cuda), build/dpd, build/devlibs (the
#   shared libraries build/dpd needs), build/data/DPA_200MHz, build/ckpt/pa_gru23.safetensors,
#   and for the device-resident provider's stage dist/resident/ (scripts/pack.sh cuda
#   build/cuda/libdpd-cuda-resident.so dist/resident).
# Besides the text, every figure goes to $GPU_CHECK_JSONL (default build/gpu-check.jsonl), one
# JSON object a line with stage, provider, family, hidden, metric and value (commit the device's
# as docs/gpu-check-h200.jsonl), and a table of them is printed last. Run without a GPU, the
# device stages fail quickly and say so; the file still has every line the host could make.
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH="$PWD/build/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
W=$(mktemp -d)
export XDG_CONFIG_HOME="$W/config" XDG_DATA_HOME="$W/data"
J=${GPU_CHECK_JSONL:-build/gpu-check.jsonl}
mkdir -p "$(dirname "$J")" && : >"$J"
# rec STAGE PROVIDER FAMILY HIDDEN METRIC VALUE: one line of $J (VALUE: a number, true/false, or text)
rec() {
    case $6 in
    true | false | [0-9]* | -[0-9]* | .[0-9]*) v=$6 ;;
    *) v="\"$(printf '%s' "$6" | sed 's/["\\]/\\&/g')\"" ;;
    esac
    printf '{"stage":"%s","provider":"%s","family":"%s","hidden":%s,"metric":"%s","value":%s}\n' "$1" "$2" "$3" "${4:-null}" "$5" "$v" >>"$J"
}
echo "== host: $(uname -m), $(nproc) CPUs, $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown OS}")"
GPU=$(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null) || GPU=""
echo "${GPU:-nvidia-smi: unavailable}"
rec preflight - - null device "${GPU:-none}"
echo "== CUDA GRU: parity with the CPU reference, graph vs eager, speed"
timeout 300 build/cuda/check || echo "check failed: $?"
echo "== runtime pack"
PACK=$(ls dist/dpd-pack-cuda-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
timeout 120 build/dpd pack install "$PACK" || echo "install failed: $?"
build/dpd pack list
build/dpd pack verify "$(build/dpd pack list | sed -n 's/ (active)//p' | head -n 1)"
build/dpd providers
echo "== parity on DPA_200MHz (PA GRU-23, test split)"
timeout 120 build/dpd parity --model build/ckpt/pa_gru23.safetensors --data build/data/DPA_200MHz --providers cpu,cuda \
    --json >"$W/par.json" 2>&1
cat "$W/par.json"
V=$(sed -n 's/.*"provider":"cuda"[^}]*"max_rel":\([-0-9.e+]*\).*/\1/p' "$W/par.json" | head -n 1)
[ -n "$V" ] && rec parity cuda gru 23 parity_rel "$V"
timeout 120 build/dpd eval --data build/data/DPA_200MHz --split val --model build/ckpt/pa_gru23.safetensors --provider cuda --json
echo "== dpd run through cuda, sectioned"
timeout 120 build/dpd run --model build/ckpt/pa_gru23.safetensors --input build/data/DPA_200MHz/test_input.csv \
    --output "$W/out.csv" --provider cuda
echo "== PA training through the cuda provider (DPA_200MHz, GRU-23, --preset quick), and cpu for comparison"
for p in cuda cpu; do
    /usr/bin/time -f "$p: %e s wall" timeout 200 build/dpd train-pa --data build/data/DPA_200MHz --model gru --hidden 23 \
        --preset quick --provider $p --out "$W/runs-$p" --json 2>&1 | grep -E '"run_dir"|wall'
done
echo "== DPD training through the frozen PA (GRU-10 DPD, GRU-23 PA, DPA_200MHz, --preset quick): cuda, then cpu"
for p in cuda cpu; do
    /usr/bin/time -f "$p: %e s wall" timeout 200 build/dpd train-dpd --data build/data/DPA_200MHz \
        --pa build/ckpt/pa_gru23.safetensors --model gru --hidden 10 --preset quick --provider $p --out "$W/dpd-$p" \
        --json 2>&1 | grep -oE '"test":\{[^}]*\}|"provider":"[^"]*"|.*wall'
done
echo "== resume on cuda: 1 epoch, resumed to 2, against 2 straight (PA GRU-23, quick)"
tensors() { hl=$(od -An -t u8 -N8 "$1" | tr -d ' '); tail -c +$((hl + 9)) "$1"; }
for n in 1 2; do
    timeout 100 build/dpd train-pa --data build/data/DPA_200MHz --model gru --hidden 23 --preset quick --epochs $n \
        --provider cuda --out "$W/rs$n" >/dev/null 2>&1
done
R1=$(ls -d "$W"/rs1/*/train_pa/*) R2=$(ls -d "$W"/rs2/*/train_pa/*)
timeout 100 build/dpd train-pa --resume "$R1" --epochs 2 --provider cuda >/dev/null 2>&1
tensors "$R2/last.safetensors" >"$W/t2"
if tensors "$R1/last.safetensors" | cmp -s - "$W/t2"; then echo "resume: weights and moments bitwise equal"; else echo "resume: DIFFERENT"; fi
echo "== a full DPA_160MHz-shaped epoch of PA GRU-23 on cuda (294 912 samples, 4 605 steps)"
build/dpd synth --out "$W/s160" --carriers 4 --carrier-bw 40e6 --qam 1024 --fs 640e6 --nperseg 16384 --length 491520 >/dev/null
timeout 200 build/dpd train-pa --data "$W/s160" --model gru --hidden 23 --epochs 1 --frame 200 --stride 1 --batch 64 \
    --provider cuda --out "$W/e160" --json 2>/dev/null
M=$(tail -n 1 "$W"/e160/s160/train_pa/*/history.csv 2>/dev/null | cut -d, -f3)
echo "epoch minutes (TIME:): $M"
[ -n "$M" ] && rec epoch cuda gru 23 epoch_s "$(awk -v m="$M" 'BEGIN { printf "%.3f", m * 60 }')"
echo "== the provider conformance suite on the GPU: the device-resident CUDA provider, and OpenCL where NVIDIA's ICD is"
# Inputs: build/tests/test_conformance, build/cuda/libdpd-cuda-resident.so, build/opencl/test/libdpd-opencl.so,
# dist/dpd-pack-opencl-*.tar.gz (make pack-opencl), and libOpenCL.so.1 in build/devlibs (the ICD loader).
DPD_CUDA_LIB=build/cuda/libdpd-cuda-resident.so DPD_OPENCL_LIB=build/opencl/test/libdpd-opencl.so \
    DPD_FAKE_LIB=/nonexistent timeout 420 build/tests/test_conformance >"$W/conf.txt" 2>&1
grep -E "^(cuda|opencl) |FAIL|SKIP|RESULT" "$W/conf.txt" | tail -n 80
# parity_rel: the largest of a line's six relative deviations; bitwise: no "bitwise" failure
awk '/^(cuda|opencl) / && /evaluate/ { split($2, f, "-"); m = 0
        for (i = 1; i <= NF; i++) if ($i ~ /^(evaluate|losses|gradients|parameters|m|v)$/ && $(i + 1) + 0 > m) m = $(i + 1) + 0
        what = $0 ~ /chained/ ? "_chain" : ""
        sub(/,$/, "", $7)
        printf "conformance_%sx%s %s %s%s %d parity_rel %.3g\n", $5, $7, $1, f[1], what, f[2] + 0, m }' "$W/conf.txt" |
    while read -r st pr fa hi me va; do rec "$st" "$pr" "$fa" "$hi" "$me" "$va"; done
for p in cuda opencl; do
    if grep -q "^$p " "$W/conf.txt"; then
        if grep -q "FAIL.*: $p .*bitwise" "$W/conf.txt"; then rec conformance $p - null bitwise false; else rec conformance $p - null bitwise true; fi
    fi
done
echo "== the device-resident CUDA provider as a pack: steps (recorded chunks, eager, layered), the slope over T, DPA_160MHz epochs"
# Input: dist/resident/dpd-pack-cuda-*.tar.gz (scripts/pack.sh cuda build/cuda/libdpd-cuda-resident.so dist/resident),
# installed apart ($W/res) so that the stages above keep the shipped pack.
RPK=$(ls dist/resident/dpd-pack-cuda-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
rdpd() { XDG_CONFIG_HOME="$W/res/config" XDG_DATA_HOME="$W/res/data" timeout "$@"; }
ms() { sed -n 's/.*"ms_per_step":\([-0-9.e+]*\).*/\1/p'; }
if [ -n "$RPK" ] && rdpd 120 build/dpd pack install "$RPK"; then
    for spec in "gru 23" "gru 15" "dgru 23" "lstm 23" "tres_gru 15" "rvtdcnn 12"; do
        set -- $spec
        for k in auto eager ref; do
            v=$(rdpd 60 build/dpd bench train --model "$1" --hidden "$2" --provider cuda --kernels $k --steps 256 \
                --per-call 128 --json 2>/dev/null | ms)
            echo "$1-$2 kernels=$k: ${v:-failed} ms a step"
            [ -n "$v" ] && rec steps cuda "$1" "$2" "step_us_$k" "$(awk -v m="$v" 'BEGIN { printf "%.2f", m * 1000 }')"
        done
    done
    # pair_ns: the time of one forward+backward time step, the slope of a GRU-23 step over T = 100, 200, 400
    a=$(rdpd 60 build/dpd bench train --frame 100 --provider cuda --steps 256 --per-call 128 --json 2>/dev/null | ms)
    b=$(rdpd 60 build/dpd bench train --frame 400 --provider cuda --steps 256 --per-call 128 --json 2>/dev/null | ms)
    c=$(rdpd 60 build/dpd bench train --frame 200 --provider cuda --steps 256 --per-call 128 --json 2>/dev/null | ms)
    echo "GRU-23 ms a step at T = 100, 200, 400: ${a:-?} ${c:-?} ${b:-?}"
    [ -n "$a" ] && [ -n "$b" ] && rec slope cuda gru 23 pair_ns "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / 300 * 1e6 }')"
    # epochs (the second of two: steady state, val and test included): each family's PA, then a
    # GRU-15 DPD through the GRU-23 PA; cpu for GRU-23 and the DPD
    ep() { # the epoch's TIME (minutes) in the run's history.csv, in seconds
        M=$(find "$1" -name history.csv -exec tail -n 1 {} \; 2>/dev/null | head -n 1 | cut -d, -f3)
        [ -n "$M" ] && awk -v m="$M" 'BEGIN { printf "%.3f", m * 60 }'; }
    for spec in "gru 23 cuda" "dgru 23 cuda" "lstm 23 cuda" "tres_gru 15 cuda" "rvtdcnn 12 cuda" "gru 23 cpu"; do
        set -- $spec
        rdpd 90 build/dpd train-pa --data "$W/s160" --model "$1" --hidden "$2" --epochs 2 --frame 200 --stride 1 \
            --batch 64 --no-plots --provider "$3" --out "$W/r-$1-$3" --json >/dev/null 2>&1
        v=$(ep "$W/r-$1-$3"); echo "$1-$2 on $3: a DPA_160MHz-shaped epoch ${v:-failed} s"
        [ -n "$v" ] && rec epoch160 "$3" "$1" "$2" epoch_s "$v"
    done
    PA=$(ls "$W"/r-gru-cuda/*/train_pa/*/best.safetensors 2>/dev/null | head -n 1)
    for p in cuda cpu; do
        rdpd 90 build/dpd train-dpd --data "$W/s160" --pa "$PA" --model gru --hidden 15 --epochs 2 --frame 200 \
            --stride 1 --batch 64 --no-plots --provider $p --out "$W/d-$p" --json >/dev/null 2>&1
        v=$(ep "$W/d-$p"); echo "DPD GRU-15 through the GRU-23 PA on $p: an epoch ${v:-failed} s"
        [ -n "$v" ] && rec epoch160_dpd "$p" gru 15 epoch_s "$v"
    done
    t0=$(date +%s.%N)
    rdpd 120 build/dpd train-pa --data "$W/s160" --model gru --hidden 23 --epochs 4 --frame 200 --stride 1 --batch 64 \
        --no-plots --provider cuda --out "$W/r4" >/dev/null 2>&1 && rec run4 cuda gru 23 run4_s \
        "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')"
else
    echo "resident: no pack (dist/resident) or it did not install: stage skipped"
fi
echo "== OpenCL on the GPU (NVIDIA's ICD), when the machine has it"
if ls /etc/OpenCL/vendors/*nvidia* >/dev/null 2>&1; then
    OPK=$(ls dist/dpd-pack-opencl-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
    timeout 120 build/dpd pack install "$OPK" || echo "opencl install failed: $?"
    build/dpd providers | grep -A3 "opencl:"
    timeout 300 build/dpd train-pa --data "$W/s160" --model gru --hidden 23 --epochs 1 --frame 200 --stride 1 --batch 64 \
        --provider opencl --out "$W/o160" --json 2>/dev/null | grep -o '"provider":"[^"]*"'
    echo "opencl epoch minutes (TIME:): $(tail -n 1 "$W"/o160/s160/train_pa/*/history.csv | cut -d, -f3)"
else
    echo "opencl: no NVIDIA OpenCL ICD under /etc/OpenCL/vendors on this machine: stage skipped"
fi
echo "== results ($J)"
awk -F'"' '{ printf "%-22s %-8s %-14s %-6s %-11s %s\n", $4, $8, $12, substr($15, 2, index($15, ",") - 2), $18, substr($0, index($0, "\"value\":") + 8) }' "$J" |
    sed 's/}$//'
rm -rf "$W"
