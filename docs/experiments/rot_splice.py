#!/usr/bin/env python3
"""Copy of a RotationZoo GGUF with one side (keys or values) taken from another file of the same
model and shapes (session 13, docs/quality.md "Session 13"): every tensor named blk.N.attn_K_*
(K = k or v) that both files have, and oscar.clip_K, come from DONOR; with --zero NAME every
tensor whose name contains NAME is set to 0 (e.g. attn_k_mean: centering of the values only).
The bytes are patched in place (same shapes), so nothing else changes.

    python3 docs/experiments/rot_splice.py BASE.rot.gguf DONOR.rot.gguf OUT.rot.gguf k|v [--zero NAME]

Session 13's files, from scripts/quality.sh prepare's settings per head (`--rotation
hadamard|identity`, `--center yes`): head V from Hadamard or identity files (rot_splice.py
head.rot.gguf head.hadamard.rot.gguf head.vhad.rot.gguf v), keys centered only
(head.centered.rot.gguf head.rot.gguf head.kcenter.rot.gguf v --zero attn_v_mean), values
centered only (head.centered.rot.gguf head.rot.gguf head.vcenter.rot.gguf k --zero attn_k_mean).
Needs the gguf package (pip install gguf).
"""
import argparse
import shutil

import gguf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("donor")
    ap.add_argument("out")
    ap.add_argument("side", choices=["k", "v"])
    ap.add_argument("--zero", default=None)
    a = ap.parse_args()
    shutil.copyfile(a.base, a.out)
    out, donor = gguf.GGUFReader(a.out, "r+"), gguf.GGUFReader(a.donor)
    dt = {t.name: t for t in donor.tensors}
    spliced = zeroed = 0
    for t in out.tensors:
        if a.zero and a.zero in t.name:
            t.data[...] = 0
            zeroed += 1
        elif f".attn_{a.side}_" in t.name and t.name in dt:
            if t.data.shape != dt[t.name].data.shape:
                raise SystemExit(f"{t.name}: shape {t.data.shape} in {a.base}, {dt[t.name].data.shape} in {a.donor}")
            t.data[...] = dt[t.name].data
            spliced += 1
    key = f"oscar.clip_{a.side}"
    fo, fd = out.fields[key], donor.fields[key]
    for i, j in zip(fo.data, fd.data):
        fo.parts[i][...] = fd.parts[j]
    out.data.flush()
    print(f"{a.out}: {spliced} tensors and {key} from {a.donor}, {zeroed} zeroed")


if __name__ == "__main__":
    main()
