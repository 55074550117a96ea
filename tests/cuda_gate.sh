#!/bin/sh
# cuda_gate: the resource gate of the provider kernels compiled as CUDA for the H200 (sm_90),
# where nvcc exists. providers/opencl/kernels.cl is one source for both dialects and for every
# model size (the hidden size is an argument; the recurrent kernels' shared memory, 6 H floats at
# most, is sized at launch: 1.5 KiB at H = 64), but for the fused kernels (gru_, lstm_, dgru_,
# tres_ train and eval: templates instantiated for each hidden size up to HOST_FUSED, whose
# weights live in registers; rvt_train and rvt_eval take the size as an argument). Every kernel
# the host launches must compile with no local stack frame and no spills (ptxas spills past the
# architecture's 255 registers a thread) and at most 48 KiB of static shared memory; the fused
# kernels with none (their frames take the dynamic shared memory the device allows them), and
# each fused training step's frame of 200 samples must fit the H200's 227 KiB at every hidden
# size (tests/cuda_smem.c). Prints ptxas's figures as a table and
# "RESULT cuda_gate passed failed skipped".
# With REPORT, ptxas's report of the built library (the Makefile keeps it as
# $(BUILD)/cuda/resident.ptxas), it reads that instead of compiling the kernels again.
# Usage: tests/cuda_gate.sh [NVCC [REPORT]]
NVCC=${1:-nvcc}
REPORT=${2:-}
SRC=${KERNELS:-providers/opencl/kernels.cl}
passed=0; failed=0; skipped=0
if ! command -v "$NVCC" >/dev/null 2>&1; then
    echo "SKIP cuda_gate: nvcc not found"
    echo "RESULT cuda_gate 0 0 1"; exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# the kernels the host launches (providers/common/host.c's kname[]); each template (the fused
# kernels kernels.cl instantiates with T32) as its instances NAME<1> .. NAME<HOST_FUSED> (host.h)
fused=$(sed -n 's/^#define HOST_FUSED \([0-9]*\).*/\1/p' providers/common/host.h)
templ=$(grep -o 'T32([a-z_]*)' "$SRC" | sed 's/T32(\(.*\))/\1/' | tr '\n' ' ')
want=$(sed -n '/static const char \*const kname\[K_COUNT\] = {/,/};/p' providers/common/host.c | grep -o '"[a-z_0-9]*"' | tr -d '"' |
    awk -v n="$fused" -v t=" $templ" 'index(t, " " $1 " ") { for (h = 1; h <= n; h++) print $1 "<" h ">"; next } { print }' | sort)
printf '%-14s %5s %6s %6s %6s\n' kernel regs stack spills smem
ok=1
if [ -n "$REPORT" ] && [ -f "$REPORT" ]; then
    echo "ptxas's report of the built library: $REPORT"; cp "$REPORT" "$T/log"
elif ! "$NVCC" -cubin -arch=sm_90 -x cu -Xptxas -v -o "$T/k.cubin" "$SRC" >"$T/log" 2>&1; then
    failed=$((failed + 1)); ok=0; echo "FAIL cuda_gate: nvcc failed"; cat "$T/log"
