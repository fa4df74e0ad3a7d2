#!/usr/bin/env python3
"""Converts published RotationZoo PyTorch files (.pt) into OSCAR-VK's RotationZoo GGUF form
(docs/rotationzoo.md), the file oscar-calib writes and oscar_rotation_set_load reads.

usage:
  scripts/rotationzoo_convert.py --k KEYS.pt --v VALUES.pt -m MODEL.gguf \\
      --fingerprint $(oscar-calib -m MODEL.gguf --print-fingerprint) -o OUT.rot.gguf
  scripts/rotationzoo_convert.py --pt BOTH.pt ...            (one file holding K and V)

Input (.pt, a dict, read with torch.load on the CPU):
  {"format_version": N, "objective": "...", "layers": {l: {"rotation": [d, d] or
   [n_kv_head, d, d] float32, "eigenvalues": [d] or [n_kv_head, d]}}}
  "layers" may be a dict keyed by int or str, or a list. A file given with --k / --v holds
  one objective; a file given with --pt holds both, as per-layer sub-dicts "k"/"v" (or
  "key"/"value", "keys"/"values") or as "rotation_k"/"rotation_v" (+ "eigenvalues_k"/"_v").

Orientation (--orientation): OSCAR-VK applies y = x·R to a row vector x and stores R
row-major (element (i, j) at float offset i*d + j). The OSCAR reference's export stores the
TRANSPOSE of that matrix (its rows are the new basis vectors, y = R_stored · x), so the
default, --orientation transposed, transposes every matrix on the way in. Use
--orientation row for a file that already holds R in the x·R convention. A transposed rotation
is still orthogonal and cannot be detected from the file alone: check a converted file against
one calibrated by oscar-calib for the same model (docs/calibration.md).

Needs: numpy, gguf (pip install gguf), and torch only to read .pt files. The conversion core
(convert()) works on numpy arrays and is tested without torch by
scripts/test_rotationzoo_convert.py.
"""
import argparse
import os
import sys

import numpy as np

FORMAT_VERSION = 1
ORTHO_TOL = 1e-3  # the loader's tolerance (docs/rotationzoo.md)


class ConvertError(Exception):
    pass


# ---- reading ------------------------------------------------------------------------------

def _to_numpy(x):
    if x is None:
        return None
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().float().numpy()
    return np.asarray(x, dtype=np.float32)


def load_pt(path):
    try:
        import torch
    except ImportError as e:
        raise ConvertError("reading .pt files needs torch (pip install torch): %s" % e)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        obj = torch.load(path, map_location="cpu")
    except Exception as e:
        raise ConvertError("%s: cannot load: %s" % (path, e))
    if not isinstance(obj, dict) or "layers" not in obj:
        raise ConvertError("%s: not a RotationZoo dict (no 'layers')" % path)
    return obj


def _layers(obj, where):
    layers = obj["layers"]
    if isinstance(layers, (list, tuple)):
        return {i: v for i, v in enumerate(layers)}
    if isinstance(layers, dict):
        out = {}
        for k, v in layers.items():
            try:
                out[int(k)] = v
            except (TypeError, ValueError):
                raise ConvertError("%s: layer key %r is not a number" % (where, k))
        return out
    raise ConvertError("%s: 'layers' is neither a dict nor a list" % where)


def _pick(entry, names):
    for n in names:
        if isinstance(entry, dict) and n in entry:
            return entry[n]
    return None


def split_single(obj, where):
    """{layer: (rotation, eigenvalues)} from a one-objective file."""
    out = {}
    for l, e in _layers(obj, where).items():
        r = _pick(e, ["rotation", "R", "rot"])
        if r is None:
            raise ConvertError("%s: layer %d has no 'rotation'" % (where, l))
        out[l] = (_to_numpy(r), _to_numpy(_pick(e, ["eigenvalues", "eig", "lambda"])))
    return out


def split_both(obj, where):
    """({layer: (R, eig)} for K, same for V) from a file holding both objectives."""
    ks, vs = {}, {}
    for l, e in _layers(obj, where).items():
        for dst, names in ((ks, ("k", "key", "keys")), (vs, ("v", "value", "values"))):
            sub = _pick(e, list(names))
            if sub is not None:
                r, ev = _pick(sub, ["rotation", "R", "rot"]), _pick(sub, ["eigenvalues", "eig", "lambda"])
            else:
                r = _pick(e, ["rotation_" + names[0], names[0] + "_rotation"])
                ev = _pick(e, ["eigenvalues_" + names[0], names[0] + "_eigenvalues"])
            if r is None:
                raise ConvertError("%s: layer %d has no %s rotation" % (where, l, names[1]))
            dst[l] = (_to_numpy(r), _to_numpy(ev))
    return ks, vs


