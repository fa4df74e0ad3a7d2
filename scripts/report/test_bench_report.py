#!/usr/bin/env python3
"""Tests of the benchmark report: the committed report regenerates byte for byte from the
committed runs, the page arithmetic agrees with docs/kv-cache.md and with measured runs, and
the generator takes runs with unknown fields, missing modes and no sidecar.

    python3 scripts/report/test_bench_report.py

Exits 77 (skipped) where matplotlib is missing (Debian 12: python3-matplotlib).
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RESULTS = os.path.join(ROOT, "bench", "results")
REPORT = os.path.join(ROOT, "docs", "report")
GENERATOR = os.path.join(HERE, "bench_report.py")

sys.path.insert(0, HERE)
import bench_runs  # noqa: E402
import kv_layout  # noqa: E402


def generate(inputs, out):
    """Runs the generator as a user would; returns (exit code, stdout + stderr)."""
    p = subprocess.run([sys.executable, GENERATOR] + inputs + ["-o", out], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class Layout(unittest.TestCase):
    LLAMA3_8B = kv_layout.KvShape(n_kv_head=8, head_dim=128, group=128, n_layer=32)

    def test_budget_as_docs_say(self):
        # docs/kv-cache.md, "Accounting": 8 GiB holds 65,536 tokens of Llama-3-8B in fp16, 459,520 in INT2
        self.assertEqual(kv_layout.max_context(self.LLAMA3_8B, False, 8 << 30), 65536)
        self.assertEqual(kv_layout.max_context(self.LLAMA3_8B, True, 8 << 30), 459520)

    def test_region_bits(self):
        # docs/kv-cache.md, "Pages": 2 + 32/G bits
        self.assertEqual([kv_layout.int2_region_bits(g) for g in (128, 64, 32)], [2.25, 2.5, 3.0])

    def test_bytes_per_token(self):
        # docs/performance.md, "Memory": 131,072 bytes a token in fp16, 18,432 in the INT2 region (all layers)
        s = self.LLAMA3_8B
        self.assertEqual(s.f16_page_bytes() * s.n_layer // s.page, 131072)
        self.assertEqual(s.int2_page_bytes() * s.n_layer // s.page, 18432)

    def test_bits_as_runs_measured(self):
        """Every measured bits_per_element of a run written by oscar-bench (4 decimals), at
        page-aligned contexts, against the layout."""
        checked = 0
        for run in bench_runs.load_runs([RESULTS], warn=lambda m: None):
            shape = run.kv_shape()
            if run.peer or run.get("source") or shape is None:
                continue
            _, nkv, d, g = shape
            ks = kv_layout.KvShape(nkv, d, g)
            for p in run.points:
                bits, ctx = p.get("bits_per_element"), p.get("context")
                if bits is None or not ctx or ctx % ks.page:
                    continue
                mode = bench_runs.point_mode(p)
                want = kv_layout.bits_per_element(ks, mode != "fp16", ctx)
                self.assertAlmostEqual(bits, want, delta=6e-5, msg=f"{run.stem} {mode} {ctx}")
                checked += 1
        self.assertGreater(checked, 0)


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import matplotlib
        cls.mpl_version = matplotlib.__version__

    def test_regenerates_committed_report(self):
        with open(os.path.join(REPORT, "README.md"), encoding="utf-8") as f:
            made_with = re.search(r"matplotlib (\S+?)\.\s*$", f.read().strip())
        if not made_with or made_with.group(1) != self.mpl_version:
            self.skipTest(f"docs/report was drawn by matplotlib {made_with and made_with.group(1)}, "
                          f"this is {self.mpl_version}: the SVG files may differ")
        with tempfile.TemporaryDirectory() as out:
            rc, log = generate(sorted(glob.glob(os.path.join(RESULTS, "*.json"))), out)
            self.assertEqual(rc, 0, log)
            self.assertEqual(sorted(os.listdir(out)), sorted(os.listdir(REPORT)))
            for name in sorted(os.listdir(out)):
                with open(os.path.join(out, name), "rb") as a, open(os.path.join(REPORT, name), "rb") as b:
                    self.assertTrue(a.read() == b.read(), f"docs/report/{name} differs from what "
                                    "`python3 scripts/report/bench_report.py bench/results/*.json -o docs/report` makes")

    def test_unknown_fields_missing_modes_no_sidecar(self):
        attention = {"device": "Some GPU", "read_bw_gbps": 1000.0, "heads": 32, "kv_heads": 8, "head_dim": 128,
                     "group": 128, "future_field": {"x": 1},
                     "points": [
                         {"mode": "int2", "batch": 1, "context": 4096, "us": 30.0, "bytes": 3513856,
                          "variant": "coopmat", "placement": "device-local", "new_number": 7},
                         {"mode": "int2", "batch": 1, "context": 4096, "us": 35.0, "bytes": 3513856,
                          "variant": "scalar"},
                         {"mode": "int2", "batch": 8, "context": 4096, "us": 90.0},
                         {"something": "not a point this reader knows"}]}
        decode = {"device": "Some GPU", "points": [
            {"kind": "prefill", "kv": "int2", "tokens": 512, "tok_s": 100.0, "placement": "host-visible"},
            {"kind": "decode", "kv": "int2", "batch": 1, "context": 4096, "tok_s": 50.0, "placement": "host-visible"}]}
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, run in (("a-attention.json", attention), ("a-decode.json", decode)):
                paths.append(os.path.join(tmp, name))
                with open(paths[-1], "w") as f:
                    json.dump(run, f)
            with open(os.path.join(tmp, "not-a-run.json"), "w") as f:
                f.write("[1, 2]")
            out = os.path.join(tmp, "out")
            rc, log = generate([tmp], out)
            self.assertEqual(rc, 0, log)
            self.assertIn("not a run", log)
            with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
                page = f.read()
            self.assertIn("not recorded", page)                       # no driver, date, command
            self.assertIn("int2, placement device-local, variant coopmat", page)
            self.assertIn("int2, variant scalar", page)
            self.assertIn("`a-decode`: Every point: placement host-visible.", page)  # the same on every point
            self.assertEqual(sorted(n for n in os.listdir(out) if n.endswith(".svg")),
                             ["attention.svg", "decode.svg", "memory.svg", "prefill.svg"])
            with open(os.path.join(out, "attention.svg"), encoding="utf-8") as f:
                svg = f.read()
            self.assertIn("variant coopmat", svg)
            self.assertNotIn("<dc:date>", svg)

    def test_comparisons_per_run_variant_and_shape(self):
        def decode(layers, tok_s):
            return {"device": "Some GPU", "n_layer": layers, "points": [
                {"kind": "decode", "kv": kv, "batch": 1, "context": 4096, "tok_s": v} for kv, v in tok_s.items()]}
        runs = {
            "ours-big.json": decode(32, {"int2": 100.0, "fp16": 80.0}),
            "ours-big-older.json": decode(32, {"int2": 90.0, "fp16": 70.0}),
            "ours-small.json": decode(28, {"int2": 300.0}),
            "peer-big.json": dict(decode(32, {"f16": 50.0}), peer="other-engine"),
            "peer-small.json": dict(decode(28, {"f16": 200.0}), peer="other-engine"),
            "att.json": {"device": "Some GPU", "points": [
                {"mode": m, "variant": v, "batch": 1, "context": 4096, "us": us}
                for m, v, us in (("int2", "a", 10.0), ("int2", "b", 20.0), ("fp16", "a", 40.0))]},
        }
        with tempfile.TemporaryDirectory() as tmp:
            for name, run in runs.items():
                with open(os.path.join(tmp, name), "w") as f:
                    json.dump(run, f)
            out = os.path.join(tmp, "out")
            rc, log = generate([tmp], out)
            self.assertEqual(rc, 0, log)
            with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
                page = f.read()
            # each run against its own fp16 and the peer of its shape only
            self.assertIn("(`ours-big`), batch 1, 4,096 tokens: int2 100 tok/s; fp16 80 tok/s (int2 is 1.25× as fast); "
                          "other-engine (f16) 50 tok/s (int2 is 2× as fast).", page)
            self.assertIn("(`ours-big-older`), batch 1, 4,096 tokens: int2 90 tok/s; fp16 70 tok/s", page)
            self.assertIn("(`ours-small`), batch 1, 4,096 tokens: int2 300 tok/s; other-engine (f16) 200 tok/s "
                          "(int2 is 1.5× as fast).", page)
            # each int2 variant in turn
            self.assertIn("int2, variant a 10 µs; fp16, variant a 40 µs (int2 takes 0.25× its time).", page)
            self.assertIn("int2, variant b 20 µs; fp16, variant a 40 µs (int2 takes 0.5× its time).", page)

    def test_sidecar_fills_what_the_run_lacks(self):
        run = {"device": "Some GPU", "driver": "from the run",
               "points": [{"kind": "decode", "kv": "fp16", "batch": 1, "context": 1024, "tok_s": 9.0}]}
        meta = {"driver": "from the sidecar", "date": "2026-01-02", "command": "oscar-bench decode --gen tiny"}
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "x.json"), "w") as f:
                json.dump(run, f)
            with open(os.path.join(tmp, "x.meta.json"), "w") as f:
                json.dump(meta, f)
            out = os.path.join(tmp, "out")
            rc, log = generate([os.path.join(tmp, "x.json"), os.path.join(tmp, "x.meta.json")], out)
            self.assertEqual(rc, 0, log)
            self.assertIn("driver: the run records 'from the run'; kept", log)
            with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
                page = f.read()
            self.assertIn("| from the run | 2026-01-02 | `oscar-bench decode --gen tiny` |", page)
            self.assertIn("1 run on 1 device,", page)
            self.assertFalse(os.path.exists(os.path.join(out, "attention.svg")))


if __name__ == "__main__":
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("test_bench_report: skipped: matplotlib is missing (Debian 12: apt-get install python3-matplotlib)")
        sys.exit(77)
    unittest.main()
