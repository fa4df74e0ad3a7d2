#!/usr/bin/env python3
"""Puts benchmark runs side by side: a Markdown page with SVG charts.

    python3 scripts/report/bench_report.py bench/results/*.json -o docs/report

Reads any number of runs (oscar-bench attention --json, oscar-bench decode --json, and peer
runs of the same shape; bench/README.md is the schema), each with an optional sidecar
NAME.meta.json for what the run did not record (driver, date, command), and writes into the
output folder:

    README.md       the report: runs, figures, tables
    attention.svg   decode attention, µs a layer call against context, with each run's int2
                    bytes at its read bandwidth
    decode.svg      whole-model decode tokens/s against context
    prefill.svg     prefill tokens/s
    memory.svg      bits per element against context, and the longest context a budget holds

The same input gives byte-identical output. Needs Python 3 and matplotlib (Debian 12:
python3-matplotlib). Figures without data are left out, and the page says so.
"""

import argparse
import os
import sys
import textwrap

try:
    import matplotlib
except ImportError:
    sys.exit("bench_report: needs matplotlib (Debian 12: apt-get install python3-matplotlib)")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_runs  # noqa: E402
import kv_layout  # noqa: E402
from bench_runs import NOT_RECORDED, number, point_extras, point_kind, point_mode  # noqa: E402

# Memory budgets of the memory table, GiB.
BUDGETS_GIB = (1, 2, 4, 8, 16, 32, 64, 128)
# oscar-bench's own modes, in the order they are described; markers for the charts.
OUR_MODES = ("fp16", "int2", "int2-hadamard", "oscar")
MODE_MARKERS = {"fp16": "o", "int2": "s", "int2-hadamard": "^", "oscar": "D"}
PEER_MARKERS = ("X", "P", "*", "v", "h", "<", ">")


def setup_matplotlib():
    """Settings that make the SVG files depend on their data only."""
    plt.rcParams.update({
        "svg.hashsalt": "oscar-bench-report",  # fixed ids for clip paths and markers
        "svg.fonttype": "none",                # text stays text
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.axisbelow": True,
        "legend.fontsize": 8,
        "figure.dpi": 100,
    })


def save(fig, path):
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)


# ---- numbers and labels ------------------------------------------------------------------------

def fmt(v, sig=5):
    """A figure as the runs give it: up to `sig` significant digits, thousands separated from
    10,000 up, no exponent."""
    if v is None:
        return "—"
    if abs(v) >= 10000:
        return f"{v:,.0f}"
    s = f"{v:.{sig}g}"
    if "e" in s:
        s = f"{v:.{sig}f}".rstrip("0").rstrip(".")
    return s


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt_tokens(n):
    return f"{int(n):,}"


def fmt_context(n):
    """Axis ticks: 1K, 4K, 128K, 1M."""
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}K"
    return str(n)


def series_name(run, point):
    """The legend's name of a point's series, without the device: a peer by its name (with
    its KV format where the name does not carry it), our runs by KV mode; then the fields
    that split series (a kernel variant, say)."""
    mode = point_mode(point)
    if run.peer:
        name = run.peer if not mode or mode in run.peer else f"{run.peer} ({mode})"
    else:
        name = mode or "mode not recorded"
    for k, v in point_extras(run, point):
        name += f", {k} {v}"
    return name


class Palette:
    """A colour and a marker for each series name (KV mode or peer), the same in every panel
    and figure; a colour for each device where a figure colours by device. Stable for a given
    input."""

    MODE_COLORS = {"fp16": "#444444", "int2": "tab:red", "int2-hadamard": "tab:orange", "oscar": "tab:purple"}
    OTHER_COLORS = ("tab:blue", "tab:green", "tab:cyan", "tab:brown", "tab:pink", "tab:olive", "#1f3b73", "#7a5c00")

    def __init__(self, runs):
        devices = sorted({r.device for r in runs})
        cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        self.device_colors = {d: cycle[i % len(cycle)] for i, d in enumerate(devices)}
        names = set()
        for run in runs:
            for p in run.points:
                if point_kind(p):
                    names.add(series_name(run, p))
        others = sorted(n for n in names if n not in self.MODE_COLORS)
        self.colors = dict(self.MODE_COLORS)
        self.colors.update({n: self.OTHER_COLORS[i % len(self.OTHER_COLORS)] for i, n in enumerate(others)})
        peers = sorted({r.peer for r in runs if r.peer})
        self.peer_markers = {p: PEER_MARKERS[i % len(PEER_MARKERS)] for i, p in enumerate(peers)}

    def device_color(self, run):
        return self.device_colors[run.device]

    def color(self, run, point):
        return self.colors.get(series_name(run, point), "black")

    def marker(self, run, point):
        if run.peer:
            return self.peer_markers[run.peer]
        return MODE_MARKERS.get(point_mode(point), "o")

    @staticmethod
    def linestyle(run):
        return ":" if run.peer else "-"


