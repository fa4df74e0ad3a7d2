"""Reading benchmark runs: oscar-bench's JSON (attention and decode), peer runs of the same
shape, and the optional sidecar that adds what a run did not record. bench/README.md is the
schema; this module is its reader. Unknown fields are kept and ignored; missing optional
fields read as None.
"""

import json
import os

NOT_RECORDED = "not recorded"

# Point fields that never split a series: what a point is, or how it was filled or described.
# Any other string field of a point (a kernel variant, a memory placement) that takes more than
# one value among a run's points of one kind and mode names a series of its own, so that runs
# which record such fields chart them apart without a change here; one that is the same on all
# of them is a note of the run.
_UNSPLIT = {"kind", "mode", "kv", "fill", "note", "source"}

SIDECAR_SUFFIX = ".meta.json"


class Run:
    """One JSON file: its top-level fields (sidecar merged in) and its points."""

    def __init__(self, path, display_path, fields, points):
        self.path = path                  # as opened
        self.display = display_path       # repository-relative where possible
        self.fields = fields              # top-level fields, sidecar merged in
        self.points = points              # list of dicts, in file order
        self.split_keys, self.constant_extras = _extra_fields(points)

    def get(self, key, default=None):
        value = self.fields.get(key)
        return default if value is None else value

    @property
    def stem(self):
        return os.path.basename(self.path)[: -len(".json")]

    @property
    def device(self):
        return self.get("device", NOT_RECORDED)

    @property
    def peer(self):
        return self.get("peer")

    @property
    def read_bw_gbps(self):
        return _number(self.fields.get("read_bw_gbps"))

    def meta(self, key):
        """driver, date, command, source: the value or "not recorded"."""
        value = self.fields.get(key)
        if value is None or value == "":
            return NOT_RECORDED
        return str(value)

    def notes(self):
        value = self.fields.get("notes")
        if value is None:
            return []
        return [value] if isinstance(value, str) else [str(v) for v in value]

    def kv_shape(self):
        """(n_layer or None, n_kv_head, head_dim, group) where the run records them (attention
        runs: kv_heads, head_dim, group; decode runs: n_layer, n_kv_head, head_dim, group),
        else None."""
        f = self.fields
        nkv = f.get("n_kv_head", f.get("kv_heads"))
        d = f.get("head_dim")
        if not isinstance(nkv, int) or not isinstance(d, int):
            return None
        g = f.get("group")
        if not isinstance(g, int):
            g = min(d, 128)  # oscar_kv_params' default group: min(head_dim, 128)
        n_layer = f.get("n_layer")
        return (n_layer if isinstance(n_layer, int) else None, nkv, d, g)


def point_kind(point):
    """attention, prefill or decode (None for a point this reader does not know)."""
    kind = point.get("kind")
    if kind in ("prefill", "decode", "attention"):
        return kind
    if kind is None and _number(point.get("us")) is not None:
        return "attention"
    return None


def point_mode(point):
    """The KV mode (oscar-bench: fp16, int2, int2-hadamard, oscar; a peer: its own format)."""
    mode = point.get("mode", point.get("kv"))
    return str(mode) if mode is not None else None


def _extras(point):
    return {k: v for k, v in point.items() if k not in _UNSPLIT and isinstance(v, str)}


def _extra_fields(points):
    """(the extra string fields that differ among points of one kind and mode, sorted; {field:
    value} of those that every point of the run carries with one value)."""
    points = [p for p in points if point_kind(p)]
    keys = sorted({k for p in points for k in _extras(p)})
    values = {k: {} for k in keys}  # field -> (kind, mode) -> values, None where a point lacks it
    for p in points:
        extras = _extras(p)
        for k in keys:
            values[k].setdefault((point_kind(p), point_mode(p)), set()).add(extras.get(k))
    split = sorted(k for k, by_group in values.items() if any(len(v) > 1 for v in by_group.values()))
    constant = {}
    for k in sorted(values):
        seen = set().union(*values[k].values())
        if k not in split and len(seen) == 1 and None not in seen:
            constant[k] = seen.pop()
    return split, constant


def point_extras(run, point):
    """The point's fields that split its run's series, sorted by name (see _UNSPLIT)."""
    return tuple((k, point[k]) for k in run.split_keys if isinstance(point.get(k), str))


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def number(point, key):
    """A numeric field of a point, or None when absent or not a number."""
    return _number(point.get(key))


def repo_root():
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def display_path(path):
    """The path relative to the repository when inside it, else as given."""
    full = os.path.abspath(path)
    root = repo_root()
    if os.path.commonpath([full, root]) == root:
        return os.path.relpath(full, root)
    return path


def expand_inputs(args):
    """Files and folders (every *.json in a folder) to run files, sidecars left out, sorted by
    repository-relative path so that the order of the arguments does not matter."""
    files = []
    for arg in args:
        if os.path.isdir(arg):
            files += [os.path.join(arg, n) for n in os.listdir(arg) if n.endswith(".json")]
        else:
            files.append(arg)
    files = [f for f in files if not f.endswith(SIDECAR_SUFFIX)]
    unique = {}
    for f in files:
        unique.setdefault(os.path.abspath(f), f)
    return sorted(unique.values(), key=display_path)


def load_run(path, warn):
    """Reads one run and its sidecar (NAME.meta.json beside NAME.json): the sidecar fills the
    fields the run lacks; where both have a field the run's own value stays and `warn` is
    called. Returns None (after `warn`) for a file that is not a run."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        warn(f"{path}: skipped: {e}")
        return None
    if not isinstance(data, dict) or not isinstance(data.get("points"), list):
        warn(f"{path}: skipped: not a run (no \"points\" list)")
        return None
    fields = {k: v for k, v in data.items() if k != "points"}
    sidecar = path[: -len(".json")] + SIDECAR_SUFFIX if path.endswith(".json") else None
    if sidecar and os.path.exists(sidecar):
        try:
            with open(sidecar, encoding="utf-8") as f:
                extra = json.load(f)
        except (OSError, ValueError) as e:
            warn(f"{sidecar}: ignored: {e}")
            extra = {}
        for k, v in (extra.items() if isinstance(extra, dict) else []):
            if k == "points":
                continue
            if k in fields and fields[k] != v:
                warn(f"{sidecar}: {k}: the run records {fields[k]!r}; kept")
                continue
            fields[k] = v
    points = [p for p in data["points"] if isinstance(p, dict)]
    return Run(path, display_path(path), fields, points)


def load_runs(args, warn):
    runs = []
    for path in expand_inputs(args):
        run = load_run(path, warn)
        if run is not None:
            runs.append(run)
    return runs
