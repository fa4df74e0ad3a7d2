#!/usr/bin/env bash
# Builds the chunked decode attention (attn_decode_chunked_f16) with parts of it cut out, for
# timing only: the cut kernels write wrong outputs. Each lands in DIR/<cut>/ as
# attn_decode_chunked_f16.spv, to be timed through OSCAR_SHADER_DIR:
#
#   scripts/attn-cuts.sh DIR
#   for c in whole no-merge no-math no-values no-scores less-score-math less-value-math no-rv empty; do
#       OSCAR_SHADER_DIR=DIR/$c oscar-bench attention --batch 1 --iters 20 --contexts 4096 --modes int2,int2-hadamard
#   done
#
# Cuts: whole (nothing cut), no-merge (each workgroup stops after its partials), no-math (no
# scores and no value sums), no-values (no value sums), no-scores (no INT2 key scores),
# less-score-math (the fp32 key scores take one element of each four: every load stays, a quarter
# of the multiply-adds and conversions), less-value-math (the packed-fp16 value sums take one
# pair of each four: every load stays), no-rv (no o·R_Vᵀ in the merge), empty (returns at once:
# the dispatch and its barrier). Compiled by glslangValidator without
# optimization (GLSLANG, default the shader venv's). docs/performance.md ("Where a 4K call goes",
# "Where a 128K call goes") has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/attn-cuts.sh DIR}
glslang=${GLSLANG:-.venv-shaders/bin/glslangValidator}
[ -x "$glslang" ] || { echo "attn-cuts: no glslangValidator at $glslang (run scripts/setup.sh or set GLSLANG)" >&2; exit 1; }
body=common/attn_chunked_body.glsl finish=common/attn_finish.glsl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cut NAME FILE SED-EXPRESSION: a copy of shaders/ with one edit, compiled into $out/NAME; the
# edit must change the file
cut() {
    local name=$1 file=$2 expr=$3 src=$tmp/$1
    cp -r shaders "$src"
    if [ -n "$file" ]; then
        sed -i "$expr" "$src/$file"
        cmp -s "shaders/$file" "$src/$file" && { echo "attn-cuts: $name: the edit no longer applies to $file" >&2; exit 1; }
    fi
    mkdir -p "$out/$name"
    "$glslang" -V --target-env vulkan1.2 -I"$src" -Iinclude -o "$out/$name/attn_decode_chunked_f16.spv" \
        "$src/attn_decode_chunked_f16.comp" > "$tmp/$name.log" || { cat "$tmp/$name.log" >&2; exit 1; }
}

cut whole "" ""
cut no-merge "$body" 's/^    count_and_merge(it.row, kvh);/    return;/'
cut no-math "$body" 's/if (is_int2) scores_int2(/if (false) if (is_int2) scores_int2(/; s/if (is_int2) values_int2(/if (false) if (is_int2) values_int2(/'
cut no-values "$body" 's/if (is_int2) values_int2(/if (false) if (is_int2) values_int2(/'
cut no-scores "$body" 's/if (is_int2) scores_int2(/if (false) if (is_int2) scores_int2(/'
cut less-score-math "$body" 's/dq\[u\]\[h\] += dot(qv, x\[u\]);/dq[u][h] += qv.x * x[u].x;/'
cut less-value-math "$body" 's/for (uint j = 0; j < 4; j++) a16\[h\]\[j\] = fma(ps, c2\[j\], a16\[h\]\[j\]);/for (uint j = 0; j < 1; j++) a16[h][j] = fma(ps, c2[j], a16[h][j]);/'
cut no-rv "$finish" 's/^    if (ROTATED) {$/    if (false) {/'
cut empty "$body" 's/^    uint item_id = attn_item_id();$/    uint item_id = attn_item_id();\n    return;/'
echo "attn-cuts: $(ls "$out" | tr '\n' ' ')in $out"
