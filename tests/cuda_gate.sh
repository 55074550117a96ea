#!/bin/sh
# cuda_gate: the resource gate of the provider kernels compiled as CUDA for the H200 (sm_90),
# where nvcc exists. providers/opencl/kernels.cl is one source for both dialects and for every
# model size (the hidden size is an argument; the recurrent kernels' shared memory, 6 H floats at
# most, is sized at launch: 1.5 KiB at H = 64), but for the fused kernels (gru_, lstm_ train, eval),
# templates instantiated for each hidden size up to HOST_FUSED, whose weights live in registers
# (their frame's shared memory is dynamic, sized by the host against the device's limit). Every kernel the host launches must compile with
# no local stack frame and no spills (ptxas spills past the architecture's 255 registers a
# thread) and at most 48 KiB of static shared memory. Prints ptxas's figures as a table and
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
    # the training steps' dynamic shared memory (host.c's fused_floats: GRU, LSTM, DGRU, TRes-GRU)
    # at the frame length the targets use, T = 200, against the H200's 227 KiB a block may opt into
    worst=$(awk -v n="$fused" 'BEGIN { T = 200; for (h = 1; h <= n; h++) {
        f[1] = 6 * T + h * (T + 1) + 4 * h * T + 6 * h; f[2] = 6 * T + h * (T + 1) + 5 * h * T + 8 * h
        f[3] = 12 * T + h * (T + 1) + 7 * h * T + 6 * h; f[4] = 22 * T + h * (T + 1) + 4 * h * T + 6 * h
        for (i = 1; i <= 4; i++) if (4 * f[i] > m) m = 4 * f[i] }
        print m }')
    echo "the fused training steps at H = $fused, T = 200: at most $worst bytes of dynamic shared memory"
    if [ "$worst" -le 232448 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL cuda_gate: a fused step at T = 200 needs $worst bytes"; fi
fi
echo "RESULT cuda_gate $passed $failed $skipped"
[ $failed -eq 0 ]
