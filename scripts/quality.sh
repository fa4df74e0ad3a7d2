#!/usr/bin/env bash
# KV-cache quality report for SmolLM2-135M-Instruct (docs/quality.md), in two halves:
#
#   scripts/quality.sh prepare OUTDIR        CPU machine: model, texts, OSCAR rotation files
#   scripts/quality.sh run OUTDIR [TASKS]    GPU machine: oscar-quality -> OUTDIR/quality.md
#
# prepare writes into OUTDIR:
#   model.part-00, model.part-01, model.sha256   the GGUF (scripts/fetch-smollm2.sh) in two pieces of
#                                               at most 48 MiB, so that each fits one device carry
#   eval.txt                                    evaluation text (gnu-standards, scripts/make_calib_text.sh)
#   rot/layer.fitted.rot.gguf  rot/head.fitted.rot.gguf  rot/layer.fixed.rot.gguf  rot/layer.scores.rot.gguf
#   rot/head.centered.rot.gguf  rot/head.refit.rot.gguf  rot/head.nearest.rot.gguf  rot/head.uncentered.rot.gguf
#                                               oscar-calib on calib.txt (debian-handbook), 20K tokens;
#                                               the keys centered per block of 128 positions (the
#                                               default) but head.centered (keys, and values) and
#                                               head.uncentered (neither), all with
#                                               the key codes' error feedback (the default) but
#                                               head.nearest, none with the least-squares refit (the
#                                               default) but head.refit (3 rounds), all with the key
#                                               rotation spread over the context (the default)
#                                               (and each run's log, rot/NAME.calib.log)
# To carry OUTDIR to the GPU machine (64 MiB per call): first model.part-00 with rot/layer.*,
# then model.part-01, model.sha256, eval.txt and rot/head.* with the binaries.
# (calib.txt stays in OUTDIR/text/ and is not needed by run.)
# run joins the pieces into OUTDIR/model.gguf when it is missing (checking the sha256), then runs
# oscar-quality with every mode and writes OUTDIR/quality.md; with TASKS (a subset of
# ppl,passkey,agree) it runs only those and writes OUTDIR/quality.TASKS.md, so a run that would
# not fit one command's time can be split.
#
# Binaries: oscar-calib / oscar-quality from $OSCAR_BIN_DIR, else PATH, else build/ and build/apps/
# (OSCAR_BUILD=DIR names another build folder). Settings (environment, defaults in brackets):
#   QUALITY_CTX [512,2048,8192]  QUALITY_MAX_CHUNKS [16]  QUALITY_PARALLEL [16]
#   QUALITY_PASSKEY_LENGTHS [1024,4096]  QUALITY_PASSKEY_TRIALS [5]
#   QUALITY_AGREE_PROMPTS [20]  QUALITY_AGREE_TOKENS [128]  QUALITY_AGREE_SINK [64,4]  QUALITY_AGREE_RECENT [256,8]
#   CALIB_TOKENS [20000]  CALIB_THREADS [nproc]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${OSCAR_BUILD:-$root/build}"
fail() { echo "quality.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || fail "usage: scripts/quality.sh prepare|run OUTDIR [TASKS]"
cmd=$1
out=$2
tasks=${3:-}

# find_bin NAME: the path of a project binary
find_bin() {
    local c
    for c in ${OSCAR_BIN_DIR:+"$OSCAR_BIN_DIR/$1"} "$(command -v "$1" 2>/dev/null || true)" "$build/$1" "$build/apps/$1"; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    fail "$1 not found (build it, or set OSCAR_BIN_DIR or OSCAR_BUILD)"
}

prepare() {
    mkdir -p "$out/text" "$out/rot"
    local calib model
    calib=$(find_bin oscar-calib)
    model=$("$here/fetch-smollm2.sh") || fail "cannot fetch SmolLM2"
    "$here/make_calib_text.sh" "$out/text" || fail "cannot extract the texts"
    cp "$out/text/eval.txt" "$out/eval.txt"
    rm -f "$out"/model.part-*
    split -b 48M -d -a 2 "$model" "$out/model.part-"
    (cd "$(dirname "$model")" && sha256sum "$(basename "$model")") | awk '{print $1"  model.gguf"}' > "$out/model.sha256"
    local tokens=${CALIB_TOKENS:-20000} threads=${CALIB_THREADS:-$(nproc)}
    local src="debian-handbook: /usr/share/doc/debian-handbook/html/en-US/*.html"
    # name grouping clip values center key-rounding refit-rounds key-spread
    local variants=("layer.fitted layer fitted proxy keys feedback 0 yes" "head.fitted head fitted proxy keys feedback 0 yes"
                    "layer.fixed layer fixed proxy keys feedback 0 yes" "layer.scores layer fitted scores keys feedback 0 yes"
                    "head.centered head fitted proxy yes feedback 0 yes" "head.refit head fitted proxy keys feedback 3 yes"
                    "head.nearest head fitted proxy keys nearest 0 yes" "head.uncentered head fitted proxy no feedback 0 yes")
    local v name g c vals ctr kr rf ks
    for v in "${variants[@]}"; do
        read -r name g c vals ctr kr rf ks <<< "$v"
        if [ -s "$out/rot/$name.rot.gguf" ] && [ "$out/rot/$name.rot.gguf" -nt "$model" ]; then
            echo "quality.sh: $name.rot.gguf exists, kept" >&2
            continue
        fi
        echo "quality.sh: oscar-calib $name" >&2
        "$calib" -m "$model" --text "$out/text/calib.txt" --text-source "$src" --tokens "$tokens" --seq-len 512 \
            --grouping "$g" --clip "$c" --values "$vals" --center "$ctr" --key-rounding "$kr" --refit "$rf" --key-spread "$ks" --threads "$threads" \
            -o "$out/rot/$name.rot.gguf" \
            > "$out/rot/$name.calib.log" || fail "oscar-calib $name failed (see $out/rot/$name.calib.log)"
    done
    echo "quality.sh: prepared $out" >&2
}

run() {
    [ -d "$out" ] || fail "$out: no such folder (run 'scripts/quality.sh prepare $out' first)"
    local quality model="${QUALITY_MODEL:-$out/model.gguf}"
    quality=$(find_bin oscar-quality)
    if [ ! -f "$model" ]; then
        ls "$out"/model.part-* > /dev/null 2>&1 || fail "$out: neither model.gguf nor model.part-* (prepare first)"
        cat "$out"/model.part-* > "$model.tmp"
        mv "$model.tmp" "$model"
        (cd "$out" && sha256sum -c --quiet model.sha256) || { rm -f "$model"; fail "model.gguf: sha256 mismatch"; }
    fi
    local r
    for r in layer.fitted head.fitted layer.fixed layer.scores head.centered head.refit head.nearest head.uncentered; do
        [ -f "$out/rot/$r.rot.gguf" ] || fail "$out/rot/$r.rot.gguf missing (prepare first)"
    done
    local report="$out/quality.md" args=()
    if [ -n "$tasks" ]; then
        report="$out/quality.${tasks//,/-}.md"
        args+=(--tasks "$tasks")
    fi
    # relative paths inside the report: run from OUTDIR
    (cd "$out" && "$quality" -m "$(basename "$model")" -f eval.txt \
        --mode fp16=fp16 --mode int2=int2 --mode hadamard=int2-hadamard \
        --mode oscar-layer=oscar:rot/layer.fitted.rot.gguf --mode oscar-head=oscar:rot/head.fitted.rot.gguf \
        --mode oscar-head-centered=oscar:rot/head.centered.rot.gguf \
        --mode oscar-head-refit=oscar:rot/head.refit.rot.gguf \
        --mode oscar-head-nearest=oscar:rot/head.nearest.rot.gguf \
        --mode oscar-head-uncentered=oscar:rot/head.uncentered.rot.gguf \
        --mode oscar-layer-fixedclip=oscar:rot/layer.fixed.rot.gguf \
        --mode oscar-layer-scores=oscar:rot/layer.scores.rot.gguf \
        --ctx "${QUALITY_CTX:-512,2048,8192}" --max-chunks "${QUALITY_MAX_CHUNKS:-16}" \
        --parallel "${QUALITY_PARALLEL:-16}" --passkey-lengths "${QUALITY_PASSKEY_LENGTHS:-1024,4096}" \
        --passkey-trials "${QUALITY_PASSKEY_TRIALS:-5}" --agree-prompts "${QUALITY_AGREE_PROMPTS:-20}" \
        --agree-tokens "${QUALITY_AGREE_TOKENS:-128}" --agree-sink "${QUALITY_AGREE_SINK:-64,4}" \
        --agree-recent "${QUALITY_AGREE_RECENT:-256,8}" "${args[@]}") > "$report.tmp" \
        || { rm -f "$report.tmp"; fail "oscar-quality failed"; }
    mv "$report.tmp" "$report"
    echo "$report"
}

case "$cmd" in
    prepare) prepare ;;
    run) run ;;
    *) fail "unknown command '$cmd' (prepare or run)" ;;
esac
