#!/usr/bin/env python3
"""Prefill and batch-1 decode of llama.cpp's Vulkan build on a GGUF, written as a peer run of
`oscar-bench decode` (bench/README.md's schema), so the report puts both side by side.

The peer is llama.cpp b11669 with its Vulkan backend as PyPI's `cyllama-vulkan` 0.7.0 wheel
ships it (a CPython 3.12 extension over llama.cpp's C API). Unzip the wheel into a folder and
give it as --llama-root; the Vulkan loader comes from the environment (scripts/device-env.sh).

What is timed, per KV type (`-ctk` / `-ctv` of llama.cpp, K and V the same):
- prefill: a prompt of N random tokens into an empty context of N + 1 tokens, fed in chunks of
  --n-batch tokens (llama.cpp splits them into --n-ubatch micro-batches), wall time from the
  first decode call to the last synchronize, after a warm-up prompt of the same length (the
  first batch of a new size builds pipelines); tokens/s.
- decode: a context filled to each depth with random tokens (untimed, but its average speed is
  kept as the point's fill), then --steps single-token decodes each followed by a synchronize,
  after two warm-up steps; the best of --repeats passes (the generated tokens are removed
  before each pass, so each starts from the same depth), tokens/s. This is what
  `llama-bench -p 0 -n STEPS -d DEPTH -fa 1` measures.

    python3 scripts/peers/llamacpp_peers.py -m model.gguf --llama-root /tmp/cyllama \\
        --kv f16,q4_0 --prompts 512,2048,32768 --depths 4096,32768,131072 \\
        --device "NVIDIA H100 80GB HBM3" --driver "NVIDIA 580.159.04" --json-prefix bench/results/h100-peer
writes one JSON file per KV type: PREFIX-llamacpp-vulkan-KV.json.
"""
import argparse
import datetime
import json
import os
import random
import shlex
import sys
import time
import types