# ---- the conversion core ---------------------------------------------------------------------

def convert(k_layers, v_layers, n_layer, n_kv_head, head_dim, orientation):
    """Checks and orients the rotations. k_layers / v_layers: {layer: (R, eig or None)} with R
    [d, d] or [n_kv_head, d, d]. Returns (grouping, [(name, float32 array)]) where every R is in
    the x·R convention, row-major, shaped [d, d] or [n_kv_head, d, d] (GGUF ne [d, d(, n_kv)])."""
    if orientation not in ("row", "transposed"):
        raise ConvertError("orientation must be 'row' or 'transposed'")
    d = head_dim
    tensors, grouping = [], None
    for which, layers in (("k", k_layers), ("v", v_layers)):
        missing = [l for l in range(n_layer) if l not in layers]
        extra = [l for l in layers if not 0 <= l < n_layer]
        if missing or extra:
            raise ConvertError("%s rotations: layers %s missing, %s out of range (model has %d)"
                               % (which.upper(), missing[:5], extra[:5], n_layer))
        for l in range(n_layer):
            R, eig = layers[l]
            R = np.asarray(R, dtype=np.float32)
            if R.shape == (d, d):
                g = "layer"
            elif R.shape == (n_kv_head, d, d):
                g = "head"
            else:
                raise ConvertError("layer %d %s rotation: shape %s, want (%d, %d) or (%d, %d, %d)"
                                   % (l, which.upper(), R.shape, d, d, n_kv_head, d, d))
            if grouping is None:
                grouping = g
            elif g != grouping:
                raise ConvertError("layer %d %s rotation: grouping %s, earlier ones %s" % (l, which.upper(), g, grouping))
            if not np.all(np.isfinite(R)):
                raise ConvertError("layer %d %s rotation: not finite" % (l, which.upper()))
            if orientation == "transposed":
                R = np.swapaxes(R, -1, -2)
            R = np.ascontiguousarray(R, dtype=np.float32)
            Rs = R.reshape(-1, d, d).astype(np.float64)
            dev = max(float(np.max(np.abs(r.T @ r - np.eye(d)))) for r in Rs)
            if dev > ORTHO_TOL:
                raise ConvertError("layer %d %s rotation: not orthogonal (max |RtR - I| = %.3g)" % (l, which.upper(), dev))
            tensors.append(("blk.%d.attn_%s_rot.weight" % (l, which), R))
            if eig is not None:
                e = np.asarray(eig, dtype=np.float32)
                want = (d,) if g == "layer" else (n_kv_head, d)
                if e.shape != want:
                    raise ConvertError("layer %d %s eigenvalues: shape %s, want %s" % (l, which.upper(), e.shape, want))
                tensors.append(("blk.%d.attn_%s_eig" % (l, which), np.ascontiguousarray(e)))
    return grouping, tensors


