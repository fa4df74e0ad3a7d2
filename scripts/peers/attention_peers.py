#!/usr/bin/env python3
"""Decode attention of peers on the shapes `oscar-bench attention` measures: one new query row
per sequence against a KV cache of each context length, GQA (query heads share KV heads).

Peer measured: torch's F.scaled_dot_product_attention in bf16 on CUDA (the backend torch picks;
enable_gqa=True, so K/V are read once per KV head as a grouped kernel would). Runs on the GPU
machine (torch with CUDA there). Timing: CUDA events around `--iters` calls launched back to
back (as oscar-bench's chained figure), after a warm-up of at least 50 ms; the median of
`--repeats` such passes, in microseconds per call. Bandwidth = bytes of K and V read / time,
beside a device-to-device copy measured in the same process (bytes read + written / time).

    python3 scripts/peers/attention_peers.py --contexts 4096,32768,131072 --batch 1,32 --json out.json
"""
import argparse
import json
import statistics
import sys


def parse_list(s):
    out = []
    for tok in s.split(","):
        tok = tok.strip().lower()
        mul = 1024 if tok.endswith("k") else 1
        out.append(int(tok.rstrip("k")) * mul)
    return out


def time_calls(torch, fn, iters, repeats):
    """Median microseconds per call of `fn` over `repeats` passes of `iters` back-to-back calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    spent = 0.0
    while spent < 50.0:  # warm-up: at least 50 ms of GPU time
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        spent += start.elapsed_time(end)
    times = []
    for _ in range(repeats):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / iters)
    return statistics.median(times)


def copy_bandwidth(torch, mib=2048):
    """GB/s of a device-to-device copy (bytes read + written)."""
    n = mib << 20
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    us = time_calls(torch, lambda: b.copy_(a), 5, 5)
    del a, b
    return 2.0 * n / (us * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--contexts", default="4096,32768,131072")
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="also write the results as JSON")
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        sys.exit("attention_peers: no CUDA device")
    dev = torch.cuda.get_device_name(0)
    bw = copy_bandwidth(torch)
    print(f"device: {dev}\ntorch {torch.__version__}; device-to-device copy: {bw:.1f} GB/s (read + written, measured now)")
    print(f"shapes: {a.heads} query heads, {a.kv_heads} KV heads, head_dim {a.head_dim}; median of {a.repeats} passes "
          f"of {a.iters} calls")
    points = []
    gen = torch.Generator(device="cuda").manual_seed(1)
    for batch in parse_list(a.batch):
        for ctx in parse_list(a.contexts):
            kv_bytes = 2 * batch * a.kv_heads * ctx * a.head_dim * 2
            if 2 * kv_bytes > torch.cuda.mem_get_info()[0]:
                print(f"torch-sdpa-bf16 batch {batch:2d}  context {ctx:6d}  skipped: {kv_bytes / 2**30:.1f} GiB of K/V do not fit")
                continue
            q = torch.randn(batch, a.heads, 1, a.head_dim, device="cuda", dtype=torch.bfloat16, generator=gen)
            k = torch.randn(batch, a.kv_heads, ctx, a.head_dim, device="cuda", dtype=torch.bfloat16, generator=gen)
            v = torch.randn(batch, a.kv_heads, ctx, a.head_dim, device="cuda", dtype=torch.bfloat16, generator=gen)
            fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # noqa: E731
            us = time_calls(torch, fn, a.iters, a.repeats)
            gbps = kv_bytes / (us * 1e3)
            print(f"torch-sdpa-bf16 batch {batch:2d}  context {ctx:6d}  {us:9.1f} us  {gbps:7.1f} GB/s")
            points.append({"peer": "torch-sdpa-bf16", "batch": batch, "context": ctx, "us": round(us, 2),
                           "gbps": round(gbps, 1), "bytes": kv_bytes})
            del q, k, v
            torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "copy_gbps": round(bw, 1), "heads": a.heads,
                       "kv_heads": a.kv_heads, "head_dim": a.head_dim, "points": points}, f, indent=1)


if __name__ == "__main__":
    main()
