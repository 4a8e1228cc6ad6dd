"""The shared source-reading helpers of the edit operators (source_scan, source_tokens)."""

from __future__ import annotations

import pytest

from veriforge.optiml.source_scan import grid_follow_spans, param_parts, scan, split_top
from veriforge.optiml.source_tokens import (
    Refuse,
    apply_edits,
    close_of,
    fresh_name,
    line_indent,
    statement_after,
    tokens,
    top_level,
    trim_span,
)


def test_tokens_kinds_positions_and_refusal() -> None:
    text = "#pragma unroll\nx += 0x1fu * 1.5e3f; a->b"
    toks = tokens(text, 0, len(text))
    assert [(t.kind, t.text) for t in toks] == [
        ("pp", "#pragma unroll"), ("id", "x"), ("op", "+="), ("num", "0x1fu"), ("op", "*"), ("num", "1.5e3f"),
        ("op", ";"), ("id", "a"), ("op", "->"), ("id", "b")]
    assert all(text[t.start:t.end] == t.text for t in toks)
    assert [t.text for t in tokens("1. .5 12", 0, 8)] == ["1.", ".5", "12"]
    assert [t.text for t in tokens("abc def", 4, 7)] == ["def"]
    with pytest.raises(Refuse):
        tokens('s = "  ";', 0, 9)  # a blanked string literal keeps its quotes


def test_close_of_counts_one_kind_or_several() -> None:
    assert close_of("f(a, (b))", 1) == 8
    assert close_of("f(a", 1) is None
    assert close_of("{ x(); }", 0, "{") == 7
    # one depth for several kinds: `)` may close `[` (the caller checks which closer it is)
    assert close_of("[a(b])", 0, "[(") == 5
    assert close_of("[a(b)]", 0, "[(") == 5
    # typed: each closer must match the innermost opener
    assert close_of("(a[b)]", 0, "([{", typed=True) is None
    assert close_of("(a[b]{c})", 0, "([{", typed=True) == 8
    toks = tokens("p[q[i] + 1] = 0", 0, 15)
    assert toks[close_of(toks, 1, "[")].start == 10


def test_top_level_skips_bracketed_positions() -> None:
    text = "a, f(b, c), [d, e], g"
    assert [k for k in top_level(text, 0, len(text)) if text[k] == ","] == [1, 10, 18]
    toks = tokens("x = f(y = 1); z", 0, 15)
    assert [toks[k].text for k in top_level(toks, 0, len(toks))] == ["x", "=", "f", ";", "z"]
    assert list(top_level("a) b", 0, 4)) == [0]  # after a stray closer nothing is at depth 0
    with pytest.raises(Refuse):
        list(top_level("a) b", 0, 4, balanced=True))
    assert next(k for k in top_level("a; b)", 0, 5, balanced=True) if "a; b)"[k] == ";") == 1  # lazy


def test_split_top_trim_and_statement_after() -> None:
    text = "f(a, g(b, c),  d )"
    assert [text[s:e] for s, e in split_top(text, 2, len(text) - 1)] == ["a", " g(b, c)", "  d "]
    assert trim_span(text, (13, len(text) - 1)) == (15, 16)
    assert trim_span("   ", (0, 3)) == (3, 3)
    assert statement_after("  { a; { b; } } c;", 0) == "{ a; { b; } }"
    assert statement_after(" x = 1; y;", 0) == "x = 1;"
    assert statement_after(" { a;", 0) == "{ a;"


def test_line_indent_uses_the_line_break_text_given() -> None:
    source = "int f() {\n\t  x = 1;\n}"
    assert line_indent(source, source.index("x")) == "\t  "
    assert line_indent(source, 0) == ""
    blanked = source.replace("\n", " ", 1)  # as strip_c blanks a line continuation
    assert line_indent(source, source.index("x"), blanked) == ""


def test_fresh_name_styles() -> None:
    text = "int lane = 0; int lane_ = 1; float x_tile_t;"
    assert fresh_name(text, "lane") == "lane__"
    assert fresh_name(text, "off") == "off"
    taken: set[str] = set()
    assert fresh_name(text, "v_in", taken) == "v_in" and fresh_name(text, "v_in", taken) == "v_in_"
    assert taken == {"v_in", "v_in_"}
    # numbered, and a prefix of an identifier counts as used (derived names stay free)
    assert fresh_name(text, "x_tile", numbered=True, prefix=True) == "x_tile2"
    assert fresh_name(text, "x_tile", numbered=True) == "x_tile"


def test_param_parts_rules() -> None:
    src = ("__global__ void __launch_bounds__(256) a(float* x, int (*f)(int, int), int n) { }\n"
           "__global__ void k(void) { }\n")
    sc = scan(src)
    a, k = sc.functions
    # first '(' after the first "a" (inside __global__): the launch-bounds list, up to the header's last ')'
    assert param_parts(sc.text, a) == ["256) a(float* x", " int (*f)(int", " int)", " int n"]
    assert param_parts(sc.text, a, at_call=True) == ["float* x", " int (*f)(int", " int)", " int n"]
    assert param_parts(sc.text, a, nested=True) == ["256"]
    assert param_parts(sc.text, k) == ["void"]
    b = scan("__global__ void b(float* x, int (*f)(int, int), int n) { }").functions[0]
    text = scan("__global__ void b(float* x, int (*f)(int, int), int n) { }").text
    assert param_parts(text, b, nested=True) == ["float* x", " int (*f)(int, int)", " int n"]


def test_grid_follow_spans_and_constant_decls() -> None:
    text = "(n + 255) / 256 + 256"
    assert [(text[s:e], off) for s, e, off in grid_follow_spans(text, 0, len(text), 256)] == [("255", -1),
                                                                                            ("256", 0)]
    assert grid_follow_spans(text, 0, len(text), 128) == []
    sc = scan("#define B 16\nconst int T = 4;\nvoid h() { const int L = 2; }\n#define B 32\n")
    decls = sc.constant_decls()
    assert {n: (v, kind) for n, (v, _, _, kind) in decls.items()} == {"B": (32, "define"), "T": (4, "const")}
    s, e = decls["T"][1:3]
    assert sc.text[s:e] == "const int T = 4;"
    assert sc.constants() == {"B": 32, "T": 4}


def test_apply_edits_orders_and_overlaps() -> None:
    src = "abcdef"
    assert apply_edits(src, [(1, 2, "B"), (4, 6, "EF")]) == "aBcdEF"
    # two insertions at one point: in text order, or (stable) the one given later first
    assert apply_edits(src, [(3, 3, "y"), (3, 3, "x")]) == "abcxydef"
    assert apply_edits(src, [(3, 3, "x"), (3, 3, "y")], stable=True) == "abcyxdef"
    assert apply_edits(src, [(1, 4, "_"), (2, 3, "?")]) == "a_ef"  # silently overlapping
    with pytest.raises(ValueError):
        apply_edits(src, [(1, 4, "_"), (2, 3, "?")], disjoint=True)


def test_launches_of_and_host_function() -> None:
    src = ("__global__ void k(int* x) { }\n"
           "void run(int* x) { }\n"
           "void run(int* x, int n) { k<<<1, 32>>>(x); k<<<2, 64>>>(x); }\n")
    sc = scan(src)
    launches = sc.launches_of("k")
    assert len(launches) == 2 and sc.launches_of("run") == []
    first, second = (f for f in sc.functions if f.name == "run")
    assert sc.host_function(launches[0]) == first  # by name: the first definition
    assert sc.host_function(launches[0], containing=True) == second
