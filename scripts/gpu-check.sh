#!/bin/sh
# gpu-check: the one device run (issue 13 §4), on a machine with an NVIDIA GPU and the inputs that
# scripts/gpu-prepare.sh gathered (GPU_CHECK_INPUTS, default build/gpu, or its archive
# build/gpu.tar.xz, unpacked here: prebuilt binaries, the packs, DPA_200MHz and a GRU-23 PA). Stages, each in its own process under its own time limit,
# in order of what matters most, all within GPU_CHECK_SECONDS (default 480: 8 minutes; a stage
# that would start with less than 10 s left is skipped and says so):
#   preflight    the device, clocks, the shared memory a block may opt into, SMs
#   conformance  the device-resident CUDA provider through the conformance suite: parity of every
#                family and the cascade against the cpu (parity_rel), and determinism (bitwise:
#                fused against layered, recorded chunks against launched steps, a second run, a
#                resumed run; short last batches included)
#   steps        the CUDA pack installed (its probe trains each family on the device), then us
#                per step per family: recorded chunks (step_us), every step launched
#                (step_us_eager), the layered kernels (step_us_layered)
#   slope        pair_ns: one forward+backward time step, the least-squares slope of a GRU-23
#                step over T = 100, 200, 400
#   epochs       a DPA_160MHz-shaped synthetic set: the second of two epochs (epoch_s, incl. val
#                and test) of train-pa for each family and train-dpd GRU-15 through the GRU-23 PA,
#                on cuda and on the cpu provider
#   run4         four epochs of PA GRU-23 end to end (run4_s)
#   pack         the CUDA pack in the default settings: dpd providers, dpd parity on DPA_200MHz
#                (parity_rel), quick-preset PA and DPD training on cuda and cpu (test_nmse_db,
#                test_aclr_db and their differences delta_*), a resumed run (bitwise)
#   gru_check    the first CUDA provider's own parity and speed check
#   opencl       the OpenCL pack on NVIDIA's ICD, where the machine has it
# Every figure goes to GPU_CHECK_JSONL (default build/gpu-check.jsonl) as one JSON object a line
# with stage, provider, family, hidden, metric and value (commit the device's as
# docs/gpu-check-h200.jsonl); each stage also records its status (ok, failed, timed out, skipped:
# why). A table of them is printed last. Without a GPU (the dry run tests/gpucheck.sh makes in
# make test) the device stages end quickly and say why.
set -u
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$SELF")/.."
G=${GPU_CHECK_INPUTS:-build/gpu}
case $G in /*) ;; *) G=$PWD/$G ;; esac
J=${GPU_CHECK_JSONL:-build/gpu-check.jsonl}
export G J LD_LIBRARY_PATH="$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
D="$G/bin/dpd"

# rec STAGE PROVIDER FAMILY HIDDEN METRIC VALUE: one line of $J (VALUE: a number, true/false, or text)
rec() {
    case $6 in
    true | false) rv=$6 ;;
    *) if printf '%s' "$6" | grep -Eq '^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$'; then rv=$6; else
        rv="\"$(printf '%s' "$6" | tr -d '\000-\037' | sed 's/["\\]/\\&/g')\""; fi ;;
    esac
    rh=$4
    printf '%s' "$rh" | grep -Eq '^[0-9]+$' || rh=null
    printf '{"stage":"%s","provider":"%s","family":"%s","hidden":%s,"metric":"%s","value":%s}\n' "$1" "$2" "$3" "$rh" "$5" "$rv" >>"$J"
}
# sec MINUTES: seconds with three decimals
sec() { awk -v m="$1" 'BEGIN { printf "%.3f", m * 60 }'; }
# ep DIR: the last epoch's TIME (minutes) in the run's history.csv under DIR, in seconds
ep() {
    M=$(find "$1" -name history.csv -exec tail -n 1 {} \; 2>/dev/null | head -n 1 | cut -d, -f3)
    [ -n "$M" ] && sec "$M"
}
ms() { sed -n 's/.*"ms_per_step":\([-0-9.e+]*\).*/\1/p'; }
gpu() { [ -f "$W/gpu" ]; } # preflight found a CUDA device
# rdpd SECONDS ARGS: dpd with the settings of the steps stage's install (apart from the pack stage's)
rdpd() { t=$1; shift; XDG_CONFIG_HOME="$W/res/config" XDG_DATA_HOME="$W/res/data" timeout --foreground "$t" "$D" "$@"; }
# s160: the DPA_160MHz-shaped synthetic set (294 912 training samples: 4 605 steps at batch 64, frame 200, stride 1)
s160() { [ -d "$W/s160" ] || "$D" synth --out "$W/s160" --carriers 4 --carrier-bw 40e6 --qam 1024 --fs 640e6 --nperseg 16384 --length 491520 >/dev/null; }