def model_info(path):
    """(architecture, n_layer, n_head, n_kv_head, head_dim) from a GGUF model, via gguf-py."""
    import gguf
    r = gguf.GGUFReader(path)

    def val(key, default=None):
        f = r.fields.get(key)
        if f is None:
            if default is None:
                raise ConvertError("%s: key %s missing" % (path, key))
            return default
        if f.types and f.types[0] == gguf.GGUFValueType.STRING:
            return bytes(f.parts[f.data[0]]).decode("utf-8")
        return int(f.parts[f.data[0]][0])

    arch = val("general.architecture")
    n_layer = val(arch + ".block_count")
    n_head = val(arch + ".attention.head_count")
    n_kv = val(arch + ".attention.head_count_kv", n_head)
    head_dim = val(arch + ".attention.key_length", val(arch + ".embedding_length") // n_head)
    return arch, n_layer, n_head, n_kv, head_dim


def write_gguf(path, grouping, tensors, meta):
    """Writes the file through path.tmp, renamed on success."""
    import gguf
    tmp = path + ".tmp"
    try:
        w = gguf.GGUFWriter(tmp, "oscar-rotationzoo")
        w.add_uint32("oscar.format_version", FORMAT_VERSION)
        w.add_string("oscar.objective_k", meta["objective_k"])
        w.add_string("oscar.objective_v", meta["objective_v"])
        w.add_string("oscar.grouping", grouping)
        w.add_uint32("oscar.group_size", meta["group_size"])
        w.add_array("oscar.clip_k", [float(x) for x in meta["clip_k"]])
        w.add_array("oscar.clip_v", [float(x) for x in meta["clip_v"]])
        w.add_bool("oscar.clip_fitted", False)
        w.add_uint32("oscar.sink_tokens", meta["sink"])
        w.add_uint32("oscar.recent_tokens", meta["recent"])
        w.add_string("oscar.model.architecture", meta["arch"])
        w.add_uint32("oscar.model.block_count", meta["n_layer"])
        w.add_uint32("oscar.model.head_count_kv", meta["n_kv_head"])
        w.add_uint32("oscar.model.head_count", meta["n_head"])
        w.add_uint32("oscar.model.head_dim", meta["head_dim"])
        w.add_string("oscar.model.fingerprint", meta["fingerprint"])
        w.add_uint64("oscar.calib.tokens", meta["tokens"])
        w.add_uint32("oscar.calib.sequence_length", meta["seq_len"])
        w.add_string("oscar.calib.text_source", meta["text_source"])
        for name, arr in tensors:
            w.add_tensor(name, arr)  # numpy [.., d, d] row-major -> GGUF ne [d, d, ..]
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def main(argv=None):
    ap = argparse.ArgumentParser(description="RotationZoo .pt -> OSCAR-VK RotationZoo GGUF")
    ap.add_argument("--k", help=".pt with the key rotations")
    ap.add_argument("--v", help=".pt with the value rotations")
    ap.add_argument("--pt", help=".pt holding both key and value rotations")
    ap.add_argument("-m", "--model", required=True, help="the GGUF model the rotations were made for")
    ap.add_argument("--fingerprint", required=True,
                    help="16 hex digits: oscar-calib -m MODEL --print-fingerprint")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--orientation", choices=["transposed", "row"], default="transposed",
                    help="how the .pt stores R: transposed (default; the reference export, y = R x) "
                         "or row (already y = x R)")
    ap.add_argument("--objective-v", default="proxy_score_weighted",
                    choices=["proxy_score_weighted", "attention_output", "hadamard", "identity"])
    ap.add_argument("--group-size", type=int, default=0, help="default head_dim")
    ap.add_argument("--clip-k", type=float, default=0.96)
    ap.add_argument("--clip-v", type=float, default=0.92)
    ap.add_argument("--sink", type=int, default=64)
    ap.add_argument("--recent", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=0, help="calibration tokens, if known")
    ap.add_argument("--seq-len", type=int, default=0, help="calibration sequence length, if known")
    ap.add_argument("--text-source", default=None)
    a = ap.parse_args(argv)
    try:
        fp = a.fingerprint.lower()
        if len(fp) != 16 or any(c not in "0123456789abcdef" for c in fp):
            raise ConvertError("--fingerprint must be 16 hex digits")
        if not (0 < a.clip_k <= 1 and 0 < a.clip_v <= 1):
            raise ConvertError("clip ratios must be in (0, 1]")
        if a.pt:
            if a.k or a.v:
                raise ConvertError("give --pt, or --k and --v, not both")
            ks, vs = split_both(load_pt(a.pt), a.pt)
            src = a.pt
        else:
            if not (a.k and a.v):
                raise ConvertError("--k and --v (or --pt) are required")
            ks, vs = split_single(load_pt(a.k), a.k), split_single(load_pt(a.v), a.v)
            src = "%s + %s" % (os.path.basename(a.k), os.path.basename(a.v))
        arch, n_layer, n_head, n_kv, d = model_info(a.model)
        grouping, tensors = convert(ks, vs, n_layer, n_kv, d, a.orientation)
        g = a.group_size or d
        if g <= 0 or d % g:
            raise ConvertError("--group-size %d does not divide head_dim %d" % (g, d))
        meta = dict(objective_k="query_covariance", objective_v=a.objective_v, group_size=g,
                    clip_k=[a.clip_k] * n_layer, clip_v=[a.clip_v] * n_layer, sink=a.sink, recent=a.recent,
                    arch=arch, n_layer=n_layer, n_head=n_head, n_kv_head=n_kv, head_dim=d, fingerprint=fp,
                    tokens=a.tokens, seq_len=a.seq_len,
                    text_source=a.text_source or "RotationZoo " + src)
        write_gguf(a.output, grouping, tensors, meta)
    except ConvertError as e:
        print("rotationzoo_convert: %s" % e, file=sys.stderr)
        return 1
    print("rotationzoo_convert: wrote %s (%d layers, grouping %s, orientation %s)"
          % (a.output, n_layer, grouping, a.orientation), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