def log_context_axis(ax, xs):
    """Log-2 context axis with ticks at the powers of two the data spans."""
    ax.set_xscale("log", base=2)
    lo, hi = min(xs), max(xs)
    ticks, t = [], 1
    while t <= hi * 1.01:
        if t >= lo / 1.01:
            ticks.append(t)
        t *= 2
    while len(ticks) > 7:
        ticks = ticks[::2] if (len(ticks) - 1) % 2 == 0 else ticks[1::2]
    ax.set_xticks(ticks)
    ax.set_xticklabels([fmt_context(t) for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo / 1.5, hi * 1.5)


def log_value_axis(ax):
    ax.set_yscale("log")
    ax.yaxis.set_minor_formatter(NullFormatter())


def padded_log_limits(ax, values):
    """y limits a little beyond the data on a log axis, at least one decade."""
    lo, hi = min(values), max(values)
    if hi / lo < 10:
        mid = (lo * hi) ** 0.5
        lo, hi = min(lo, mid / 10 ** 0.5), max(hi, mid * 10 ** 0.5)
    ax.set_ylim(lo / 1.5, hi * 1.5)
    if hi / lo < 100:  # fewer than three decades: label 2 and 5 too
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))


def provenance(fig, runs, y=0.0):
    """Names each run of a figure under it: file, device, driver, date, command."""
    lines = []
    for run in runs:
        head = f"{run.stem}: {run.device} · driver {run.meta('driver')} · {run.meta('date')} · "
        command = run.meta("command")
        if command == NOT_RECORDED:
            command = "command " + NOT_RECORDED
        text = head + command
        if run.get("source"):
            text += f" (from {run.meta('source')})"
        lines += textwrap.wrap(text, width=170, subsequent_indent="    ")
    fig.text(left_edge(fig), y, "\n".join(lines), ha="left", va="top", fontsize=6.5, color="0.25", linespacing=1.35)


def left_edge(fig):
    """The figure-fraction x of the leftmost thing drawn (tick labels reach past the axes)."""
    bbox = fig.get_tightbbox(fig.canvas.get_renderer())
    return bbox.x0 / fig.get_figwidth()


# ---- collecting series ---------------------------------------------------------------------------

def points_with(run, kind, key):
    """The run's points of one kind that record `key`, in input order."""
    return [p for p in run.points if point_kind(p) == kind and number(p, key) is not None]


def collect(runs, kind, xkey, ykey, by_model):
    """Panels of series of one kind: {(device, model or None, batch): [(run, name, first point,
    [(x, y), ...])]}, model only when by_model; panels and series in input order."""
    panels = {}
    for run in runs:
        model = str(run.get("model")) if by_model and run.get("model") else None
        groups = {}
        for p in run.points:
            if point_kind(p) != kind:
                continue
            x, y = number(p, xkey), number(p, ykey)
            if x is None or y is None or x <= 0 or y <= 0:
                continue
            batch = int(number(p, "batch") or 1)
            groups.setdefault((batch, series_name(run, p)), (p, []))[1].append((x, y))
        for (batch, name), (p, xy) in groups.items():
            panels.setdefault((run.device, model, batch), []).append((run, name, p, sorted(xy)))
    return panels


def read_limits(run):
    """{(batch, context): µs} for the run's int2 points: the cache's bytes at the read
    bandwidth (bytes / read_bw_gbps), or the run's read_limit_us where it gives no bytes."""
    out = {}
    if run.peer:
        return out
    for p in run.points:
        if point_kind(p) != "attention" or point_mode(p) != "int2":
            continue
        ctx = number(p, "context")
        bw = number(p, "read_bw_gbps") or run.read_bw_gbps
        nbytes = number(p, "bytes")
        if ctx is None:
            continue
        if nbytes is not None and bw:
            out[(int(number(p, "batch") or 1), ctx)] = nbytes / (bw * 1e3)
        elif number(p, "read_limit_us") is not None:
            out[(int(number(p, "batch") or 1), ctx)] = number(p, "read_limit_us")
    return out


