#!/bin/sh
# Black-box tests of `dpd doctor` and the training gate: the exit codes (0 clean, 1 an error-level
# finding, 2 usage), --json parses and its file hashes are the files' sha256sum, a NaN capture is
# blocked with its location, train-pa/train-dpd refuse a broken capture naming the finding and
# --no-doctor overrides it, --fix-delay writes a new aligned directory while the source's bytes stay
# the same, and malformed input (text in a number field, hostile spec.json) gives a clear message
# and no crash.
# Usage: sh tests/doctor.sh BUILD_DIR. Prints "RESULT doctor_cli <passed> <failed> <skipped>".
BUILD=${1:-build}
DPD="$BUILD/dpd"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NAME=doctor_cli
. "$(dirname "$0")/lib.sh"
if [ ! -x "$DPD" ] || ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP doctor_cli: needs $DPD and python3"; echo "RESULT doctor_cli 0 0 1"; exit 0
fi
# py FILE EXPR: EXPR (Python, j = the JSON in FILE) is true
py() { python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$1" "$2" 2>/dev/null; }
# sums DIR: one line per file, name and sha256
sums() { (cd "$1" && sha256sum * | sort -k2); }
FILES="train_input.csv train_output.csv val_input.csv val_output.csv test_input.csv test_output.csv"

"$DPD" synth --out "$T/a" --seed 4 >/dev/null || { echo "RESULT doctor_cli 0 1 0"; exit 1; }

# --- a clean capture: exit 0, a table, JSON with the files' hashes ---
"$DPD" doctor "$T/a" >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^severity *code *value *fix" "$T/out" && grep -q "^info *alignment_ok" "$T/out" &&
       grep -q "evaluation blocked: no" "$T/out"' "a clean capture: exit 0 and a table (exit $rc: $(head -c 300 "$T/err"))"
# aligned FILE: every finding's fix starts in the header's fix column, after a space (a long value widens its column)
aligned() { python3 - "$1" <<'EOF'
import sys
rows = open(sys.argv[1], encoding="utf-8").read().split("\n\n")[1].splitlines()
at = rows[0].index("fix")
ok = all(r[at - 1] == " " and r[at] != " " for r in rows[1:] if not r.startswith(" "))
sys.exit(0 if ok and len(rows) > 1 else 1)
EOF
}
check 'aligned "$T/out"' "the table's columns line up ($(sed -n 4,6p "$T/out"))"
# six-digit split lengths: a 36-character split_lengths value, wider than the value column's header had room for
"$DPD" synth --out "$T/long" --length 192000 --seed 4 >/dev/null
"$DPD" doctor "$T/long" >"$T/long.txt" 2>&1
check 'grep -q "115200 / 38400 / 38400, nperseg 2560 " "$T/long.txt" && aligned "$T/long.txt"' \
    "a long value widens its column: the table still lines up ($(grep split_lengths "$T/long.txt"))"
"$DPD" doctor "$T/a" --json >"$T/a.json" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(wc -l <"$T/a.json")" -eq 1 ] && py "$T/a.json" "j[\"doctor_version\"] == \"dataset-doctor-v1\" and
       j[\"evaluation_blocked\"] is False and j[\"samples\"][\"total\"] == 38400 and j[\"id\"].endswith(j[\"raw_sha256\"][:8]) and
       all(set(f) >= {\"code\", \"severity\", \"title\", \"message\", \"value\", \"evidence\", \"fix\", \"confidence\", \"blocking\"}
           for f in j[\"findings\"])"' "--json: one valid object with the report's fields ($(head -c 300 "$T/a.json"))"
for f in $FILES spec.json; do
    want=$(sha256sum "$T/a/$f" | cut -c1-64)
    check 'py "$T/a.json" "[x[\"sha256\"] for x in j[\"files\"] if x[\"name\"] == \"$f\"] == [\"$want\"]"' "--json: $f's sha256 is sha256sum's"
done
check 'py "$T/a.json" "[f[\"severity\"] for f in j[\"findings\"]] == sorted([f[\"severity\"] for f in j[\"findings\"]],
       key=[\"error\", \"warning\", \"info\"].index)"' "--json: findings sorted error, warning, info"

# --- NaN: exit 1, blocked, located ---
cp -r "$T/a" "$T/nan"
awk -F, 'NR == 10 { print "nan," $2; next } { print }' "$T/a/val_output.csv" >"$T/nan/val_output.csv"
"$DPD" doctor "$T/nan" >"$T/out" 2>&1; rc=$?
check '[ $rc -eq 1 ] && grep -q "^error *non_finite_samples" "$T/out" && grep -q "val_output.csv:10" "$T/out" &&
       grep -q "evaluation blocked: yes" "$T/out"' "a NaN: exit 1, non_finite_samples at val_output.csv:10 (exit $rc)"
"$DPD" doctor "$T/nan" --json >"$T/nan.json" 2>/dev/null; rc=$?
check '[ $rc -eq 1 ] && py "$T/nan.json" "j[\"evaluation_blocked\"] and j[\"findings\"][0][\"code\"] == \"non_finite_samples\" and
       j[\"findings\"][0][\"evidence\"][\"output_indices\"] == [23040 + 8]"' "--json on a NaN: blocked, its index (exit $rc)"

# --- the training gate ---
mkdir -p "$T/few" && cp "$T/a/spec.json" "$T/few/"
for f in $FILES; do head -n 101 "$T/a/$f" >"$T/few/$f"; done
"$DPD" train-pa --data "$T/few" --hidden 4 --frame 20 --stride 10 --batch 4 --epochs 1 --no-plots --out "$T/r" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "refuses .*too_few_samples" "$T/err" && grep -q -- "--no-doctor" "$T/err" && [ ! -e "$T/r" ]' \
    "train-pa refuses a 300-sample capture naming too_few_samples (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" train-dpd --data "$T/few" --pa "$T/nosuch" --epochs 1 --out "$T/r" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "too_few_samples" "$T/err" && [ ! -e "$T/r" ]' "train-dpd refuses it too (exit $rc)"
"$DPD" train-pa --data "$T/few" --hidden 4 --frame 20 --stride 10 --batch 4 --epochs 1 --no-plots --no-doctor --out "$T/r" \
    >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && ls "$T"/r/few/train_pa/*/best.safetensors >/dev/null 2>&1 && ! grep -q refuses "$T/err"' \
    "--no-doctor trains anyway (exit $rc: $(tail -n 2 "$T/err"))"
# warnings never refuse, but the ones that bear on the figures are said (a bandwidth that is not the
# signal's); the protocol's gain offset (dpd synth's +7.9 dB: a PA's gain) is not
mkdir -p "$T/bw" && cp "$T/a/"*.csv "$T/bw/" && sed 's/"bw_main_ch": *[0-9.e+]*/"bw_main_ch": 100e6/' "$T/a/spec.json" >"$T/bw/spec.json"
"$DPD" train-pa --data "$T/bw" --hidden 4 --frame 20 --stride 10 --batch 4 --epochs 1 --no-plots --out "$T/rbw" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "dataset doctor" "$T/err")" -eq 1 ] &&
       grep -q "^dpd: warning: the dataset doctor on $T/bw: Bandwidth does not match spec.json (OBW [0-9.]* MHz, declared 100 MHz) (.dpd doctor $T/bw. gives" "$T/err"' \
    "train-pa trains on a dataset with a warning, and says it in one line (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" train-pa --data "$T/a" --hidden 4 --frame 20 --stride 10 --batch 4 --epochs 1 --no-plots --out "$T/ra" >/dev/null 2>"$T/err"
check '! grep -q "dataset doctor" "$T/err"' "train-pa on dpd synth's data: no doctor line (its gain offset is no warning worth saying)"
# I and Q swapped in one split's output alone (the capture's correlation, read mostly on train, is fine):
# split_uncorrelated names the split, and gates train-pa
mkdir -p "$T/vsw" && cp "$T/a/"* "$T/vsw/"
awk -F, 'NR == 1 { print; next } { print $2 "," $1 }' "$T/a/val_output.csv" >"$T/vsw/val_output.csv"
"$DPD" doctor "$T/vsw" --json >"$T/vsw.json" 2>/dev/null
check 'python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
f = [x for x in r[\"findings\"] if x[\"code\"] == \"split_uncorrelated\"]
assert len(f) == 1 and f[0][\"severity\"] == \"error\" and \"val_output.csv\" in f[0][\"fix\"] and \"I and Q are swapped\" in f[0][\"message\"], f
assert any(x[\"code\"] == \"alignment_ok\" for x in r[\"findings\"])
" "$T/vsw.json"' "doctor: I and Q swapped in val_output.csv alone is split_uncorrelated, naming the file ($(head -c 300 "$T/vsw.json"))"
"$DPD" train-pa --data "$T/vsw" --epochs 1 --out "$T/rvsw" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "refuses .*split_uncorrelated" "$T/err" && [ ! -e "$T/rvsw" ]' \
    "train-pa refuses a split with I and Q swapped (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" doctor "$T/a" --json >"$T/clean.json" 2>/dev/null
check '! grep -q split_uncorrelated "$T/clean.json"' "doctor: no split_uncorrelated on a clean dataset"
# I and Q swapped in the output: the doctor's error gates train-pa; fit-ls, which it does not gate, says it
mkdir -p "$T/swap" && cp "$T/a/spec.json" "$T/a/"*_input.csv "$T/swap/"
for s in train val test; do awk -F, 'NR == 1 { print; next } { print $2 "," $1 }' "$T/a/${s}_output.csv" >"$T/swap/${s}_output.csv"; done
"$DPD" train-pa --data "$T/swap" --epochs 1 --out "$T/rsw" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "refuses .*output_uncorrelated" "$T/err" && [ ! -e "$T/rsw" ]' \
    "train-pa refuses an output with I and Q swapped, naming output_uncorrelated (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" fit-ls --data "$T/swap" --K 3 --Q 4 --out "$T/rsw" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "^dpd: warning: the dataset doctor on $T/swap: error: Output follows the conjugate of the input (correlation 0.0[0-9]* (0.99[0-9]* conjugated))" "$T/err"' \
    "fit-ls, not gated, still says the doctor's error (exit $rc: $(head -c 300 "$T/err"))"
"$DPD" train-pa --data "$T/nan" --epochs 1 --out "$T/r2" >/dev/null 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "non_finite_samples" "$T/err" && [ ! -e "$T/r2" ]' "train-pa refuses a NaN capture (exit $rc)"

# --- --fix-delay: a new directory, aligned; the source untouched ---
mkdir -p "$T/late" && cp "$T/a/spec.json" "$T/late/" && cp "$T/a/"*_input.csv "$T/late/"
for s in train val test; do # the output 5 samples late
    awk 'NR == 1 { print; for (i = 0; i < 5; i++) print "0,0"; next } { r[NR] = $0 } END { for (i = 2; i <= NR - 5; i++) print r[i] }' \
        "$T/a/${s}_output.csv" >"$T/late/${s}_output.csv"
done
"$DPD" doctor "$T/late" --json >"$T/late.json" 2>/dev/null; rc=$?
check '[ $rc -eq 0 ] && py "$T/late.json" "abs(j[\"estimates\"][\"delay_samples\"] - 5) < 0.1 and
       [f[\"suggestion\"] for f in j[\"findings\"] if f[\"code\"] == \"time_misalignment\"] == [\"fix_delay\"]"' \
    "an output 5 samples late: time_misalignment, delay 5 (exit $rc)"
sums "$T/late" >"$T/before"
"$DPD" doctor "$T/late" --fix-delay --out "$T/fixed" >"$T/out" 2>"$T/err"; rc=$?
sums "$T/late" >"$T/after"
check '[ $rc -eq 0 ] && grep -q "wrote $T/fixed: output shifted by 5 samples" "$T/out"' "--fix-delay writes the copy (exit $rc: $(head -c 300 "$T/err"))"
check 'cmp -s "$T/before" "$T/after"' "--fix-delay leaves the source's bytes as they were"
check 'cmp -s "$T/late/spec.json" "$T/fixed/spec.json" && [ "$(wc -l <"$T/fixed/val_output.csv")" -eq $((7680 - 5 + 1)) ] &&
       ! ls "$T" | grep -q tmp' "the copy: spec.json unchanged, each split 5 shorter, no temporary left"
"$DPD" doctor "$T/fixed" --json >"$T/fixed.json" 2>/dev/null; rc=$?
check '[ $rc -eq 0 ] && py "$T/fixed.json" "abs(j[\"estimates\"][\"delay_samples\"]) < 0.1"' "the copy re-examined is aligned (exit $rc)"
"$DPD" doctor "$T/late" --fix-gain --json --out "$T/fixed2" >"$T/f2.json" 2>/dev/null; rc=$?
check '[ $rc -eq 0 ] && py "$T/f2.json" "j[\"fixed\"][\"shift\"] == 0 and abs(j[\"fixed\"][\"gain_db\"] - j[\"estimates\"][\"gain_db\"]) < 1e-9"' \
    "--fix-gain --json reports the gain divided out (exit $rc)"
# a place no one may create a directory in: the message names --out, not the temporary name beside it
expect 1 "/proc/dpd-fixed: cannot create the corrected copy there" "$DPD" doctor "$T/late" --fix-gain --out /proc/dpd-fixed

# --- usage errors: exit 2 ---
expect 2 "--out DIR exactly when" "$DPD" doctor "$T/a" --fix-delay
expect 2 "--out DIR exactly when" "$DPD" doctor "$T/a" --out "$T/x"
expect 2 "--out DIR exactly when" "$DPD" doctor
expect 2 "never writes in place" "$DPD" doctor "$T/late" --fix-delay --out "$T/late"
"$DPD" synth --out "$T/narrow" --carriers 1 --carrier-bw 15e6 >/dev/null 2>&1
"$DPD" doctor "$T/narrow" >"$T/out" 2>&1
check '! grep -q bandwidth_exceeds_channel "$T/out" && grep -q spectrum_summary "$T/out"' "a 15 MHz channel at 800 MS/s (under 40 of the OBW's bins): not judged too wide"
mkdir -p "$T/semi" && cp "$T/a"/* "$T/semi/" && sed -i "s/,/;/" "$T/semi/train_input.csv"
expect 1 "train_input.csv:1: header lacks column 'I': its fields are separated by ';'" "$DPD" doctor "$T/semi"
expect 2 "is not an empty directory" "$DPD" doctor "$T/late" --fix-delay --out "$T/a"
expect 2 "one DATA_DIR" "$DPD" doctor "$T/a" "$T/late"
expect 2 "unknown option '--nosuch'" "$DPD" doctor "$T/a" --nosuch
"$DPD" doctor --help >"$T/out" 2>&1; rc=$?
check '[ $rc -eq 0 ] && grep -q "fix-delay" "$T/out"' "--help: exit 0 with the options"

# --- malformed input: a clear message, no crash ---
cp -r "$T/a" "$T/bad"
printf 'I,Q\n0.1,0.2\n0.3,abc\n' >"$T/bad/val_output.csv"
expect 1 "val_output.csv:3: field 2 ('abc') is not a number" "$DPD" doctor "$T/bad"
expect 1 "no such directory" "$DPD" doctor "$T/nosuch"
cp "$T/a/spec.json" "$T/bad/good.json" && cp "$T/a/val_output.csv" "$T/bad/"
printf '\377\376garbage\000\001' >"$T/bad/spec.json"
expect 1 "spec.json" "$DPD" doctor "$T/bad"
python3 -c 'print("[" * 100000 + "]" * 100000)' >"$T/bad/spec.json"
expect 1 "spec.json" "$DPD" doctor "$T/bad"
printf '{"input_signal_fs": 1e999}' >"$T/bad/spec.json"
expect 1 "spec.json:1:25: real number overflow" "$DPD" doctor "$T/bad"
printf '{"input_signal_fs": -1, "bw_main_ch": "wide", "n_sub_ch": -3, "nperseg": 1e300, "dataset_format": "split_csv"}' \
    >"$T/bad/spec.json"
"$DPD" doctor "$T/bad" >"$T/out" 2>&1; rc=$?
check '[ $rc -eq 1 ] && grep -q "^error *metadata_invalid" "$T/out"' "a spec.json of hostile values: metadata_invalid, exit 1 (exit $rc)"
rm "$T/bad/spec.json"
"$DPD" doctor "$T/bad" --json >"$T/nospec.json" 2>/dev/null; rc=$?
check '[ $rc -eq 1 ] && py "$T/nospec.json" "[f[\"evidence\"][\"missing\"] for f in j[\"findings\"] if f[\"code\"] == \"metadata_missing\"] ==
       [\"input_signal_fs, bw_main_ch, n_sub_ch, nperseg\"]"' "no spec.json: metadata_missing names every field (exit $rc)"

# --- one file of a split without its partner: split_file_missing, and not split_missing as well ---
cp -r "$T/a" "$T/half" && rm "$T/half/val_output.csv"
"$DPD" doctor "$T/half" >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "^error  *split_file_missing  *val_output.csv missing" "$T/out" && ! grep -q split_missing "$T/out"' \
    "val_input.csv without its partner: split_file_missing alone, not split_missing (exit $rc: $(head -c 400 "$T/out"))"
"$DPD" eval --data "$T/half" --split test >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "A split file has no partner (val_output.csv missing)" "$T/err" && ! grep -q "A split is absent" "$T/err"' \
    "and eval on the test split says so, and no absent split (exit $rc: $(head -c 400 "$T/err"))"

# --- a malformed line in a split the command does not read: eval says the doctor cannot read the dataset ---
cp -r "$T/a" "$T/other" && sed -i '3s/.*/0.1,abc/' "$T/other/val_input.csv"
"$DPD" eval --data "$T/other" --split test >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -eq 0 ] && grep -qF "dpd: warning: the dataset doctor cannot read $T/other, so none of its checks ran: $T/other/val_input.csv:3: field 2 (" "$T/err" &&
       grep -q "^other test: 7680 samples" "$T/out"' \
    "eval --split test with a malformed val_input.csv: the test split scored, and a warning that the doctor cannot read it (exit $rc: $(head -c 400 "$T/err"))"

# --- a malformed line in a split fit-ls reads: told once, by the fit (the doctor runs after the fit's reading) ---
cp -r "$T/a" "$T/trainbad" && sed -i '3s/.*/0.1,abc/' "$T/trainbad/train_input.csv"
"$DPD" fit-ls --data "$T/trainbad" --K 3 --Q 4 --out "$T/rtb" >"$T/out" 2>"$T/err"; rc=$?
check '[ $rc -ne 0 ] && [ "$(grep -c "train_input.csv:3: field 2" "$T/err")" = 1 ] && ! grep -q "doctor cannot read" "$T/err"' \
    "fit-ls with a malformed train_input.csv: the error told once, not again by the doctor (exit $rc: $(head -c 400 "$T/err"))"

# --- a required spec.json key misspelt: the loader and the doctor name the likely misspelling ---
cp -r "$T/a" "$T/typo" && sed -i 's/"nperseg"/"nperseq"/' "$T/typo/spec.json"
expect 1 "typo/spec.json: field 'nperseg' is missing (the RF metrics need it); is 'nperseq' a misspelling of it?" "$DPD" eval --data "$T/typo"
"$DPD" doctor "$T/typo" >"$T/typo.txt" 2>"$T/err"; rc=$?
"$DPD" doctor "$T/typo" --json >"$T/typo.json" 2>>"$T/err"
printf '%s\n' "add nperseg to spec.json: rename 'nperseq' to nperseg (misspelt" >"$T/needle"
check '[ $rc -eq 1 ] && grep -qF -f "$T/needle" "$T/typo.txt" &&
       py "$T/typo.json" "[f[\"evidence\"].get(\"misspelt\") for f in j[\"findings\"] if f[\"code\"] == \"metadata_missing\"] == [chr(39) + \"nperseq\" + chr(39) + \" to nperseg\"]"' \
    "doctor: metadata_missing's fix and evidence name the misspelt key (exit $rc: $(grep metadata_missing "$T/typo.txt" | head -c 300))"

echo "RESULT doctor_cli $pass $fail 0"
[ "$fail" -eq 0 ]
