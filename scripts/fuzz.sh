#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: the GGUF reader, the RotationZoo loader, the
# tokenizer, the chat template; clang with AddressSanitizer and UndefinedBehaviorSanitizer) in
# build-fuzz and runs each for SECONDS (default 60) on its checked-in seeds
# (tests/fuzz/seeds/<target>, read only) and a working corpus (build-fuzz/corpus/<target>).
# A crash, leak or sanitizer report stops the script with the input saved under
# build-fuzz/artifacts/<target>/ (replay: build-fuzz/tests/fuzz/fuzz_<target> FILE).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: gguf rotation tokenizer chat_template
#   scripts/fuzz.sh --seeds                   rewrite tests/fuzz/seeds with fuzz_make_seeds
# FUZZ_ARGS adds libFuzzer options to every run (e.g. FUZZ_ARGS="-jobs=1 -workers=1").
set -euo pipefail
cd "$(dirname "$0")/.."
all=(gguf rotation tokenizer chat_template)

configure() {
    # clang's fuzzer runtime is a separate package (only recommended by clang on Debian)
    probe='#include <stddef.h>
int LLVMFuzzerTestOneInput(const unsigned char *d, size_t n) { return d && n > 1 ? 0 : 0; }'
    if ! command -v clang >/dev/null ||
        ! printf '%s\n' "$probe" | clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null 2>/dev/null; then
        echo "fuzz.sh: clang with libFuzzer is not installed (apt-get install clang libclang-rt-14-dev)" >&2
        exit 1
    fi
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOSCAR_FUZZ=ON \
        -DOSCAR_BUILD_TESTS=OFF -DOSCAR_BUILD_APPS=OFF >/dev/null
}

if [ "${1:-}" = --seeds ]; then
    configure
    cmake --build build-fuzz -j2 --target fuzz_make_seeds
    for t in "${all[@]}"; do rm -rf "tests/fuzz/seeds/$t" && mkdir -p "tests/fuzz/seeds/$t"; done
    ASAN_OPTIONS=detect_leaks=0 build-fuzz/tests/fuzz/fuzz_make_seeds tests/fuzz/seeds
    exit 0
fi

secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
configure
cmake --build build-fuzz -j2 --target $(printf 'fuzz_%s ' "${targets[@]}")
for t in "${targets[@]}"; do
    mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
    echo "fuzz.sh: $t for $secs s"
    log=build-fuzz/fuzz-$t.log
    rc=0
    # shellcheck disable=SC2086
    build-fuzz/tests/fuzz/fuzz_$t "build-fuzz/corpus/$t" "tests/fuzz/seeds/$t" -max_total_time="$secs" \
        -artifact_prefix="build-fuzz/artifacts/$t/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1 || rc=$?
    grep -E '^stat::number_of_executed_units|^#[0-9]+ +DONE' "$log" || true
    if [ "$rc" -ne 0 ]; then
        tail -n 40 "$log" >&2
        echo "fuzz.sh: $t found a failure (input in build-fuzz/artifacts/$t/, log $log)" >&2
        exit 1
    fi
done
