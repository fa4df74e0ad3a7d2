#!/usr/bin/env python3
"""Copy of a RotationZoo GGUF with its clip ratios overwritten (session 9, docs/quality.md,
"Which clip matters"): every layer's oscar.clip_k and/or oscar.clip_v set to one value, nothing
else changed (the arrays keep their size, so the bytes are patched in place).

    python3 docs/experiments/rot_set_clip.py IN.rot.gguf OUT.rot.gguf [--clip-k R] [--clip-v R]
"""
import argparse
import struct

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value type -> bytes
STRING, ARRAY, FLOAT32 = 8, 9, 6


def float_arrays(data):
    """{key: (offset, count)} of the float32 array values of a GGUF's metadata."""
    n_kv = struct.unpack_from('<Q', data, 16)[0]
    off, found = 24, {}

    def string(off):
        n = struct.unpack_from('<Q', data, off)[0]
        return data[off + 8:off + 8 + n].decode(), off + 8 + n

    for _ in range(n_kv):
        key, off = string(off)
        vtype = struct.unpack_from('<I', data, off)[0]
        off += 4
        if vtype == STRING:
            _, off = string(off)
        elif vtype == ARRAY:
            atype, count = struct.unpack_from('<IQ', data, off)
            off += 12
            if atype == STRING:
                for _ in range(count):
                    _, off = string(off)
            else:
                if atype == FLOAT32:
                    found[key] = (off, count)
                off += count * SCALAR[atype]
        else:
            off += SCALAR[vtype]
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('src')
    ap.add_argument('dst')
    ap.add_argument('--clip-k', type=float)
    ap.add_argument('--clip-v', type=float)
    a = ap.parse_args()
    data = bytearray(open(a.src, 'rb').read())
    if data[:4] != b'GGUF':
        raise SystemExit(f'{a.src}: not a GGUF file')
    arrays = float_arrays(data)
    for key, value in (('oscar.clip_k', a.clip_k), ('oscar.clip_v', a.clip_v)):
        if value is None:
            continue
        if key not in arrays:
            raise SystemExit(f'{a.src}: no {key} (not a RotationZoo file?)')
        off, count = arrays[key]
        for i in range(count):
            struct.pack_into('<f', data, off + 4 * i, value)
    open(a.dst, 'wb').write(data)


if __name__ == '__main__':
    main()
