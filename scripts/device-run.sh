#!/usr/bin/env bash
# Runs on the GPU machine (after `source DIR/env.sh`, DIR as given to scripts/device-pack.sh):
# oscar-info with bandwidth, then every packed test binary with the validation layer on. Output
# goes to stdout and $OUT.
set -uo pipefail
out=${OUT:-/tmp}
oscar-info --bandwidth 2048 2>&1 | tee "$out/oscar-info.txt"
pass=0 fail=0 skip=0
cd "${OSCAR_DEVICE_DIR:-.device}/tests"
for t in ./test_*; do
    OSCAR_VALIDATION=1 timeout 300 "$t" > "$out/$(basename "$t").log" 2>&1
    rc=$?
    case $rc in
        0) pass=$((pass + 1)) ;;
        77) skip=$((skip + 1)) ;;
        *) fail=$((fail + 1)); echo "FAILED: $t (rc $rc)"; tail -20 "$out/$(basename "$t").log" ;;
    esac
done
echo "device tests: $pass passed, $fail failed, $skip skipped"