# ggml's type numbers for the KV types llama.cpp's flash attention reads
GGML_KV_TYPES = {"f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8}


def parse_list(s):
    out = []
    for tok in s.split(","):
        tok = tok.strip().lower()
        if tok:
            out.append(int(tok[:-1]) * 1024 if tok.endswith("k") else int(tok))
    return out


def load_llama(root):
    """The wheel's llama_cpp extension, without importing the rest of its package (which needs
    dependencies the GPU machine lacks)."""
    for name, sub in (("cyllama", "cyllama"), ("cyllama.llama", os.path.join("cyllama", "llama"))):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [os.path.join(root, sub)]
            sys.modules[name] = pkg
    import cyllama.llama.llama_cpp as llama  # noqa: E402

    return llama


class Peer:
    def __init__(self, llama, model_path, args):
        self.L, self.args = llama, args
        mp = llama.LlamaModelParams()
        mp.n_gpu_layers = 999
        self.model = llama.LlamaModel(model_path, mp)
        n_vocab = self.model.get_vocab().n_vocab
        self.n_vocab = n_vocab() if callable(n_vocab) else n_vocab
        self.rng = random.Random(args.seed)

    def context(self, kv, n_ctx):
        L, a = self.L, self.args
        cp = L.LlamaContextParams()
        cp.n_ctx = n_ctx
        cp.n_batch = a.n_batch
        cp.n_ubatch = a.n_ubatch
        cp.n_seq_max = 1
        cp.flash_attn_type = 1
        cp.type_k = cp.type_v = GGML_KV_TYPES[kv]
        cp.n_threads = cp.n_threads_batch = a.threads
        return L.LlamaContext(self.model, cp)

    def tokens(self, n):
        return [self.rng.randrange(self.n_vocab) for _ in range(n)]

    def feed(self, ctx, n, pos):
        """Decodes n random tokens from position pos in chunks of n_batch; seconds taken."""
        t0 = time.perf_counter()
        end = pos + n
        while pos < end:
            m = min(self.args.n_batch, end - pos)
            ctx.decode(self.L.llama_batch_get_one(self.tokens(m), pos))
            pos += m
        ctx.synchronize()
        return time.perf_counter() - t0

    def prefill(self, kv, n):
        ctx = self.context(kv, n + 1)
        self.feed(ctx, n, 0)  # warm-up: pipelines and buffers of these batch sizes
        ctx.memory_seq_rm(0, 0, -1)
        s = self.feed(ctx, n, 0)
        del ctx
        return s

    def decode(self, kv, depth):
        a = self.args
        ctx = self.context(kv, depth + a.steps + 3)
        fill = self.feed(ctx, depth, 0)

        def steps(n):
            t0 = time.perf_counter()
            for i in range(n):
                ctx.decode(self.L.llama_batch_get_one(self.tokens(1), depth + i))
                ctx.synchronize()
            return time.perf_counter() - t0

        steps(2)
        ctx.memory_seq_rm(0, depth, -1)
        best = None
        for _ in range(a.repeats):
            s = steps(a.steps)
            ctx.memory_seq_rm(0, depth, -1)
            best = s if best is None or s < best else best
        del ctx
        return fill, best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--llama-root", required=True, help="folder the cyllama-vulkan wheel was unzipped into")
    ap.add_argument("--kv", default="f16,q4_0")
    ap.add_argument("--prompts", default="512,2048,32768", help="prefill prompt lengths (tokens); empty for none")
    ap.add_argument("--depths", default="4096,32768,131072", help="decode depths (tokens); empty for none")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-batch", type=int, default=2048)
    ap.add_argument("--n-ubatch", type=int, default=512)
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 4, 16))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="", help="the GPU's name, as oscar-info prints it")
    ap.add_argument("--driver", default="", help="driver and Vulkan version, as oscar-info prints them")
    ap.add_argument("--model-name", default="", help="the model's name in the report (default: the file's)")
    ap.add_argument("--json-prefix", required=True, help="writes PREFIX-llamacpp-vulkan-KV.json per KV type")
    a = ap.parse_args()
    kvs = [k for k in a.kv.split(",") if k]
    for k in kvs:
        if k not in GGML_KV_TYPES:
            ap.error(f"--kv: unknown KV type '{k}' ({', '.join(GGML_KV_TYPES)})")
    if a.steps < 1 or a.repeats < 1:
        ap.error("--steps and --repeats must be at least 1")
    if not os.path.isfile(a.model):
        ap.error(f"cannot open model {a.model}")

    llama = load_llama(a.llama_root)
    llama.ggml_backend_load_all()
    peer = Peer(llama, a.model, a)
    m = peer.model
    shape = {"n_layer": m.n_layer, "n_embd": m.n_embd}
    for attr, key in (("n_head_kv", "n_kv_head"), ("n_head", "n_head")):
        v = getattr(m, attr, None)
        if v is not None and not callable(v):
            shape[key] = v
    command = " ".join(shlex.quote(x) for x in [os.path.basename(sys.argv[0])] + sys.argv[1:])
    for kv in kvs:
        run = {"bench": "decode", "peer": f"llamacpp-vulkan-{kv}", "device": a.device, "driver": a.driver,
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
               "command": command, "engine": "llama.cpp b11669 (cyllama-vulkan 0.7.0), flash attention",
               "model": a.model_name or os.path.basename(a.model), "steps": a.steps, "points": []}
        run.update(shape)
        path = f"{a.json_prefix}-llamacpp-vulkan-{kv}.json"

        def save():
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(run, f, indent=1)
                f.write("\n")
            os.replace(tmp, path)

        for n in parse_list(a.prompts):
            s = peer.prefill(kv, n)
            run["points"].append({"kind": "prefill", "kv": kv, "tokens": n, "tok_s": round(n / s, 1),
                                  "seconds": round(s, 4)})
            print(f"llama.cpp {kv}: prefill {n} tokens {n / s:.1f} tok/s ({s:.3f} s)", flush=True)
            save()
        for d in parse_list(a.depths):
            fill, s = peer.decode(kv, d)
            run["points"].append({"kind": "decode", "kv": kv, "batch": 1, "context": d,
                                  "tok_s": round(a.steps / s, 2), "ms_per_step": round(1000 * s / a.steps, 4),
                                  "fill_seconds": round(fill, 3), "fill": "prefill"})
            print(f"llama.cpp {kv}: decode at {d}: {a.steps / s:.2f} tok/s (filled at {d / fill:.0f} tok/s)",
                  flush=True)
            save()
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
