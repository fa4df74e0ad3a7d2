#!/usr/bin/env python3
"""How anisotropic the attention output projection is per KV group (session 13, docs/quality.md
"Session 13"): for each layer and KV group g, M_g = sum over the group's query heads h of
W_hᵀ W_h (W_h: the head's columns of attn_output.weight, dequantized), and the ratio of the
geometric to the arithmetic mean of M_g's eigenvalues — what a value error feedback under M_g
could at best take off the squared output error (1: nothing).

    python3 docs/experiments/wo_metric.py MODEL.gguf      (needs numpy and gguf)
"""
import sys

import gguf
import numpy as np
from gguf import quants


def main():
    r = gguf.GGUFReader(sys.argv[1])
    field = lambda k: int(r.fields[k].parts[r.fields[k].data[0]][0])
    arch = bytes(r.fields["general.architecture"].parts[r.fields["general.architecture"].data[0]]).decode()
    n_layer, n_head, n_kv = field(f"{arch}.block_count"), field(f"{arch}.attention.head_count"), field(f"{arch}.attention.head_count_kv")
    tensors = {t.name: t for t in r.tensors}
    for l in range(n_layer):
        t = tensors[f"blk.{l}.attn_output.weight"]
        W = quants.dequantize(t.data, t.tensor_type).astype(np.float64)  # [n_embd][n_head * d]
        d = W.shape[1] // n_head
        ratios = []
        for g in range(n_kv):
            heads = range(g * n_head // n_kv, (g + 1) * n_head // n_kv)
            M = sum(W[:, h * d:(h + 1) * d].T @ W[:, h * d:(h + 1) * d] for h in heads)
            e = np.linalg.eigvalsh(M)
            ratios.append(np.exp(np.mean(np.log(e))) / np.mean(e))
        print(f"layer {l:2d}  GM/AM per KV group: " + " ".join(f"{x:.3f}" for x in ratios))


if __name__ == "__main__":
    main()