fi
if [ $ok = 1 ]; then
    # ptxas: "Compiling entry function 'NAME'", then "Function properties for NAME" /
    # "N bytes stack frame, N bytes spill stores, N bytes spill loads" / "Used N registers, ... N bytes smem"
    awk '
        /Function properties for/ { name = $NF   # a template instance: _Z9gru_trainILi23EEv... -> gru_train<23>
            if (match(name, /^_Z[0-9]+[a-z_]+ILi[0-9]+E/)) { s = substr(name, 1, RLENGTH); sub(/^_Z[0-9]+/, "", s)
                split(s, a, "ILi"); sub(/E$/, "", a[2]); name = a[1] "<" a[2] ">" } }
        /bytes stack frame/ { stack = $(NF - 11) + 0; sst = $(NF - 7) + 0; sld = $(NF - 3) + 0 }
        /Used [0-9]+ registers/ { regs = 0; smem = 0
            for (i = 1; i <= NF; i++) { if ($(i + 1) == "registers,") regs = $i + 0; if ($(i + 1) == "bytes" && $(i + 2) == "smem") smem = $i + 0 }
            printf "%-14s %5d %6d %6d %6d\n", name, regs, stack, sst + sld, smem }' "$T/log" >"$T/table"
    cat "$T/table"
    got=$(awk '{ print $1 }' "$T/table" | sort)
    if [ "$got" != "$want" ]; then
        echo "$got" >"$T/got"; echo "$want" >"$T/want"
        failed=$((failed + 1)); echo "FAIL cuda_gate: kernels compiled but not launched: $(comm -23 "$T/got" "$T/want" | tr '\n' ' ')"
        echo "  launched but not compiled: $(comm -13 "$T/got" "$T/want" | tr '\n' ' ')"
    else
        passed=$((passed + 1))
    fi
    # (ptxas caps a thread at 255 registers and spills beyond: the spill column catches that)
    bad=$(awk '$3 > 0 || $4 > 0 || $5 > 49152 { print $1 }' "$T/table" | tr '\n' ' ')
    if [ -n "$bad" ]; then failed=$((failed + 1)); echo "FAIL cuda_gate: over the limits: $bad"; else passed=$((passed + 1)); fi
    # the fused kernels take their frames in dynamic shared memory up to the device's opt-in limit
    # (providers/cuda/device.cu), which holds only where they have no static shared memory
    st=$(awk '$1 ~ /^(gru|lstm|dgru|tres|rvt)_(train|eval)/ && $5 > 0 { print $1 }' "$T/table" | tr '\n' ' ')
    if [ -n "$st" ]; then failed=$((failed + 1)); echo "FAIL cuda_gate: fused kernels with static shared memory: $st"; else passed=$((passed + 1)); fi
    # their dynamic shared memory, from host.c's own host_fused_floats (tests/cuda_smem.c), at the
    # frame the targets train on, T = 200, against the 227 KiB an H200 block may opt into: every
    # fused training step must fit (or it would run on the layered kernels); the fused evaluation
    # runs a longer segment in tiles, and the longest it takes in one is printed
    LIMIT=232448
    if ! ${CC:-cc} -O1 -Iinclude -o "$T/smem" tests/cuda_smem.c providers/common/host.c -lm >"$T/cc.log" 2>&1; then
        failed=$((failed + 1)); echo "FAIL cuda_gate: tests/cuda_smem.c did not build"; cat "$T/cc.log"
    elif ! "$T/smem" 200 $LIMIT >"$T/smem.txt"; then
        failed=$((failed + 1)); echo "FAIL cuda_gate: cuda_smem failed"
    else
        awk -v lim=$LIMIT '{ if ($3 > tr[$1]) tr[$1] = $3; if (!($1 in et) || $6 < et[$1]) et[$1] = $6; if (!($1 in tt) || $5 < tt[$1]) tt[$1] = $5; n[$1] = $2 }
            END { for (f in tr) printf "%-9s H 1..%d at T = 200: training step at most %6d bytes; fits up to T = %d (train), %d (evaluate in one tile)\n", f, n[f], tr[f], tt[f], et[f] }' "$T/smem.txt" | sort
        bad=$(awk -v lim=$LIMIT '$3 > lim { print $1 "-" $2 }' "$T/smem.txt" | tr '\n' ' ')
        if [ -n "$bad" ]; then failed=$((failed + 1)); echo "FAIL cuda_gate: fused training steps over $LIMIT bytes at T = 200: $bad"; else passed=$((passed + 1)); fi
    fi
fi
echo "RESULT cuda_gate $passed $failed $skipped"
[ $failed -eq 0 ]