st_preflight() {
    echo "host: $(uname -m), $(nproc) CPUs, $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown OS}")"
    rec preflight cpu - null cpus "$(nproc)"
    q=$(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv,noheader 2>/dev/null)
    echo "${q:-nvidia-smi: unavailable}"
    rec preflight cuda - null device "${q:-none}"
    out=$(timeout --foreground 30 "$G/bin/check" --preflight 2>&1 | sed -n '1,2p')
    echo "$out"
    line=$(printf '%s\n' "$out" | sed -n 's/^preflight: //p')
    if [ -n "$line" ]; then
        : >"$W/gpu"
        set -- $line
        while [ $# -ge 2 ]; do rec preflight cuda - null "$1" "$2"; shift 2; done
    else
        rec preflight cuda - null status "skipped: no CUDA device ($(printf '%s' "$out" | head -n 1))"
    fi
}

st_conformance() {
    gpu || { echo "no CUDA device"; return 3; }
    # under its own limit, inside the stage's, so that what it printed (line by line) is read either way
    DPD_CONFORMANCE_ONLY=cuda DPD_CUDA_LIB="$G/lib/libdpd-cuda-resident.so" \
        timeout --foreground $((${GPU_CHECK_STAGE_SECONDS:-150} - 10)) "$G/bin/test_conformance" >"$W/conf.txt" 2>&1
    rc=$?
    grep -E "^cuda |FAIL|SKIP|RESULT" "$W/conf.txt" | tail -n 60
    # parity_rel: the largest of a line's six relative deviations; a chain's family is PA>DPD
    awk '/^cuda / && /evaluate/ { split($2, f, "-"); m = 0
            for (i = 1; i <= NF; i++) if ($i ~ /^(evaluate|losses|gradients|parameters|m|v)$/ && $(i + 1) + 0 > m) m = $(i + 1) + 0
            fam = f[1]; if (match($0, /chained DPD [a-z_]+/)) fam = fam ">" substr($0, RSTART + 12, RLENGTH - 12)
            sh = $5 "x" $7; sub(/,$/, "", sh)
            printf "%s %d %s %.3g\n", fam, f[2] + 0, sh, m }' "$W/conf.txt" |
        while read -r fa hi sh va; do rec "parity_$sh" cuda "$fa" "$hi" parity_rel "$va"; done
    # BITWISE cuda MODEL PA KIND 0|1: the family as PA>DPD where chained
    grep '^BITWISE cuda ' "$W/conf.txt" | while read -r _ _ m pa kind eq; do
        fa=${m%-*} hi=${m##*-}
        [ "$pa" = - ] || fa="${pa%-*}>$fa"
        rec "$kind" cuda "$fa" "$hi" bitwise "$([ "$eq" = 1 ] && echo true || echo false)"
    done
    r=$(sed -n 's/^RESULT conformance //p' "$W/conf.txt")
    [ -n "$r" ] && rec conformance cuda - null failed "$(echo "$r" | cut -d' ' -f2)"
    return $rc
}

