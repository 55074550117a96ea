#!/bin/sh
# Black-box tests of recordings in and out (issue 15, section 4; docs/formats.md): `dpd run` from
# a bare .cf32 (with and without --fs) to SigMF, SigMF to SigMF (the sample rate and centre
# frequency carried), to .mat v5 and v7.3 and from .mat (default, given and missing variables;
# a file scipy wrote), the same samples as the .cf32 path bit for bit; `dpd fit-ls --mat` (comm.DPD's
# layout, v5 and v7.3); `dpd synth --preset` (lte20 and nr100 numbers, ofdm-mc identical to the
# default, an explicit option winning, an unknown name refused) and `--sigmf`; hostile inputs (a
# .sigmf-meta that is not JSON or has wrong types or another datatype, a missing sidecar, a
# truncated or foreign .mat) end with a message and exit 1 or 2, never a crash, and leave no
# output. Where Python's scipy.io is installed the .mat files are read back with loadmat and
# compared value for value (else that part is a skip).
# Usage: sh tests/recordings.sh BUILD_DIR. Prints "RESULT recordings <passed> <failed> <skipped>".
BUILD=${1:-build}
DPD="$BUILD/dpd"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=recordings
. "$(dirname "$0")/lib.sh"
skip=0
if [ ! -x "$DPD" ] || ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP recordings: needs $DPD and python3"; echo "RESULT recordings 0 0 1"; exit 0
fi
# jq1 FILE EXPR: a Python expression on the JSON document j of FILE is true
jq1() { python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(0 if ($2) else 1)" <"$1" 2>/dev/null; }
# a Python with scipy.io (Debian's python3-scipy may sit beside another python3 on PATH)
PY=""
for p in python3 /usr/bin/python3; do
    if [ -z "$PY" ] && "$p" -c 'import scipy.io, numpy' 2>/dev/null; then PY=$p; fi
done

# --- a dataset and a least-squares PA model, with its coefficients in .mat ---
"$DPD" synth --out "$T/a" --length 12800 --seed 1 >/dev/null 2>"$T/err"
check '[ -s "$T/a/test_input.csv" ]' "synth ($(head -c 200 "$T/err"))"
"$DPD" fit-ls --data "$T/a" --kind mp --target pa --K 3 --Q 4 --out "$T/runs" --mat "$T/c.mat" >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/c.mat" ] && grep -q "coefficients -> $T/c.mat" "$T/err"' \
    "fit-ls --mat: exit $rc ($(head -c 300 "$T/err"))"
check '[ "$(head -c 19 "$T/c.mat")" = "MATLAB 5.0 MAT-file" ] && ! ls "$T" | grep -q "c.mat.tmp"' "fit-ls --mat: a v5 file, no temporary left"
RD=$(sed -n 's/^run directory: //p' "$T/out")
check '[ -f "$RD/best.safetensors" ]' "fit-ls: its run directory ($RD)"
cp "$T/a/train_input.csv" "$T/train_input.before"
expect 2 "dpd: --mat $T/a/train_input.csv lies in the dataset" "$DPD" fit-ls --data "$T/a" --kind mp --out "$T/runs" --mat "$T/a/train_input.csv"
expect 2 "dpd: --mat $T/c.csv: the coefficients' file must end in .mat" "$DPD" fit-ls --data "$T/a" --kind mp --out "$T/runs" --mat "$T/c.csv"
mkdir -p "$T/cdir.mat"
echo keep >"$T/ctgt" && ln -sf ctgt "$T/clink.mat"
expect 2 "dpd: --mat $T/clink.mat is a symbolic link (to ctgt)" "$DPD" fit-ls --data "$T/a" --kind mp --out "$T/runs-link" --mat "$T/clink.mat"
check '[ ! -e "$T/runs-link" ] && [ -L "$T/clink.mat" ] && [ "$(cat "$T/ctgt")" = keep ]' "fit-ls --mat that is a link: refused before the fit (no run made), the link kept"
expect 2 "dpd: --mat $T/cdir.mat is a directory: name a file in it" "$DPD" fit-ls --data "$T/a" --kind mp --out "$T/runs" --mat "$T/cdir.mat"
expect 2 "dpd: --mat $T/a/c.mat lies in the dataset" "$DPD" fit-ls --data "$T/a" --kind mp --out "$T/runs" --mat "$T/a/c.mat"
check 'cmp -s "$T/a/train_input.csv" "$T/train_input.before" && [ ! -e "$T/a/c.mat" ]' "fit-ls --mat: a split file and the dataset are never written"
"$DPD" fit-ls --data "$T/a" --kind gmp --target pa --K 3 --Q 2 --M 1 --out "$T/runs" --mat "$T/g73.mat" --mat-version 7.3 \
    >/dev/null 2>"$T/err"; rc=$?
# HDF5's signature at 512, after MATLAB's user block
check '[ $rc -eq 0 ] && [ "$(od -An -c -j 513 -N 3 "$T/g73.mat" | tr -d " ")" = "HDF" ]' \
    "fit-ls gmp --mat-version 7.3: an HDF5 file (exit $rc: $(head -c 300 "$T/err"))"
expect 2 "--mat-version: '6' must be 5 or 7.3" "$DPD" fit-ls --data "$T/a" --kind mp --target pa --mat "$T/x.mat" --mat-version 6
expect 2 "--mat-version applies to --mat FILE, which is not given" "$DPD" fit-ls --data "$T/a" --kind mp --target pa --mat-version 7.3
expect 2 "--mat $T/no/c.mat: $T/no does not exist (make the directory first)" "$DPD" fit-ls --data "$T/a" --kind mp --target pa --mat "$T/no/c.mat" --out "$T/nofit"
check '[ ! -e "$T/nofit" ]' "fit-ls --mat into a directory that is not there: refused before the fit, no run directory"

# --- dpd run: .cf32, SigMF and .mat ---
perl -e 'open(F, "<", $ARGV[0]); <F>; while (<F>) { chomp; my @v = split /,/; print pack("f<f<", $v[0], $v[1]); }' \
    "$T/a/test_input.csv" >"$T/in.cf32"
run() { "$DPD" run --model "$RD" "$@" >"$T/out" 2>"$T/err"; }
run --input "$T/in.cf32" --output "$T/out.cf32"
check '[ -s "$T/out.cf32" ]' "run .cf32 -> .cf32 ($(head -c 200 "$T/err"))"
# a .cf32 states no rate: the SigMF output records the model's own, and says so
run --input "$T/in.cf32" --output "$T/o.sigmf-data"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: note: $T/in.cf32 states no sample rate: $T/o.sigmf-data records 800 MHz, the rate $RD/best.safetensors was trained at (--fs HZ gives another)" "$T/err" &&
       python3 -c "import json, sys; sys.exit(json.load(open(\"$T/o.sigmf-meta\"))[\"global\"][\"core:sample_rate\"] != 800e6)"' \
    "run .cf32 -> SigMF: the model's sample rate recorded, with a note (exit $rc: $(head -c 300 "$T/err"))"
rm -f "$T/o.sigmf-data" "$T/o.sigmf-meta"
expect 2 "dpd: --fs: 0 must be a sample rate in Hz, above 0 and at most 1e+12" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/o.sigmf-data" --fs 0
expect 2 "dpd: --fs: 1e+15 must be a sample rate in Hz, above 0 and at most 1e+12 (1 THz" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/o.sigmf-data" --fs 1e15
echo keep >"$T/target.cf32" && ln -s target.cf32 "$T/link.cf32"
expect 2 "dpd: --output $T/link.cf32 is a symbolic link (to target.cf32)" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/link.cf32"
check '[ -L "$T/link.cf32" ] && [ "$(cat "$T/target.cf32")" = keep ]' "run: an output that is a link is refused; the link and its target are left as they were"
expect 2 "dpd: --output /dev/null is a character device: dpd writes regular files" "$DPD" run --model "$RD" --input "$T/a/test_input.csv" --output /dev/null
check '[ -c /dev/null ]' "run: /dev/null is still the device"
cp "$T/in.cf32" "$T/UP.CF32"
"$DPD" run --model "$RD" --input "$T/UP.CF32" --output "$T/up.MAT" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(head -c 19 "$T/up.MAT")" = "MATLAB 5.0 MAT-file" ]' "run: .CF32 and .MAT in upper case are those formats (exit $rc: $(head -c 200 "$T/err"))"
: >"$T/rec.sigmf"
expect 1 "rec.sigmf: a SigMF archive (a tar of the recording's files) is not read: extract it" "$DPD" run --model "$RD" --input "$T/rec.sigmf" --output "$T/ar.sigmf-data"
expect 1 "rec.sigmf: a SigMF archive (a tar of the recording's files) is not read: extract it" "$DPD" run --model "$RD" --input "$T/rec.sigmf" --output "$T/ar.cf32"
mkdir -p "$T/odir.cf32" && : >"$T/afile"
expect 2 "dpd: --output $T/afile/o.cf32: $T/afile is not a directory" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/afile/o.cf32"
expect 2 "dpd: --output $T/odir.cf32 is a directory: name a file in it" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/odir.cf32"
expect 2 "dpd: --output $T/nodir/o.cf32: $T/nodir does not exist (make the directory first)" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/nodir/o.cf32"
# a SIGTERM while the output is written: the temporary file removed, the reason told, the signal's exit
{ head -n 1 "$T/a/test_input.csv"; for i in $(seq 60); do tail -n +2 "$T/a/test_input.csv"; done; } >"$T/big.csv"
mkdir "$T/kill"
"$DPD" run --model "$RD" --input "$T/big.csv" --output "$T/kill/o.csv" >/dev/null 2>"$T/err" &
pid=$!; k=0
while [ $k -lt 3000 ] && kill -0 $pid 2>/dev/null && ! ls "$T/kill" | grep -q "\.tmp\."; do sleep 0.01; k=$((k + 1)); done
if ls "$T/kill" | grep -q "\.tmp\."; then
    kill -TERM $pid; wait $pid; rc=$?
    if [ $rc -eq 0 ] || grep -q "interrupted after" "$T/err"; then
        echo "SKIP recordings: the SIGTERM check (the signal came after the output was in place)"; skip=$((skip + 1))
    else
        check '[ $rc -eq 143 ] && [ -z "$(ls "$T/kill")" ] && grep -qF "dpd: run interrupted: nothing was written to $T/kill/o.csv" "$T/err"' \
            "run stopped by SIGTERM while writing: exit 143, says so, leaves no temporary file (exit $rc: $(ls "$T/kill"), $(head -c 200 "$T/err"))"
    fi
else
    wait $pid
    echo "SKIP recordings: the SIGTERM check (the run ended before its output file was seen being written)"; skip=$((skip + 1))
fi
check '[ ! -e "$T/o.sigmf-data" ] && [ ! -e "$T/o.sigmf-meta" ]' "run without --fs leaves no SigMF output"
run --input "$T/in.cf32" --output "$T/o.sigmf-data" --fs 800e6 --freq 2.4e9; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$T/o.sigmf-data" "$T/out.cf32"' "run .cf32 --fs -> SigMF: the samples of the .cf32 path (exit $rc: $(head -c 200 "$T/err"))"
check 'jq1 "$T/o.sigmf-meta" "j[\"global\"][\"core:datatype\"] == \"cf32_le\" and j[\"global\"][\"core:sample_rate\"] == 8e8 and j[\"global\"][\"core:version\"] == \"1.0.0\" and j[\"global\"][\"core:recorder\"].startswith(\"dpd \") and \"applied to\" in j[\"global\"][\"core:description\"] and j[\"global\"][\"dpd:run_id\"] == \"PA_LS_M_MP_K_3_Q_4_P_24\" and j[\"global\"][\"dpd:model\"].endswith(\"best.safetensors\") and j[\"captures\"] == [{\"core:sample_start\": 0, \"core:frequency\": 2.4e9}] and j[\"annotations\"] == []"' \
    "run -> SigMF: the metadata written ($(head -c 600 "$T/o.sigmf-meta"))"
cp "$T/in.cf32" "$T/in.sigmf-data"
printf '{"global": {"core:datatype": "cf32_le", "core:sample_rate": 800000000, "core:version": "1.0.0"}, "captures": [{"core:sample_start": 0, "core:frequency": 3.5e9}], "annotations": []}\n' >"$T/in.sigmf-meta"
run --input "$T/in.sigmf-data" --output "$T/o2.sigmf-data"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$T/o2.sigmf-data" "$T/out.cf32" && jq1 "$T/o2.sigmf-meta" "j[\"global\"][\"core:sample_rate\"] == 8e8 and j[\"captures\"][0][\"core:frequency\"] == 3.5e9"' \
    "run SigMF -> SigMF: fs and frequency carried over (exit $rc: $(head -c 200 "$T/err"))"
run --input "$T/in.sigmf-meta" --output "$T/o3.cf32"; rc=$?
check '[ $rc -eq 0 ] && cmp -s "$T/o3.cf32" "$T/out.cf32"' "run names a SigMF recording by its .sigmf-meta too"
expect 2 "disagrees with the sample rate" "$DPD" run --model "$RD" --input "$T/in.sigmf-data" --output "$T/x.sigmf-data" --fs 1e6
expect 2 "dpd: --freq: -1 must be a positive centre frequency in Hz" "$DPD" run --model "$RD" --input "$T/in.sigmf-data" --output "$T/x.sigmf-data" --freq -1
expect 2 "dpd: --freq goes into a SigMF output's metadata (.sigmf-data), and --output $T/x.cf32 is raw .cf32" "$DPD" run --model "$RD" --input "$T/in.sigmf-data" --output "$T/x.cf32" --freq 2e9
check '[ ! -e "$T/x.sigmf-data" ] && [ ! -e "$T/x.sigmf-meta" ] && [ ! -e "$T/x.cf32" ]' "a refused --freq leaves no output"
run --input "$T/in.sigmf-data" --output "$T/y.mat"; rc=$?
check '[ $rc -eq 0 ] && [ "$(head -c 19 "$T/y.mat")" = "MATLAB 5.0 MAT-file" ]' "run SigMF -> .mat (exit $rc: $(head -c 200 "$T/err"))"
run --input "$T/in.cf32" --output "$T/y73.mat" --mat-version 7.3; rc=$?
check '[ $rc -eq 0 ] && [ "$(od -An -c -j 513 -N 3 "$T/y73.mat" | tr -d " ")" = "HDF" ]' "run -> .mat v7.3 (exit $rc: $(head -c 200 "$T/err"))"
for m in y.mat y73.mat; do # a .mat input's default signal is x, the input dpd run wrote beside y
    run --input "$T/$m" --output "$T/z.cf32"; rc=$?
    check '[ $rc -eq 0 ] && cmp -s "$T/z.cf32" "$T/out.cf32"' "run $m (its x) -> .cf32: the samples of the .cf32 path (exit $rc: $(head -c 200 "$T/err"))"
done
run --input "$T/y.mat" --var y --output "$T/yy.cf32"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/yy.cf32" ] && ! cmp -s "$T/yy.cf32" "$T/out.cf32"' "run --var y applies the model to the output"
expect 1 "no variable 'nosuch'" "$DPD" run --model "$RD" --input "$T/y.mat" --var nosuch --output "$T/x.cf32"
expect 2 "--mat-version: '7' must be 5 or 7.3" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/x.mat" --mat-version 7
expect 2 "input's format" "$DPD" run --model "$RD" --input "$T/a/test_input.csv" --output "$T/x.cf32"
expect 2 "no/such/dir/x.mat: $T/no/such/dir does not exist" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/no/such/dir/x.mat"
check '! ls "$T" | grep -q "\.tmp\."' "no temporary file left by any run"

# --- scipy.io.loadmat reads what dpd wrote; dpd reads what scipy wrote ---
if [ -n "$PY" ]; then
    cat >"$T/check.py" <<'EOF'
import sys, numpy as np, scipy.io as sio
t = sys.argv[1]
def fail(m): print(m); sys.exit(1)
d = sio.loadmat(t + "/y.mat")
out = np.fromfile(t + "/out.cf32", dtype="<f4").view("<c8")
inp = np.fromfile(t + "/in.cf32", dtype="<f4").view("<c8")
if d["y"].dtype != np.complex64 or d["y"].shape != (len(out), 1) or not np.array_equal(d["y"][:, 0], out): fail("y.mat: y")
if d["x"].dtype != np.complex128 or not np.array_equal(d["x"][:, 0], inp.astype(np.complex128)): fail("y.mat: x")
if d["fs"].shape != (1, 1) or d["fs"][0, 0] != 8e8: fail("y.mat: fs %r" % d["fs"])
c = sio.loadmat(t + "/c.mat")
C, coef, k, q = c["Coefficients"], c["coef"][:, 0], c["term_k"][:, 0], c["term_q"][:, 0]
if C.shape != (4, 3) or coef.shape != (12,) or str(c["family"][0]) != "mp": fail("c.mat: shapes %r %r" % (C.shape, coef.shape))
if c["degree"][0, 0] != 3 or c["memory_depth"][0, 0] != 4 or c["cross"][0, 0] != 0: fail("c.mat: sizes")
for p in range(12):
    if C[int(q[p]), int(k[p])] != coef[p]: fail("c.mat: Coefficients(%d, %d) != coef(%d)" % (q[p] + 1, k[p] + 1, p + 1))
# comm.DPD's memory polynomial with C on the input reproduces dpd run's output (float32 rounding apart)
x = inp.astype(np.complex128)
y = np.zeros_like(x)
for m in range(4):
    xm = np.concatenate([np.zeros(m, complex), x[:len(x) - m]])
    for kk in range(1, 4):
        y += C[m, kk - 1] * xm * np.abs(xm) ** (kk - 1)
err = np.max(np.abs(y - out)) / np.max(np.abs(out))
if not err < 1e-5: fail("c.mat: comm.DPD's polynomial differs from dpd run by %g" % err)
# files for dpd to read: a complex column as scipy writes it, and N x 2 I,Q columns named iq
sio.savemat(t + "/sp.mat", {"x": inp.astype(np.complex128).reshape(-1, 1), "fs": 8e8})
sio.savemat(t + "/iq.mat", {"iq": np.stack([inp.real, inp.imag], axis=1).astype(np.float32)})
EOF
    out=$("$PY" "$T/check.py" "$T" 2>&1); rc=$?
    check '[ $rc -eq 0 ]' "scipy.io.loadmat of dpd's .mat files: $out"
    for m in sp.mat iq.mat; do
        run --input "$T/$m" --output "$T/z.cf32"; rc=$?
        check '[ $rc -eq 0 ] && cmp -s "$T/z.cf32" "$T/out.cf32"' "run of scipy's $m: the samples of the .cf32 path (exit $rc: $(head -c 200 "$T/err"))"
    done
else
    echo "SKIP recordings scipy: no python3 with scipy.io (Debian's python3-scipy)"; skip=$((skip + 1))
fi

# --- hostile recordings: a message, exit 1 or 2, no crash, no output ---
hostile() {
    what=$1; needle=$2; shift 2
    "$DPD" run --model "$RD" --output "$T/h.cf32" "$@" >"$T/out" 2>"$T/err"; rc=$?
    if [ $rc -ge 1 ] && [ $rc -le 2 ] && grep -qF -- "$needle" "$T/err" && [ ! -e "$T/h.cf32" ]; then ok
    else bad "$what: exit $rc, stderr: $(head -c 300 "$T/err") (want '$needle')"; fi
}
cp "$T/in.cf32" "$T/h.sigmf-data"
for meta in 'not json' '{"global": {"core:datatype": "cf32_le",}' '' '[]' '{"global": 3}' \
            '{"global": {"core:datatype": 32}}' '{"global": {"core:datatype": "cf32_le", "core:sample_rate": "fast"}}' \
            '{"global": {"core:datatype": "cf32_le", "core:sample_rate": -8e8}}' \
            '{"global": {"core:datatype": "cf32_le"}, "captures": "none"}' \
            '{"global": {"core:datatype": "cf32_le"}, "captures": [{"core:frequency": [1]}]}' \
            '{"global": {"core:datatype": "cf32_le", "core:num_channels": 4}}'; do
    printf '%s' "$meta" >"$T/h.sigmf-meta"
    hostile "sigmf-meta '$meta'" "h.sigmf-meta" --input "$T/h.sigmf-data"
done
# a dpd run's .mat read back: the input by default, with a note that --var y reads its output
"$DPD" run --model "$RD" --input "$T/y.mat" --output "$T/yy.csv" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: note: $T/y.mat holds .y. too (dpd run.s output, or dpd synth --mat.s PA output)" "$T/err"' \
    "run on a dpd run's .mat: says it reads the input, and how to read the output (exit $rc: $(head -c 200 "$T/err"))"
expect 2 "dpd: --var names a MATLAB input's variable (.mat)" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/v.cf32" --var y
expect 2 "dpd: --mat-version is for a MATLAB output (.mat)" "$DPD" run --model "$RD" --input "$T/in.cf32" --output "$T/v.cf32" --mat-version 7.3
# what would change how the samples are read is refused, not ignored: a header in the data file, a retune
printf '{"global": {"core:datatype": "cf32_le"}, "captures": [{"core:sample_start": 0, "core:header_bytes": 8}]}' >"$T/h.sigmf-meta"
hostile "header bytes" "captures[0] core:header_bytes is not 0: dpd reads the data file as samples from its first byte" --input "$T/h.sigmf-data"
printf '{"global": {"core:datatype": "cf32_le"}, "captures": [{"core:sample_start": 0, "core:frequency": 2.4e9}, {"core:sample_start": 500, "core:frequency": 3.5e9}]}' >"$T/h.sigmf-meta"
hostile "a retune" "captures[1] core:frequency is not captures[0]'s: the recording retunes" --input "$T/h.sigmf-data"
printf '{"global": {"core:datatype": "cf32_le"}, "captures": [{"core:sample_start": 0, "core:frequency": 2.4e9}, {"core:sample_start": 500, "core:frequency": 2.4e9, "core:datetime": "2026-01-01T00:00:00Z"}]}' >"$T/h.sigmf-meta"
"$DPD" run --model "$RD" --input "$T/h.sigmf-data" --output "$T/h2.cf32" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ -s "$T/h2.cf32" ]' "a second capture at the same frequency reads as one recording (exit $rc: $(head -c 200 "$T/err"))"
printf '{"global": {"core:datatype": "ri16_le", "core:sample_rate": 1e6}}' >"$T/h.sigmf-meta"
hostile "another datatype" 'core:datatype is "ri16_le"; dpd reads only cf32_le' --input "$T/h.sigmf-data"
rm -f "$T/h.sigmf-meta"
hostile "a missing sidecar" "a SigMF recording is two files, and its metadata $T/h.sigmf-meta is missing" --input "$T/h.sigmf-data"
head -c 700 "$T/y.mat" >"$T/cut.mat"
hostile "a truncated .mat" "cut.mat: truncated" --input "$T/cut.mat"
head -c 3000 "$T/y73.mat" >"$T/cut73.mat"
hostile "a truncated .mat v7.3" "cut73.mat" --input "$T/cut73.mat"
cp "$T/a/spec.json" "$T/spec.mat"
hostile "JSON named .mat" "spec.mat: not a MATLAB .mat file" --input "$T/spec.mat"
hostile "a .mat of coefficients" "no variable 'x', 'iq', 'input' or 'in'" --input "$T/c.mat"

# --- dpd synth: presets and SigMF ---
"$DPD" synth --out "$T/d" >/dev/null && "$DPD" synth --out "$T/e" --preset ofdm-mc >/dev/null
same=1; for f in "$T"/d/*; do cmp -s "$f" "$T/e/$(basename "$f")" || same=0; done
check '[ $same -eq 1 ]' "synth --preset ofdm-mc: byte-identical to the default"
"$DPD" synth --out "$T/l" --preset lte20 --sigmf >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/l/spec.json" "j[\"input_signal_fs\"] == 122.88e6 and j[\"nperseg\"] == 8192 and j[\"bw_main_ch\"] == 20e6 and j[\"n_sub_ch\"] == 1 and j[\"generator\"][\"qam\"] == 64"' \
    "synth --preset lte20: spec.json (exit $rc: $(head -c 200 "$T/err"))"
check '[ "$(wc -l <"$T/l/train_input.csv")" -eq 73729 ] && [ "$(wc -c <"$T/l/input.sigmf-data")" -eq 983040 ] && [ "$(wc -c <"$T/l/output.sigmf-data")" -eq 983040 ]' \
    "synth lte20: 15 symbols of 8192 (9 to train), the whole capture in each .sigmf-data"
check 'jq1 "$T/l/input.sigmf-meta" "j[\"global\"][\"core:sample_rate\"] == 122.88e6 and j[\"global\"][\"core:datatype\"] == \"cf32_le\" and \"--preset lte20\" in j[\"global\"][\"core:description\"]" && jq1 "$T/l/output.sigmf-meta" "\"output y\" in j[\"global\"][\"core:description\"]"' \
    "synth --sigmf: the metadata"
# the SigMF input is the CSVs' input, float32-rounded: its first sample
first=$(perl -e 'open(F, "<", $ARGV[0]); read(F, $b, 8); printf("%.6e,%.6e", unpack("f<f<", $b))' "$T/l/input.sigmf-data")
csv=$(sed -n 2p "$T/l/train_input.csv" | awk -F, '{ printf("%.6e,%.6e", $1, $2) }')
check '[ "$first" = "$csv" ]' "synth --sigmf: input.sigmf-data starts where train_input.csv does ($first vs $csv)"
run --input "$T/l/input.sigmf-data" --output "$T/l.mat"; rc=$?
check '[ $rc -eq 0 ]' "run of synth's SigMF capture (exit $rc: $(head -c 200 "$T/err"))"
"$DPD" synth --out "$T/n" --preset nr100 --qam 64 >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/n/spec.json" "j[\"input_signal_fs\"] == 491.52e6 and j[\"nperseg\"] == 16384 and j[\"bw_main_ch\"] == 100e6 and j[\"generator\"][\"qam\"] == 64 and j[\"generator\"][\"occupancy\"] == 0.9828"' \
    "synth --preset nr100 --qam 64: the preset, the explicit option winning (exit $rc: $(head -c 200 "$T/err"))"
expect 2 "--preset: 'lte5' is not one of ofdm-mc, lte20, nr100" "$DPD" synth --out "$T/x" --preset lte5
check '[ ! -e "$T/x" ]' "an unknown preset writes nothing"

# --- a mat dataset: synth --mat, then doctor, train-pa and eval on it ---
"$DPD" synth --out "$T/s" --length 25600 --seed 3 --mat >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(head -c 19 "$T/s/capture.mat")" = "MATLAB 5.0 MAT-file" ]' "synth --mat: capture.mat (exit $rc: $(head -c 200 "$T/err"))"
if [ -n "$PY" ]; then
    check '"$PY" -c "
import scipy.io, numpy, sys
m = scipy.io.loadmat(sys.argv[1]); x = m[\"x\"].ravel(); y = m[\"y\"].ravel()
i = numpy.loadtxt(sys.argv[2], delimiter=\",\", skiprows=1)
assert x.size == y.size == 25600 and float(m[\"fs\"].item()) == 800e6
assert numpy.max(numpy.abs(x[:i.shape[0]] - (i[:, 0] + 1j * i[:, 1]))) < 1e-8
" "$T/s/capture.mat" "$T/s/train_input.csv"' "synth --mat: scipy reads x, y and fs; x is the CSVs' input"
else
    echo "SKIP recordings: synth --mat read back by scipy.io.loadmat (no python3 with scipy)"; skip=$((skip + 1))
fi
mkdir -p "$T/m" && cp "$T/s/capture.mat" "$T/m/pa.mat"
python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); del j['input_signal_fs']
j.update(dataset_format='mat', mat_filename='pa.mat')
json.dump(j, open(sys.argv[2], 'w'))" "$T/s/spec.json" "$T/m/spec.json"
"$DPD" doctor "$T/m" --json >"$T/doc.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/doc.json" "j[\"layout\"] == \"mat\" and j[\"samples\"][\"total\"] == 25600 and j[\"samples\"][\"train\"] + j[\"samples\"][\"val\"] + j[\"samples\"][\"test\"] == 25600 - 512"' \
    "doctor on a mat dataset: layout mat, 25600 samples less two guards (exit $rc: $(head -c 300 "$T/err") $(head -c 300 "$T/doc.json"))"
"$DPD" train-pa --data "$T/m" --hidden 4 --epochs 1 --out "$T/mr" --json >"$T/tr.json" 2>"$T/err"; rc=$?
cfg=$(ls "$T"/mr/m/train_pa/*/config.json 2>/dev/null | head -1)
check '[ $rc -eq 0 ] && [ -n "$cfg" ] && jq1 "$cfg" "j[\"split\"][\"protocol\"] == \"contiguous-v1\" and j[\"split\"][\"guard\"] == 256 and j[\"split\"][\"val\"][0] == j[\"split\"][\"train\"][1] + 256"' \
    "train-pa on a mat dataset: config.json records contiguous-v1 (exit $rc: $(tail -n 2 "$T/err"))"
"$DPD" eval --data "$T/m" --split test --json >"$T/ev.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && jq1 "$T/ev.json" "len(j) > 0"' "eval on a mat dataset (exit $rc: $(head -c 200 "$T/err"))"
python3 -c "
import json, sys
j = json.load(open(sys.argv[1])); j['input_signal_fs'] = 1e9; json.dump(j, open(sys.argv[1], 'w'))" "$T/m/spec.json"
"$DPD" eval --data "$T/m" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "input_signal_fs.*1e+09.*pa.mat says fs = 800000000" "$T/err"' \
    "a mat dataset whose spec.json and file disagree on fs: exit $rc, both named ($(head -c 300 "$T/err"))"
"$DPD" train-pa --data "$T/m" --hidden 4 --epochs 1 --out "$T/mr2" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "doctor refuses" "$T/err" && grep -q "metadata_invalid" "$T/err" && [ ! -e "$T/mr2/m" ]' \
    "train-pa refused by the doctor on that fs conflict, no run left (exit $rc: $(head -c 300 "$T/err"))"

echo "RESULT recordings $pass $fail $skip"
[ "$fail" -eq 0 ]