def coarse_bw(run):
    """True when the run's read bandwidth carries fewer than three significant digits."""
    bw = run.read_bw_gbps
    return bw is not None and 0 < bw < 10


def used_runs(items):
    out = []
    for run in items:
        if run not in out:
            out.append(run)
    return out


# ---- figures ---------------------------------------------------------------------------------------

LIMIT_LABEL = "int2's bytes ÷ the run's read bandwidth"


def line_figure(panels, palette, xlabel, ylabel, suptitle, extra=None, log_y=True):
    """One panel per (device, model, batch), log-2 context against the value (log, or linear
    from 0), each panel with its own value range, series
    coloured by KV mode or peer alike in every panel, one legend for all. `extra(ax, key)`
    adds lines to a panel and returns their (x, y) values. Returns the figure and the runs it
    draws."""
    keys = list(panels)
    ncols = min(3, len(keys))
    nrows = (len(keys) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.3 * ncols, 3.5 * nrows), squeeze=False)
    handles = {}
    runs = []
    for i, key in enumerate(keys):
        ax = axes[i // ncols][i % ncols]
        device, model, batch = key
        xs, ys = [], []
        stems = {}
        for run, name, _, _ in panels[key]:
            stems.setdefault(name, [])
            if run.stem not in stems[name]:
                stems[name].append(run.stem)
        for run, name, p, xy in panels[key]:
            x, y = zip(*xy)
            xs += x
            ys += y
            label = name if not run.peer else f"{name} (peer)"
            style = palette.linestyle(run)
            if len(stems[name]) > 1:  # the same series from two runs of one device
                label += f" [{run.stem}]"
                style = ("-", "--", "-.", ":")[stems[name].index(run.stem) % 4]
            (h,) = ax.plot(x, y, color=palette.color(run, p), marker=palette.marker(run, p),
                           linestyle=style, markersize=5, linewidth=1.4, label=label)
            handles.setdefault(label, h)
            runs.append(run)
        if extra:
            for h, x, y in extra(ax, key):
                handles.setdefault(h.get_label(), h)
                xs += x
                ys += y
        log_context_axis(ax, xs)
        if log_y:
            log_value_axis(ax)
            padded_log_limits(ax, ys)
        else:
            ax.set_ylim(0, max(ys) * 1.15)
        bws = sorted({r.read_bw_gbps for r, _, _, _ in panels[key] if r.read_bw_gbps and not r.peer})
        title = device + (f"\n{model}, batch {batch}" if model else f"\nbatch {batch}")
        if bws:
            title += f", read bandwidth {' / '.join(fmt(b) for b in bws)} GB/s"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel)
        if i % ncols == 0:
            ax.set_ylabel(ylabel)
    for j in range(len(keys), nrows * ncols):
        axes[j // ncols][j % ncols].axis("off")
    fig.suptitle(suptitle, fontsize=11, y=1.0)
    fig.tight_layout()
    order = sorted(handles, key=lambda l: (l == LIMIT_LABEL, l.endswith("(peer)"),
                                           OUR_MODES.index(l) if l in OUR_MODES else len(OUR_MODES), l))
    fig.legend([handles[l] for l in order], order, loc="upper left", bbox_to_anchor=(1.0, 0.95), frameon=False)
    return fig, used_runs(runs)


def attention_figure(runs, palette, path):
    panels = collect(runs, "attention", "context", "us", by_model=False)
    if not panels:
        return None
    limits = {}
    for run in runs:
        for (batch, ctx), us in read_limits(run).items():
            limits.setdefault((run.device, None, batch), {}).setdefault(run.stem, []).append((ctx, us))

    def draw_limits(ax, key):
        out = []
        for stem, xy in sorted(limits.get(key, {}).items()):
            x, y = zip(*sorted(xy))
            (h,) = ax.plot(x, y, color=Palette.MODE_COLORS["int2"], linestyle="--", linewidth=1.0, alpha=0.7,
                           label=LIMIT_LABEL)
            out.append((h, x, y))
        return out

    fig, used = line_figure(panels, palette, "context (tokens)", "µs per layer call (log)",
                            "Decode attention: one layer call", draw_limits)
    provenance(fig, used, y=-0.01)
    save(fig, path)
    return used


def decode_figure(runs, palette, path):
    panels = collect(runs, "decode", "context", "tok_s", by_model=True)
    if not panels:
        return None
    fig, used = line_figure(panels, palette, "context (tokens)", "decode tokens/s", "Whole-model decode", log_y=False)
    provenance(fig, used, y=-0.01)
    save(fig, path)
    return used


def prefill_bars(runs):
    """(run, point, label, tok/s) for every prefill point, in input order."""
    bars = []
    for run in runs:
        for p in points_with(run, "prefill", "tok_s"):
            parts = [run.device]
            if run.get("model"):
                parts.append(str(run.get("model")))
            parts.append(series_name(run, p) + (" (peer)" if run.peer else ""))
            tokens = number(p, "tokens")
            what = p.get("note") or (f"{fmt_tokens(tokens)}-token prompt" if tokens else "prompt not recorded")
            bars.append((run, p, " · ".join(parts) + f" · {what}", number(p, "tok_s")))
    return bars


def prefill_figure(runs, palette, path):
    bars = prefill_bars(runs)
    if not bars:
        return None
    labels = unique_labels([(run, label) for run, _, label, _ in bars])
    # a gap between devices
    ys, y, last = [], 0.0, None
    for run, _, _, _ in bars:
        if last is not None and run.device != last:
            y += 0.6
        ys.append(y)
        y += 1
        last = run.device
    ys = [y - v for v in ys]
    values = [v for _, _, _, v in bars]
    fig, ax = plt.subplots(figsize=(7.0, 0.9 + 0.3 * y))
    ax.barh(ys, values, height=0.7, color=[palette.color(r, p) for r, p, _, _ in bars], edgecolor="none")
    for yy, v in zip(ys, values):
        ax.text(v * 1.06, yy, fmt(v), va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(min(values) / 2, max(values) * 4)
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.8)
    ax.set_xlabel("prefill tokens/s (log)")
    ax.set_title("Prefill", fontsize=11)
    ax.grid(axis="y", visible=False)
    used = used_runs(r for r, _, _, _ in bars)
    provenance(fig, used, y=-0.01)
    save(fig, path)
    return used


def unique_labels(entries):
    """entries: (run, label) in order; labels shared by two runs get the runs' file names."""
    seen = {}
    for run, label in entries:
        seen.setdefault(label, set()).add(run.path)
    return [label if len(seen[label]) == 1 else f"{label} [{run.stem}]" for run, label in entries]


def kv_shapes(runs):
    """{(n_layer, n_kv_head, head_dim, group): sorted model names} over the runs that record a
    shape (peers' too: the layout is ours, the shape is the model's)."""
    shapes = {}
    for run in runs:
        shape = run.kv_shape()
        if shape is None:
            continue
        names = shapes.setdefault(shape, set())
        if run.get("model"):
            names.add(str(run.get("model")))
    return {k: sorted(v) for k, v in sorted(shapes.items(), key=lambda kv: (-(kv[0][0] or 0), kv[0][1:]))}


def shape_name(shape, models):
    n_layer, nkv, d, g = shape
    what = f"{nkv} KV head{'s' if nkv > 1 else ''} × {d}, G {g}"
    if n_layer:
        what = f"{n_layer} layers, " + what
    return (", ".join(models) + ": " if models else "") + what


def measured_bits(runs):
    """(run, mode, context, bits) of every point of ours that records bits_per_element."""
    out = []
    for run in runs:
        if run.peer:
            continue
        for p in run.points:
            bits, ctx = number(p, "bits_per_element"), number(p, "context")
            if bits is not None and ctx:
                out.append((run, point_mode(p), ctx, bits))
    return out


# The search of oscar_kv_max_context stops here (UINT32_MAX / 2): longer answers mean "more".
MAX_CONTEXT_CAP = (2**32 - 1) // 2


def memory_figure(runs, palette, path):
    shapes = kv_shapes(runs)
    measured = measured_bits(runs)
    with_layers = {s: m for s, m in shapes.items() if s[0]}
    if not shapes and not measured:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.0, 4.6))
    # left: bits per element against context, by the layout per group size, and measured
    ctx_hi = max([131072] + [c for _, _, c, _ in measured])
    contexts = sorted({max(512, int(2 ** (k / 8)) // 64 * 64) for k in range(72, 8 * ctx_hi.bit_length() + 1)}
                      | {c for _, _, c, _ in measured if c >= 512})
    groups = sorted({s[3] for s in shapes} | {128}, reverse=True)
    left.plot(contexts, [16.0] * len(contexts), color="#444444", linewidth=1.2, label="fp16 (layout)")
    for i, g in enumerate(groups):
        shape = kv_layout.KvShape(1, max(g, 64), g)
        left.plot(contexts, [kv_layout.bits_per_element(shape, True, c) for c in contexts],
                  color=("tab:red", "tab:brown", "tab:pink")[i % 3], linestyle=("-", "--", "-.")[i % 3],
                  linewidth=1.2,
                  label=f"INT2 modes, G {g} (layout): {fmt(kv_layout.int2_region_bits(g))} bits + fp16 windows")
    entries = {}
    for run, mode, ctx, bits in measured:
        entries.setdefault((run.device, mode), (run, []))[1].append((ctx, bits))
    for (device, mode), (run, xy) in entries.items():
        x, y = zip(*sorted(xy))
        left.plot(x, y, linestyle="none", marker=MODE_MARKERS.get(mode, "o"), markersize=6, markerfacecolor="none",
                  markeredgewidth=1.2, color=palette.device_color(run), label=f"measured: {device} · {mode}")
    log_context_axis(left, contexts)
    left.set_ylim(0, 17.5)
    left.set_yticks([0, 2, 4, 6, 8, 10, 12, 14, 16])
    left.set_xlabel("context (tokens, one sequence)")
    left.set_ylabel("bits per element stored")
    left.set_title("KV bits per element (pages counted whole)", fontsize=10)
    left.legend(loc="center right", frameon=True, framealpha=0.95, fontsize=7)
    # right: the longest context a budget holds, per model shape that records its layers
    if with_layers:
        budgets = [2 ** (k / 4) for k in range(-8, 4 * 8 + 1)]
        for i, (shape, models) in enumerate(with_layers.items()):
            n_layer, nkv, d, g = shape
            ks = kv_layout.KvShape(nkv, d, g, n_layer)
            style = ("-", "--", "-.", ":")[i % 4]
            for int2, color in ((False, "#444444"), (True, "tab:red")):
                xy = [(b, kv_layout.max_context(ks, int2, int(b * (1 << 30)))) for b in budgets]
                xy = [(b, n) for b, n in xy if n < MAX_CONTEXT_CAP]
                if not xy:
                    continue
                x, y = zip(*xy)
                right.plot(x, y, color=color, linestyle=style, linewidth=1.3,
                           label=f"{'INT2 modes' if int2 else 'fp16'} · {shape_name(shape, models)}")
        right.set_xscale("log", base=2)
        bt = [0.25, 1, 4, 16, 64, 256]
        right.set_xticks(bt)
        right.set_xticklabels([fmt(b) for b in bt])
        right.xaxis.set_minor_formatter(NullFormatter())
        log_value_axis(right)
        right.set_xlabel("KV memory budget (GiB)")
        right.set_ylabel("longest context that fits (tokens, log)")
        right.set_title("Longest single sequence a budget holds (oscar_kv_max_context)", fontsize=10)
        right.legend(loc="upper left", frameon=True, framealpha=0.95, fontsize=7)
    else:
        right.axis("off")
        right.text(0.5, 0.5, "No run records its model's layer count\n(n_layer, n_kv_head, head_dim, group)",
                   ha="center", va="center")
    fig.tight_layout()
    used = used_runs(r for r, _, _, _ in measured)
    if used:
        fig.text(left_edge(fig), -0.01, "Measured points from:", ha="left", va="top", fontsize=6.5, color="0.25")
        provenance(fig, used, y=-0.045)
    save(fig, path)
    return used


# ---- the page ---------------------------------------------------------------------------------------

def md_escape(s):
    return str(s).replace("|", "\\|")


def runs_table(runs):
    rows = ["| file | device | driver | date | command |", "| --- | --- | --- | --- | --- |"]
    for run in runs:
        command = run.meta("command")
        command = f"`{command}`" if command != NOT_RECORDED else command
        rows.append(f"| `{run.display}` | {md_escape(run.device)} | {md_escape(run.meta('driver'))} | "
                    f"{md_escape(run.meta('date'))} | {md_escape(command)} |")
    return rows


def run_notes(runs):
    lines = []
    for run in runs:
        notes = run.notes()
        extra = []
        if run.peer:
            extra.append(f"Peer run ({run.peer}).")
        if run.get("source"):
            extra.append(f"Figures from `{run.meta('source')}`.")
        if run.constant_extras:
            extra.append("Every point: " + ", ".join(f"{k} {v}" for k, v in run.constant_extras.items()) + ".")
        if coarse_bw(run):
            extra.append(f"Read bandwidth recorded as {fmt(run.read_bw_gbps)} GB/s, fewer than three significant "
                         "digits: lines drawn from it are as coarse.")
        if notes or extra:
            lines.append(f"- `{run.stem}`: " + " ".join(extra + notes))
    return lines


def figure_runs(used):
    return ", ".join(f"`{r.stem}`" for r in used)


def section_start(title, used, missing, figure, alt, caption):
    """A section's heading, then its figure (an SVG beside the page, with its alt text) and the
    caption, which ends naming the runs drawn; where no run has points for it (used is None),
    the line `missing` instead."""
    out = [f"## {title}", ""]
    if used is None:
        return out + [missing, ""]
    return out + [f"![{alt}]({figure})", "", f"{caption} Runs: {figure_runs(used)}.", ""]


def attention_section(runs, used):
    out = section_start(
        "Decode attention", used, "No run has attention points (`oscar-bench attention --json`).", "attention.svg",
        "Decode attention: µs per layer call against context",
        "One attention call of one layer during a decode step, µs against context (log-log), a panel "
        "for each device and batch size, colours by KV mode, peers dotted. The dashed line is the int2 "
        "cache's bytes at the read bandwidth the run measured: the time a call would take if it only "
        "had to read its bytes.")
    if used is None:
        return out
    out += comparisons(used, "attention", "us", "µs", lower_is_better=True)
    out += ["| device | KV | batch | context | µs a call | µs, int2 bytes at read bandwidth | bits/element |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for run in used:
        limits = read_limits(run)
        for p in points_with(run, "attention", "us"):
            batch, ctx = int(number(p, "batch") or 1), number(p, "context")
            lim = limits.get((batch, ctx)) if point_mode(p) == "int2" else None
            out.append(f"| {md_escape(run.device)} | {md_escape(series_name(run, p))} | {batch} | "
                       f"{fmt_tokens(ctx) if ctx else '—'} | {fmt(number(p, 'us'))} | {fmt(lim, 3)} | "
                       f"{fmt(number(p, 'bits_per_element'))} |")
    out.append("")
    return out


def same_shape(a, b):
    """Whether two runs measured the same model shape, as far as both record it."""
    for k in ("n_layer", "n_kv_head", "kv_heads", "heads", "head_dim"):
        if a.get(k) is not None and b.get(k) is not None and a.get(k) != b.get(k):
            return False
    return True


def comparisons(used, kind, key, unit, lower_is_better):
    """For each run of ours and batch: every series of that run and of the device's peer runs at
    the longest context where the run has an int2 point, against int2 (each int2 series in turn
    where kernel variants split it)."""
    lines = []

    def is_int2(name):
        return name == "int2" or name.startswith("int2, ")

    def add(values, run):
        for p in run.points:
            if point_kind(p) != kind or number(p, key) is None or number(p, "context") is None:
                continue
            values[(int(number(p, "batch") or 1), number(p, "context"), series_name(run, p))] = number(p, key)

    for run in used:
        if run.peer:
            continue
        values = {}
        add(values, run)
        for peer in used:
            if peer.peer and peer.device == run.device and same_shape(peer, run):
                add(values, peer)
        for batch in sorted({b for b, _, _ in values}):
            for ref_name in sorted({name for b, _, name in values if b == batch and is_int2(name)}):
                ctx = max(c for b, c, name in values if b == batch and name == ref_name)
                ref = values[(batch, ctx, ref_name)]
                others = [(name, v) for (b, c, name), v in values.items() if b == batch and c == ctx and not is_int2(name)]
                if not others:
                    continue
                parts = []
                for name, v in others:
                    if lower_is_better:
                        parts.append(f"{name} {fmt(v)} {unit} (int2 takes {fmt(ref / v, 3)}× its time)")
                    else:
                        parts.append(f"{name} {fmt(v)} {unit} (int2 is {fmt(ref / v, 3)}× as fast)")
                lines.append(f"- {run.device} (`{run.stem}`), batch {batch}, {fmt_tokens(ctx)} tokens: {ref_name} "
                             f"{fmt(ref)} {unit}; " + "; ".join(parts) + ".")
    if lines:
        lines = ["At the longest context each device measured int2:", ""] + lines + [""]
    return lines


def decode_section(runs, used):
    out = section_start(
        "Whole-model decode", used, "No run has decode points (`oscar-bench decode --json`).", "decode.svg",
        "Whole-model decode: tokens/s against context",
        "Decode tokens/s of a whole model against the context every sequence holds (log-2 context), a "
        "panel for each device, model and batch size, colours by KV mode, peers dotted.")
    if used is None:
        return out
    out += comparisons(used, "decode", "tok_s", "tok/s", lower_is_better=False)
    out += ["| device | model | KV | batch | context | tok/s | ms a step | GPU ms a step | bits/element |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for run in used:
        for p in points_with(run, "decode", "tok_s"):
            ctx = number(p, "context")
            out.append(f"| {md_escape(run.device)} | {md_escape(run.get('model', NOT_RECORDED))} | "
                       f"{md_escape(series_name(run, p))} | {int(number(p, 'batch') or 1)} | "
                       f"{fmt_tokens(ctx) if ctx else '—'} | {fmt(number(p, 'tok_s'))} | "
                       f"{fmt(number(p, 'ms_per_step'))} | {fmt(number(p, 'gpu_ms_per_step'))} | "
                       f"{fmt(number(p, 'bits_per_element'))} |")
    out.append("")
    return out


def prefill_section(runs, used):
    out = section_start("Prefill", used, "No run has prefill points (`oscar-bench decode --json` writes them).",
                        "prefill.svg", "Prefill tokens/s",
                        "Prefill tokens/s (log), one bar a run and KV mode, coloured as in the other charts.")
    if used is None:
        return out
    out += ["| device | model | KV | prompt | tok/s | seconds |", "| --- | --- | --- | --- | ---: | ---: |"]
    for run in used:
        for p in points_with(run, "prefill", "tok_s"):
            tokens = number(p, "tokens")
            prompt = p.get("note") or (f"{fmt_tokens(tokens)} tokens" if tokens else NOT_RECORDED)
            out.append(f"| {md_escape(run.device)} | {md_escape(run.get('model', NOT_RECORDED))} | "
                       f"{md_escape(series_name(run, p))} | {md_escape(prompt)} | {fmt(number(p, 'tok_s'))} | "
                       f"{fmt(number(p, 'seconds'))} |")
    out.append("")
    return out


def memory_section(runs, used):
    out = ["## Memory", ""]
    shapes = kv_shapes(runs)
    if used is None:
        return out + ["No run records a KV shape or bits per element.", ""]
    out += ["![KV bits per element against context; longest context a budget holds](memory.svg)", "",
            "Left: bits per element one sequence's cache stores, pages counted whole, by the page layout "
            "(fp16; INT2 at 2 + 32/G bits with the first 64 and the last 256 tokens in fp16, pages of 64 "
            "tokens), and as the runs measured it (`bits_per_element`). Right: the longest single sequence "
            "whose pages fit a memory budget, fp16 against the INT2 modes (int2, int2-hadamard and oscar "
            "store the same pages), as `oscar_kv_max_context` computes it (it keeps fp16 pages for the "
            "windows and one 512-token step), for each model shape a run records. "
            "`scripts/report/kv_layout.py` does the arithmetic, from `docs/kv-cache.md`."
            + (f" Measured points from: {figure_runs(used)}." if used else ""), ""]
    with_layers = {s: m for s, m in shapes.items() if s[0]}
    if with_layers:
        out += ["Longest context (tokens) a KV budget holds, one sequence:", ""]
        out += ["| model shape | KV | bits/element at 128K (layout) | " + " | ".join(f"{b} GiB" for b in BUDGETS_GIB) + " |",
                "| --- | --- | ---: | " + " | ".join("---:" for _ in BUDGETS_GIB) + " |"]
        for shape, models in with_layers.items():
            n_layer, nkv, d, g = shape
            ks = kv_layout.KvShape(nkv, d, g, n_layer)
            fits = {}
            for int2 in (False, True):
                fits[int2] = [kv_layout.max_context(ks, int2, b << 30) for b in BUDGETS_GIB]
                cells = " | ".join(fmt_tokens(n) for n in fits[int2])
                bits = kv_layout.bits_per_element(ks, int2, 131072)
                out.append(f"| {md_escape(shape_name(shape, models))} | {'INT2 modes' if int2 else 'fp16'} | "
                           f"{bits:.2f} | {cells} |")
            out.append("| | INT2 ÷ fp16 | | " + " | ".join(
                f"{a / b:.1f}×" if b else "—" for a, b in zip(fits[True], fits[False])) + " |")
        out.append("")
    return out


def page(runs, used, inputs_text):
    out = ["# Benchmark report", "",
           f"{plural(len(runs), 'run')} on {plural(len({r.device for r in runs}), 'device')}, side by side. "
           "Each figure names, "
           "under it, the device, driver, date and command of every run it draws (\"not recorded\" where the "
           "run's JSON and its sidecar do not say). The files and their fields are described in "
           "`bench/README.md`.", "",
           "Regenerate this folder from the JSON with:", "",
           f"    python3 scripts/report/bench_report.py {inputs_text} -o DIR", "",
           "(DIR: this folder). The output depends on the input files only.", "",
           "## Runs", ""]
    out += runs_table(runs) + [""]
    notes = run_notes(runs)
    if notes:
        out += notes + [""]
    out += attention_section(runs, used["attention"])
    out += decode_section(runs, used["decode"])
    out += prefill_section(runs, used["prefill"])
    out += memory_section(runs, used["memory"])
    out += [f"Charts drawn with matplotlib {matplotlib.__version__}.", ""]
    return "\n".join(out)


def inputs_text(runs):
    """The inputs as a reader would type them: `folder/*.json` when they are every run file of
    one folder, else the files."""
    folders = {os.path.dirname(r.display) for r in runs}
    if len(folders) == 1:
        folder = folders.pop()
        full = os.path.join(bench_runs.repo_root(), folder) if not os.path.isabs(folder) else folder
        if os.path.isdir(full):
            every = bench_runs.expand_inputs([full])
            if len(every) == len(runs):
                return os.path.join(folder, "*.json") if folder else "*.json"
    return " ".join(r.display for r in runs)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Benchmark runs (oscar-bench --json, peer runs) side by side: "
                                             "README.md and SVG charts.")
    ap.add_argument("inputs", nargs="+", help="run files (NAME.json, with an optional NAME.meta.json sidecar) "
                                              "or folders of them")
    ap.add_argument("-o", "--out", required=True, help="output folder (created if missing)")
    a = ap.parse_args(argv)

    def warn(msg):
        print(f"bench_report: {msg}", file=sys.stderr)

    runs = bench_runs.load_runs(a.inputs, warn)
    if not runs:
        warn("no run to report")
        return 1
    os.makedirs(a.out, exist_ok=True)
    setup_matplotlib()
    palette = Palette(runs)
    used = {
        "attention": attention_figure(runs, palette, os.path.join(a.out, "attention.svg")),
        "decode": decode_figure(runs, palette, os.path.join(a.out, "decode.svg")),
        "prefill": prefill_figure(runs, palette, os.path.join(a.out, "prefill.svg")),
        "memory": memory_figure(runs, palette, os.path.join(a.out, "memory.svg")),
    }
    for name, u in used.items():
        stale = os.path.join(a.out, name + ".svg")
        if u is None and os.path.exists(stale):
            os.remove(stale)
    with open(os.path.join(a.out, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write(page(runs, used, inputs_text(runs)))
    print(f"bench_report: {len(runs)} runs -> {a.out}/README.md and "
          f"{sum(u is not None for u in used.values())} charts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