st_steps() {
    gpu || { echo "no CUDA device"; return 3; }
    RPK=$(ls "$G"/dist/dpd-pack-cuda-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
    [ -n "$RPK" ] && rdpd 60 pack install "$RPK" || { echo "the CUDA pack did not install"; return 1; }
    bad=0
    for spec in "gru 23" "gru 15" "dgru 23" "lstm 23" "tres_gru 15" "rvtdcnn 12"; do
        set -- $spec
        for k in auto eager ref; do
            v=$(rdpd 30 bench train --model "$1" --hidden "$2" --provider cuda --kernels $k --steps 256 --per-call 128 --json 2>/dev/null | ms)
            echo "$1-$2 kernels=$k: ${v:-failed} ms a step"
            m=step_us
            [ $k = eager ] && m=step_us_eager
            [ $k = ref ] && m=step_us_layered
            if [ -n "$v" ]; then rec steps cuda "$1" "$2" $m "$(awk -v m="$v" 'BEGIN { printf "%.2f", m * 1000 }')"; else bad=$((bad + 1)); fi
        done
    done
    [ $bad = 0 ]
}

st_slope() {
    gpu && [ -d "$W/res" ] || { echo "no CUDA device, or no CUDA pack installed (stage steps)"; return 3; }
    for T in 100 200 400; do
        eval "t$T=\$(rdpd 30 bench train --frame $T --provider cuda --steps 256 --per-call 128 --json 2>/dev/null | ms)"
    done
    echo "GRU-23 ms a step at T = 100, 200, 400: ${t100:-?} ${t200:-?} ${t400:-?}"
    [ -n "$t100" ] && [ -n "$t200" ] && [ -n "$t400" ] || return 1
    # the least-squares slope of the three (ms a sample of the frame), in ns
    rec slope cuda gru 23 pair_ns "$(awk -v a="$t100" -v b="$t200" -v c="$t400" 'BEGIN { m = 700 / 3; y = (a + b + c) / 3
        num = (100 - m) * (a - y) + (200 - m) * (b - y) + (400 - m) * (c - y)
        den = (100 - m) ^ 2 + (200 - m) ^ 2 + (400 - m) ^ 2
        printf "%.1f", num / den * 1e6 }')"
}

st_epochs() {
    gpu && [ -d "$W/res" ] || { echo "no CUDA device, or no CUDA pack installed (stage steps)"; return 3; }
    s160
    bad=0
    for spec in "gru 23" "dgru 23" "lstm 23" "tres_gru 15" "rvtdcnn 12"; do
        set -- $spec
        for p in cuda cpu; do
            rdpd 60 train-pa --data "$W/s160" --model "$1" --hidden "$2" --epochs 2 --frame 200 --stride 1 --batch 64 \
                --no-plots --provider $p --out "$W/r-$1-$p" >/dev/null 2>&1
            v=$(ep "$W/r-$1-$p")
            echo "$1-$2 on $p: a DPA_160MHz-shaped epoch ${v:-failed} s"
            if [ -n "$v" ]; then rec epoch160 $p "$1" "$2" epoch_s "$v"; else bad=$((bad + 1)); fi
        done
    done
    PA=$(ls "$W"/r-gru-cuda/*/train_pa/*/best.safetensors "$W"/r-gru-cpu/*/train_pa/*/best.safetensors 2>/dev/null | head -n 1)
    for p in cuda cpu; do
        rdpd 60 train-dpd --data "$W/s160" --pa "$PA" --model gru --hidden 15 --epochs 2 --frame 200 --stride 1 --batch 64 \
            --no-plots --provider $p --out "$W/d-$p" >/dev/null 2>&1
        v=$(ep "$W/d-$p")
        echo "DPD GRU-15 through the GRU-23 PA on $p: an epoch ${v:-failed} s"
        if [ -n "$v" ]; then rec epoch160_dpd $p "gru>gru" 15 epoch_s "$v"; else bad=$((bad + 1)); fi
    done
    [ $bad = 0 ]
}

