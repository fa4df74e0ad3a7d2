"""The KV cache's page arithmetic, in Python, for the report's memory figures.

Mirrors the C runtime: the page sizes of shaders/common/kv_layout.h (KV_INT2_PAGE_WORDS,
KV_F16_PAGE_WORDS), the page counts of runtime/kv/kv_pages.c (kv_book_pages_for) and the
budget search of oscar_kv_max_context (runtime/kv/kv_create.c). Defaults are those of
oscar_kv_params_default: pages of 64 tokens, 64 sink and 256 recent tokens in fp16, flushes of
8 tokens, at most 512 new tokens a step. docs/kv-cache.md ("Pages", "Accounting") describes
the layout; scripts/report/test_bench_report.py checks these functions against the figures
that docs and measured runs give.
"""

from dataclasses import dataclass


def _div_up(a, b):
    return (a + b - 1) // b


@dataclass(frozen=True)
class KvShape:
    """A model's KV cache shape. n_layer may be None when only per-layer figures are wanted."""

    n_kv_head: int
    head_dim: int
    group: int
    n_layer: int = None
    page: int = 64       # tokens a page
    sink: int = 64       # first tokens kept in fp16
    recent: int = 256    # most recent tokens kept in fp16
    flush: int = 8       # tokens quantized together
    step: int = 512      # most new tokens in one step (oscar_kv_params.max_step_tokens)

    def int2_page_bytes(self):
        """Bytes of one INT2 page in one layer: codes and (scale, min) words of K and V."""
        d = self.head_dim
        return 4 * 2 * self.n_kv_head * self.page * (d // 16 + d // self.group)

    def f16_page_bytes(self):
        """Bytes of one fp16 page in one layer: K then V, two halves a word."""
        return 4 * self.n_kv_head * self.page * self.head_dim

    def elements_per_token(self):
        """Stored elements of one token in one layer (keys and values)."""
        return 2 * self.n_kv_head * self.head_dim


def int2_region_bits(group):
    """Bits per element in the INT2 region by the format: 2-bit codes and an fp16 scale and
    min per group of `group` elements."""
    return 2 + 32 / group


def bits_per_element(shape, int2, tokens):
    """Bits per element of one sequence of `tokens` tokens with whole pages counted: the INT2
    pages of the tokens between the sink and the recent window, fp16 pages for the sink and
    the window. This is what oscar_kv_get_stats reports when the window is page-aligned (the
    runs of bench/results measure it to the fourth decimal); between flushes the window can
    straddle one more page."""
    P = shape.page
    if not int2:
        return 16.0 * _div_up(tokens, P) * P / tokens
    quantized = max(0, tokens - shape.sink - shape.recent)
    f16_pages = _div_up(shape.sink, P) + _div_up(shape.recent, P)
    f16_pages = min(f16_pages, _div_up(tokens, P))
    bits = (_div_up(quantized, P) * shape.int2_page_bytes() + f16_pages * shape.f16_page_bytes()) * 8
    return bits / (tokens * shape.elements_per_token())


def _pages_for(shape, int2, tokens):
    """(INT2 pages, fp16 pages) a sequence of `tokens` tokens may need: kv_book_pages_for."""
    P = shape.page
    every = _div_up(tokens, P)
    if not int2:
        return 0, every
    quantized = max(0, tokens - shape.sink - shape.recent)
    window = _div_up(shape.sink, P) + _div_up(shape.recent + shape.flush - 1 + shape.step, P) + 1
    return _div_up(quantized, P), min(window, every)


def max_context(shape, int2, budget_bytes):
    """The longest single sequence whose pages fit `budget_bytes` over all layers:
    oscar_kv_max_context's search, with its window reserve of fp16 pages."""
    if shape.n_layer is None:
        raise ValueError("max_context needs the number of layers")
    i2b = shape.int2_page_bytes() * shape.n_layer
    f16b = shape.f16_page_bytes() * shape.n_layer
    lo, hi = 0, (2**32 - 1) // 2
    while lo < hi:
        mid = lo + (hi - lo + 1) // 2
        i2, f = _pages_for(shape, int2, mid)
        if i2 * i2b + f * f16b <= budget_bytes:
            lo = mid
        else:
            hi = mid - 1
    return lo

