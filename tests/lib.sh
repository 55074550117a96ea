# lib: the checks the shell tests share (sourced, not run). Set NAME (the suite's name in "FAIL
# NAME: ...") and T (a scratch directory) first. Counts in pass and fail.
pass=0; fail=0
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL $NAME: $*" >&2; }
check() { if eval "$1"; then ok; else bad "$2"; fi; }
# expect CODE NEEDLE cmd...: exit status and a stderr substring
expect() {
    code=$1; needle=$2; shift 2
    "$@" >"$T/out" 2>"$T/err"; rc=$?
    if [ "$rc" -eq "$code" ] && grep -qF -- "$needle" "$T/err"; then ok
    else bad "'$*' exited $rc (want $code), stderr: $(head -c 300 "$T/err") (want '$needle')"; fi
}