st_run4() {
    gpu && [ -d "$W/res" ] || { echo "no CUDA device, or no CUDA pack installed (stage steps)"; return 3; }
    s160
    t0=$(date +%s.%N)
    rdpd 60 train-pa --data "$W/s160" --model gru --hidden 23 --epochs 4 --frame 200 --stride 1 --batch 64 --no-plots \
        --provider cuda --out "$W/r4" >/dev/null 2>&1 || return 1
    v=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    echo "4 epochs of PA GRU-23, end to end: $v s"
    rec run4 cuda gru 23 run4_s "$v"
}

st_pack() {
    gpu || { echo "no CUDA device"; return 3; }
    PACK=$(ls "$G"/dist/dpd-pack-cuda-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1)
    timeout --foreground 60 "$D" pack install "$PACK" || return 1
    "$D" providers
    M=$G/ckpt/pa_gru23.safetensors S=$G/data/DPA_200MHz
    timeout --foreground 60 "$D" parity --model "$M" --data "$S" --providers cpu,cuda --json >"$W/par.json" 2>&1
    cat "$W/par.json"
    V=$(sed -n 's/.*"provider":"cuda"[^}]*"max_rel":\([-0-9.e+]*\).*/\1/p' "$W/par.json" | head -n 1)
    [ -n "$V" ] && rec pack cuda gru 23 parity_rel "$V"
    # quick-preset training on both providers: the test metrics (test_nmse_db, test_aclr_db) and
    # their differences (delta_*: the issue's 0.01 dB), a GRU-23 PA and a GRU-10 DPD through it
    for p in cuda cpu; do
        timeout --foreground 60 "$D" train-pa --data "$S" --model gru --hidden 23 --preset quick --no-plots --provider $p \
            --out "$W/q-$p" --json >"$W/qpa-$p.json" 2>/dev/null
        timeout --foreground 90 "$D" train-dpd --data "$S" --pa "$M" --model gru --hidden 10 --preset quick --no-plots --provider $p \
            --out "$W/qd-$p" --json >"$W/qdpd-$p.json" 2>/dev/null
    done
    # tm FILE KEY: the test split's KEY (NMSE, ACLR_AVG) in a run's --json answer
    tm() { grep -o '"test":{[^}]*}' "$1" 2>/dev/null | sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p"; }
    for k in pa dpd; do
        h=23
        [ $k = dpd ] && h=10
        for key in NMSE:test_nmse_db ACLR_AVG:test_aclr_db; do
            u=$(tm "$W/q$k-cuda.json" "${key%%:*}") v=$(tm "$W/q$k-cpu.json" "${key%%:*}")
            echo "quick $k ${key%%:*} (test): cuda ${u:-?} dB, cpu ${v:-?} dB"
            [ -n "$u" ] && rec "quick_$k" cuda gru $h "${key#*:}" "$u"
            [ -n "$v" ] && rec "quick_$k" cpu gru $h "${key#*:}" "$v"
            [ -n "$u" ] && [ -n "$v" ] && rec "quick_$k" cuda gru $h "delta_${key#*:test_}" \
                "$(awk -v a="$u" -v b="$v" 'BEGIN { d = a - b; printf "%.6f", d < 0 ? -d : d }')"
        done
    done
    tensors() { hl=$(od -An -t u8 -N8 "$1" | tr -d ' '); tail -c +$((hl + 9)) "$1"; }
    for n in 1 2; do
        timeout --foreground 60 "$D" train-pa --data "$S" --model gru --hidden 23 --preset quick --epochs $n --no-plots --provider cuda \
            --out "$W/rs$n" >/dev/null 2>&1
    done
    R1=$(ls -d "$W"/rs1/*/train_pa/* | head -n 1) R2=$(ls -d "$W"/rs2/*/train_pa/* | head -n 1)
    timeout --foreground 60 "$D" train-pa --resume "$R1" --epochs 2 --provider cuda >/dev/null 2>&1
    [ -f "$R2/last.safetensors" ] && tensors "$R2/last.safetensors" >"$W/t2"
    if [ -f "$W/t2" ] && tensors "$R1/last.safetensors" | cmp -s - "$W/t2"; then
        echo "resume: weights and moments bitwise equal"; rec pack cuda gru 23 bitwise true
    else
        echo "resume: DIFFERENT"; rec pack cuda gru 23 bitwise false
    fi
}

st_gru_check() {
    gpu || { echo "no CUDA device"; return 3; }
    timeout --foreground $((${GPU_CHECK_STAGE_SECONDS:-60} - 5)) "$G/bin/check"
}

st_opencl() {
    gpu && ls /etc/OpenCL/vendors/*nvidia* >/dev/null 2>&1 || { echo "no NVIDIA OpenCL ICD under /etc/OpenCL/vendors"; return 3; }
    DPD_CONFORMANCE_ONLY=opencl DPD_OPENCL_LIB="$G/lib/libdpd-opencl-test.so" \
        timeout --foreground $((${GPU_CHECK_STAGE_SECONDS:-60} - 5)) "$G/bin/test_conformance" >"$W/oconf.txt" 2>&1
    rc=$?
    grep -E "FAIL|RESULT" "$W/oconf.txt" | tail -n 20
    r=$(sed -n 's/^RESULT conformance //p' "$W/oconf.txt")
    [ -n "$r" ] && rec opencl opencl - null failed "$(echo "$r" | cut -d' ' -f2)"
    return $rc
}

# One stage in this process (the script runs itself under timeout): gpu-check.sh --stage NAME
if [ "${1:-}" = --stage ]; then
    W=$GPU_CHECK_WORK
    "st_$2"
    exit $?
fi

START=$(date +%s)
LIMIT=${GPU_CHECK_SECONDS:-480}
W=$(mktemp -d)
export GPU_CHECK_WORK="$W"
trap 'rm -rf "$W"' EXIT
mkdir -p "$(dirname "$J")" && : >"$J"
[ -x "$D" ] || [ ! -f "$G.tar.xz" ] || tar xJf "$G.tar.xz" -C "$(dirname "$G")"
[ -x "$D" ] || { echo "gpu-check: no $D: run scripts/gpu-prepare.sh (make gpu-inputs) first" >&2; exit 1; }
# stage NAME BUDGET: runs st_NAME under timeout min(BUDGET, the seconds left), records its status
stage() {
    left=$((LIMIT - ($(date +%s) - START)))
    echo "== $1 (at most $2 s; $left s left)"
    if [ "$left" -lt 10 ]; then
        echo "skipped: the check's $LIMIT s are spent"; rec "$1" - - null status "skipped: out of time"; return
    fi
    t=$(($2 < left ? $2 : left))
    t0=$(date +%s)
    GPU_CHECK_STAGE_SECONDS=$t timeout "$t" sh "$SELF" --stage "$1"
    rc=$?
    case $rc in
    0) s=ok ;;
    3) s="skipped: no device or input for it" ;;
    124 | 137) s="timed out after $t s" ;;
    *) s="failed ($rc)" ;;
    esac
    echo "-- $1: $s in $(($(date +%s) - t0)) s"
    rec "$1" - - null status "$s"
}
stage preflight 45
stage conformance 150
stage steps 90
stage slope 40
stage epochs 150
stage run4 45
stage pack 90
stage gru_check 60
stage opencl 60
rec total - - null seconds "$(($(date +%s) - START))"
echo "== results ($J)"
awk -F'"' '{ v = substr($0, index($0, "\"value\":") + 8); sub(/}$/, "", v)
    h = substr($0, index($0, "\"hidden\":") + 9); sub(/,.*/, "", h)
    printf "%-22s %-8s %-18s %-6s %-16s %s\n", $4, $8, $12, h, $18, v }' "$J"
