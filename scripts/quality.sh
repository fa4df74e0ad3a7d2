#!/usr/bin/env bash
# KV-cache quality report for SmolLM2-135M-Instruct (docs/quality.md), in two halves:
#
#   scripts/quality.sh prepare OUTDIR        CPU machine: model, texts, OSCAR rotation files
#   scripts/quality.sh run OUTDIR [TASKS]    GPU machine: oscar-quality -> OUTDIR/quality.md
#
# prepare writes into OUTDIR:
#   model.part-00, model.part-01, model.sha256   the GGUF (scripts/fetch-smollm2.sh) in two pieces of
#                                               at most 48 MiB, so that each fits one device carry
#   eval/*.txt                                  the five evaluation texts of scripts/make_calib_text.sh
#                                               (one per genre, gnu-standards among them; 1.6 MB)
#   rot/layer.fitted.rot.gguf  rot/head.fitted.rot.gguf  rot/layer.fixed.rot.gguf  rot/layer.scores.rot.gguf
#   rot/head.centered.rot.gguf  rot/head.refit.rot.gguf  rot/head.nearest.rot.gguf  rot/head.uncentered.rot.gguf
#   rot/head.handbook.rot.gguf
#                                               oscar-calib on calib.txt (five genres mixed), 20K tokens;
#                                               the keys centered per block of 128 positions (the
#                                               default) but head.centered (keys, and values) and
#                                               head.uncentered (neither), all with
#                                               the key codes' error feedback (the default) but
#                                               head.nearest, none with the least-squares refit (the
#                                               default) but head.refit (3 rounds), all with the key
#                                               rotation spread over the context (the default);
#                                               head.handbook: head.fitted's options on the first 20K
#                                               tokens of debian-handbook alone (the calibration text
#                                               before the five-genre mix)
#                                               (and each run's log, rot/NAME.calib.log)
# To carry OUTDIR to the GPU machine (64 MiB per call): first model.part-00 with eval/ and rot/layer.*,
# then model.part-01, model.sha256 and rot/head.* with the binaries.
# (The texts stay in OUTDIR/text/: run needs eval/ only.)
# run joins the pieces into OUTDIR/model.gguf when it is missing (checking the sha256), then runs
# oscar-quality with every mode on every evaluation text and writes OUTDIR/quality.md: a perplexity
# table per text and their mean. With TASKS (a subset of ppl,passkey,agree) it runs only those and
# writes OUTDIR/quality.TASKS.md, so a run that would not fit one command's time can be split (by
# QUALITY_CTX too: every table's columns are contexts, the mean's included).
#
# Binaries: oscar-calib / oscar-quality from $OSCAR_BIN_DIR, else PATH, else build/ and build/apps/
# (OSCAR_BUILD=DIR names another build folder). Settings (environment, defaults in brackets):
#   QUALITY_CTX [512,2048,8192]  QUALITY_MAX_CHUNKS [16]  QUALITY_PARALLEL [16]
#   QUALITY_PASSKEY_LENGTHS [1024,4096]  QUALITY_PASSKEY_TRIALS [5]
#   QUALITY_AGREE_PROMPTS [20]  QUALITY_AGREE_TOKENS [128]  QUALITY_AGREE_SINK [64,4]  QUALITY_AGREE_RECENT [256,8]
#   QUALITY_MODES [all]  the report's modes, a comma list of fp16, int2, hadamard and the oscar-* names
#                        of the table in docs/quality.md; fp16 is always the baseline, first
#   QUALITY_TEXTS [all]  evaluation texts, a comma list of names in eval/ (without .txt)
#   QUALITY_REPORT       the report's file name in OUTDIR (default quality.md, or quality.TASKS.md)
#   QUALITY_MODEL        another GGUF to measure instead of OUTDIR's model (e.g. the path
#                        scripts/fetch-qwen2.5-coder.sh prints); its rotation files go in OUTDIR/rot
#   CALIB_TOKENS [20000]  CALIB_THREADS [nproc]
#   QUALITY_ROTATIONS [all]  the rotation files prepare makes, a comma list of the names below
#                        (layer.fitted, head.fitted, ...); run needs those of QUALITY_MODES only
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${OSCAR_BUILD:-$root/build}"
fail() { echo "quality.sh: $*" >&2; exit 1; }
[ $# -ge 2 ] || fail "usage: scripts/quality.sh prepare|run OUTDIR [TASKS]"
cmd=$1
out=$2
tasks=${3:-}

# find_bin NAME: the absolute path of a project binary
find_bin() {
    local c
    for c in ${OSCAR_BIN_DIR:+"$OSCAR_BIN_DIR/$1"} "$(command -v "$1" 2>/dev/null || true)" "$build/$1" "$build/apps/$1"; do
        # absolute: run calls it from inside OUTDIR
        [ -n "$c" ] && [ -x "$c" ] && { echo "$(cd "$(dirname "$c")" && pwd)/$(basename "$c")"; return 0; }
    done
    fail "$1 not found (build it, or set OSCAR_BIN_DIR or OSCAR_BUILD)"
}

prepare() {
    mkdir -p "$out/text" "$out/rot"
    local calib model
    calib=$(find_bin oscar-calib)
    model=$("$here/fetch-smollm2.sh") || fail "cannot fetch SmolLM2"
    "$here/make_calib_text.sh" "$out/text" || fail "cannot extract the texts"
    rm -rf "$out/eval"
    cp -r "$out/text/eval" "$out/eval"
    rm -f "$out"/model.part-*
    split -b 48M -d -a 2 "$model" "$out/model.part-"
    (cd "$(dirname "$model")" && sha256sum "$(basename "$model")") | awk '{print $1"  model.gguf"}' > "$out/model.sha256"
    local tokens=${CALIB_TOKENS:-20000} threads=${CALIB_THREADS:-$(nproc)}
    # name grouping clip values center key-rounding refit-rounds key-spread text (in OUTDIR/text)
    local variants=("layer.fitted layer fitted proxy keys feedback 0 yes calib.txt" "head.fitted head fitted proxy keys feedback 0 yes calib.txt"
                    "layer.fixed layer fixed proxy keys feedback 0 yes calib.txt" "layer.scores layer fitted scores keys feedback 0 yes calib.txt"
                    "head.centered head fitted proxy yes feedback 0 yes calib.txt" "head.refit head fitted proxy keys feedback 3 yes calib.txt"
                    "head.nearest head fitted proxy keys nearest 0 yes calib.txt" "head.uncentered head fitted proxy no feedback 0 yes calib.txt"
                    "head.handbook head fitted proxy keys feedback 0 yes calib/debian-handbook.txt")
    local v name g c vals ctr kr rf ks txt src names=, r
    for v in "${variants[@]}"; do names+="${v%% *},"; done
    for r in ${QUALITY_ROTATIONS//,/ }; do
        [[ $names == *",$r,"* ]] || fail "QUALITY_ROTATIONS: unknown rotation file '$r' (${names:1:-1})"
    done
    # a file is kept when it was made by the same calibrator from the same model and text
    local stamp
    for v in "${variants[@]}"; do
        read -r name g c vals ctr kr rf ks txt <<< "$v"
        stamp="$(sha256sum "$calib" "$out/model.sha256" "$out/text/$txt" | awk '{print $1}' | tr '\n' ' ') $tokens"
        src="scripts/make_calib_text.sh $txt"
        [ "$txt" = calib.txt ] && src+=": debian-handbook, fortunes, jargon-file, git-howto, python-stdlib-a-m mixed"
        [[ ",${QUALITY_ROTATIONS:-$name}," == *",$name,"* ]] || continue
        if [ -s "$out/rot/$name.rot.gguf" ] && [ "$(cat "$out/rot/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
            echo "quality.sh: $name.rot.gguf exists for this model and text, kept" >&2
            continue
        fi
        echo "quality.sh: oscar-calib $name" >&2
        "$calib" -m "$model" --text "$out/text/$txt" --text-source "$src" --tokens "$tokens" --seq-len 512 \
            --grouping "$g" --clip "$c" --values "$vals" --center "$ctr" --key-rounding "$kr" --refit "$rf" --key-spread "$ks" --threads "$threads" \
            -o "$out/rot/$name.rot.gguf" \
            > "$out/rot/$name.calib.log" || fail "oscar-calib $name failed (see $out/rot/$name.calib.log)"
        echo "$stamp" > "$out/rot/$name.stamp"
    done
    echo "quality.sh: prepared $out" >&2
}

run() {
    [ -d "$out" ] || fail "$out: no such folder (run 'scripts/quality.sh prepare $out' first)"
    local quality model="${QUALITY_MODEL:-$out/model.gguf}"
    [ -n "${QUALITY_MODEL:-}" ] && { [ -f "$QUALITY_MODEL" ] || fail "QUALITY_MODEL: $QUALITY_MODEL: no such file"; }
    quality=$(find_bin oscar-quality)
    if [ ! -f "$model" ]; then
        ls "$out"/model.part-* > /dev/null 2>&1 || fail "$out: neither model.gguf nor model.part-* (prepare first)"
        cat "$out"/model.part-* > "$model.tmp"
        mv "$model.tmp" "$model"
        (cd "$out" && sha256sum -c --quiet model.sha256) || { rm -f "$model"; fail "model.gguf: sha256 mismatch"; }
    fi
    # report name, KV mode, rotation file (the table of docs/quality.md)
    local all=("fp16 fp16 -" "int2 int2 -" "hadamard int2-hadamard -"
               "oscar-layer oscar layer.fitted" "oscar-head oscar head.fitted" "oscar-head-centered oscar head.centered"
               "oscar-head-refit oscar head.refit" "oscar-head-nearest oscar head.nearest"
               "oscar-head-uncentered oscar head.uncentered" "oscar-layer-fixedclip oscar layer.fixed"
               "oscar-layer-scores oscar layer.scores" "oscar-head-handbook oscar head.handbook")
    local want=",fp16,${QUALITY_MODES:-all}," modes=() e name kv rot known=",all,"
    for e in "${all[@]}"; do
        read -r name kv rot <<< "$e"
        known+="$name,"
        [[ $want == *",all,"* || $want == *",$name,"* ]] || continue
        if [ "$rot" = - ]; then
            modes+=(--mode "$name=$kv")
        else
            [ -f "$out/rot/$rot.rot.gguf" ] || fail "$out/rot/$rot.rot.gguf missing (prepare first)"
            modes+=(--mode "$name=$kv:rot/$rot.rot.gguf")
        fi
    done
    local m
    for m in ${QUALITY_MODES//,/ }; do
        [[ $known == *",$m,"* ]] || fail "QUALITY_MODES: unknown mode '$m' (fp16, int2, hadamard, oscar-layer, oscar-head, ...)"
    done
    local texts=() t
    if [ -n "${QUALITY_TEXTS:-}" ]; then
        for t in ${QUALITY_TEXTS//,/ }; do
            [ -f "$out/eval/$t.txt" ] || fail "QUALITY_TEXTS: $out/eval/$t.txt missing"
            texts+=(-f "eval/$t.txt")
        done
    else
        for t in $(cd "$out" && LC_ALL=C ls eval/*.txt 2>/dev/null); do texts+=(-f "$t"); done
    fi
    [ ${#texts[@]} -gt 0 ] || fail "$out/eval/ holds no evaluation text (prepare first)"
    local report="$out/quality.md" args=()
    if [ -n "$tasks" ]; then
        report="$out/quality.${tasks//,/-}.md"
        args+=(--tasks "$tasks")
    fi
    if [ -n "${QUALITY_REPORT:-}" ]; then
        case $QUALITY_REPORT in */*) fail "QUALITY_REPORT: a file name inside $out, got '$QUALITY_REPORT'" ;; esac
        report="$out/$QUALITY_REPORT"
    fi
    # relative paths inside the report: run from OUTDIR
    local model_arg="model.gguf" # relative, as the reports name it, unless another model is given
    [ -n "${QUALITY_MODEL:-}" ] && model_arg="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"
    (cd "$out" && "$quality" -m "$model_arg" "${texts[@]}" "${modes[@]}" \
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
