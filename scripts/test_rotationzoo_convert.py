#!/usr/bin/env python3
"""Tests scripts/rotationzoo_convert.py without a real RotationZoo file.

  python3 scripts/test_rotationzoo_convert.py        (needs numpy and gguf; torch optional)

- the conversion core on numpy arrays: non-symmetric random rotations, per layer and per head,
  both orientations (transposed input comes out as its transpose, row input unchanged), every
  refusal (shape, grouping mix, missing layer, non-orthogonal, non-finite, eigenvalue shape);
- the written GGUF read back with gguf-py: each R at float offset i*d + j, GGUF ne [d, d(, n_kv)],
  every oscar.* key;
- with torch installed: a synthetic .pt through main() end to end (skipped, and said so, otherwise).
Prints 'N passed, N failed'; exit 1 on a failure.
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rotationzoo_convert as rc  # noqa: E402

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what, file=sys.stderr)


def raises(fn, what):
    try:
        fn()
    except rc.ConvertError:
        check(True, what)
        return
    check(False, what + " (no error)")


def rand_rot(rng, d):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    q = q * np.sign(np.diag(r))
    return q.astype(np.float32)


def write_fake_model(path, n_layer, n_head, n_kv, d):
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    w.add_uint32("llama.block_count", n_layer)
    w.add_uint32("llama.attention.head_count", n_head)
    w.add_uint32("llama.attention.head_count_kv", n_kv)
    w.add_uint32("llama.embedding_length", n_head * d)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    rng = np.random.default_rng(3)
    NL, NH, NKV, D = 3, 4, 2, 8
    Rk = {l: rand_rot(rng, D) for l in range(NL)}
    Rv = {l: rand_rot(rng, D) for l in range(NL)}
    check(max(np.max(np.abs(R - R.T)) for R in Rk.values()) > 0.1, "test rotations are non-symmetric")
    eig = np.sort(rng.random(D).astype(np.float32))[::-1].copy()

    # orientation
    ks = {l: (Rk[l].T.copy(), eig) for l in range(NL)}  # the reference export: transposes
    vs = {l: (Rv[l].T.copy(), None) for l in range(NL)}
    g, t = rc.convert(ks, vs, NL, NKV, D, "transposed")
    td = dict(t)
    check(g == "layer", "per-layer grouping detected")
    check(all(np.array_equal(td["blk.%d.attn_k_rot.weight" % l], Rk[l]) for l in range(NL)), "transposed -> R (K)")
    check(all(np.array_equal(td["blk.%d.attn_v_rot.weight" % l], Rv[l]) for l in range(NL)), "transposed -> R (V)")
    check("blk.0.attn_k_eig" in td and "blk.0.attn_v_eig" not in td, "eigenvalues only where given")
    g, t = rc.convert({l: (Rk[l], None) for l in range(NL)}, {l: (Rv[l], None) for l in range(NL)}, NL, NKV, D, "row")
    check(np.array_equal(dict(t)["blk.1.attn_k_rot.weight"], Rk[1]), "row -> unchanged")

    # per head
    Hk = {l: np.stack([rand_rot(rng, D) for _ in range(NKV)]) for l in range(NL)}
    g, t = rc.convert({l: (np.swapaxes(Hk[l], 1, 2), np.tile(eig, (NKV, 1))) for l in range(NL)},
                      {l: (Hk[l], None) for l in range(NL)}, NL, NKV, D, "transposed")
    td = dict(t)
    check(g == "head" and td["blk.2.attn_k_rot.weight"].shape == (NKV, D, D), "per-head shape")
    check(np.array_equal(td["blk.2.attn_k_rot.weight"], Hk[2]), "per-head transposed -> R")

    # refusals
    good_v = {l: (Rv[l], None) for l in range(NL)}
    raises(lambda: rc.convert({l: (Rk[l][:4], None) for l in range(NL)}, good_v, NL, NKV, D, "row"), "bad shape")
    raises(lambda: rc.convert({0: (Rk[0], None), 1: (Rk[1], None)}, good_v, NL, NKV, D, "row"), "missing layer")
    raises(lambda: rc.convert({l: (Rk[l % NL], None) for l in range(NL + 1)}, good_v, NL, NKV, D, "row"), "extra layer")
    mixed = {0: (Hk[0], None), 1: (Rk[1], None), 2: (Rk[2], None)}
    raises(lambda: rc.convert(mixed, good_v, NL, NKV, D, "row"), "grouping mix")
    bad = {l: (Rk[l] * (1.01 if l == 1 else 1.0), None) for l in range(NL)}
    raises(lambda: rc.convert(bad, good_v, NL, NKV, D, "row"), "non-orthogonal")
    nan = {l: (Rk[l].copy(), None) for l in range(NL)}
    nan[2][0][0, 0] = np.nan
    raises(lambda: rc.convert(nan, good_v, NL, NKV, D, "row"), "non-finite")
    raises(lambda: rc.convert({l: (Rk[l], eig[:3]) for l in range(NL)}, good_v, NL, NKV, D, "row"), "eig shape")
    raises(lambda: rc.convert(ks, good_v, NL, NKV, D, "sideways"), "bad orientation")

    # the written file
    import gguf
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model.gguf")
        write_fake_model(model, NL, NH, NKV, D)
        check(rc.model_info(model) == ("llama", NL, NH, NKV, D), "model_info")
        out = os.path.join(tmp, "out.rot.gguf")
        g, t = rc.convert(ks, vs, NL, NKV, D, "transposed")
        meta = dict(objective_k="query_covariance", objective_v="proxy_score_weighted", group_size=D,
                    clip_k=[0.96] * NL, clip_v=[0.92] * NL, sink=64, recent=256, arch="llama", n_layer=NL,
                    n_head=NH, n_kv_head=NKV, head_dim=D, fingerprint="0123456789abcdef", tokens=0, seq_len=0,
                    text_source="test")
        rc.write_gguf(out, g, t, meta)
        check(not os.path.exists(out + ".tmp"), "no temp file left")
        r = gguf.GGUFReader(out)
        tens = {x.name: x for x in r.tensors}
        tk = tens.get("blk.1.attn_k_rot.weight")
        check(tk is not None and list(tk.shape) == [D, D], "GGUF ne [d, d]")
        if tk is not None:
            flat = np.asarray(tk.data, dtype=np.float32).reshape(-1)
            check(np.array_equal(flat, Rk[1].reshape(-1)), "R[i][j] at float offset i*d + j")

        def s(key):
            f = r.fields[key]
            return bytes(f.parts[f.data[0]]).decode()

        def u(key):
            f = r.fields[key]
            return f.parts[f.data[0]][0]
        check(u("oscar.format_version") == 1 and s("oscar.grouping") == "layer", "format version, grouping")
        check(s("oscar.model.fingerprint") == "0123456789abcdef", "fingerprint")
        check(u("oscar.model.head_count_kv") == NKV and u("oscar.model.head_dim") == D, "model shape keys")
        f = r.fields["oscar.clip_k"]
        check([float(f.parts[i][0]) for i in f.data] == [np.float32(0.96)] * NL, "clip_k array")
        for key in ("oscar.objective_k", "oscar.objective_v", "oscar.group_size", "oscar.clip_v",
                    "oscar.clip_fitted", "oscar.sink_tokens", "oscar.recent_tokens", "oscar.model.architecture",
                    "oscar.model.block_count", "oscar.model.head_count", "oscar.calib.tokens",
                    "oscar.calib.sequence_length", "oscar.calib.text_source"):
            check(key in r.fields, key)

        # end to end through a .pt
        try:
            import torch
        except ImportError:
            torch = None
            print("torch not installed: the .pt reading path (load_pt, main) is not tested")
        if torch is not None:
            pt = os.path.join(tmp, "both.pt")
            torch.save({"format_version": 1, "objective": "oscar",
                        "layers": {l: {"k": {"rotation": torch.from_numpy(Rk[l].T.copy()),
                                             "eigenvalues": torch.from_numpy(eig)},
                                       "v": {"rotation": torch.from_numpy(Rv[l].T.copy())}} for l in range(NL)}}, pt)
            rc_out = os.path.join(tmp, "pt.rot.gguf")
            check(rc.main(["--pt", pt, "-m", model, "--fingerprint", "0123456789ABCDEF", "-o", rc_out]) == 0, "main")
            r2 = gguf.GGUFReader(rc_out)
            t2 = {x.name: x for x in r2.tensors}
            check(np.array_equal(np.asarray(t2["blk.0.attn_v_rot.weight"].data).reshape(D, D), Rv[0]), ".pt -> R")
        check(rc.main(["--pt", os.path.join(tmp, "missing.pt"), "-m", model, "--fingerprint", "0" * 16,
                       "-o", os.path.join(tmp, "x.gguf")]) == 1, "missing .pt is an error")
        check(not os.path.exists(os.path.join(tmp, "x.gguf")), "no output on error")
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
