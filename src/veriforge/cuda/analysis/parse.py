"""Parse CUDA source with tree-sitter-cuda and find the kernel, its parameters and the macros.

tree-sitter-cuda is fast and never gives up on a file (it marks what it cannot parse as ERROR
nodes), but it has no preprocessor and a few CUDA constructs trip it; those are rewritten first
*without moving any byte*, so line numbers in the report are the user's. Known rewrites:
``__align__(16)`` (breaks ``extern __shared__ __align__(16) float s[]``) and ``alignas(16)`` become
blanks. Object-like and function-like ``#define``s are collected here and expanded by the
evaluator when an identifier or call names one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from veriforge.errors import CudaError


class AnalysisError(CudaError):
    """The source cannot be analysed at all (the kernel is missing, the launch is invalid...)."""


class KernelNotFoundError(AnalysisError, LookupError):
    """No ``__global__`` function with the requested name (the message lists the kernels found)."""


_BLANK_PATTERNS = (re.compile(r"__align__\s*\(\s*[^()]*\)"), re.compile(r"\balignas\s*\(\s*[^()]*\)"))
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?[ \t]*(.*)$")


def _blank(match: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def preprocess(source: str) -> str:
    """Blank out constructs tree-sitter-cuda cannot parse, keeping every offset and line."""
    for pat in _BLANK_PATTERNS:
        source = pat.sub(_blank, source)
    return source


_OPERAND = r"-?(?:[A-Za-z_]\w*(?:(?:\.|->)[A-Za-z_]\w*)*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?[fFuUlL]*)"
_KEYWORDS = frozenset({"template", "typename", "class", "struct", "const", "return", "sizeof", "operator"})
_COMPARISON = re.compile(
    r"(?P<pre>(?:[(,;{?:=]|&&|\|\||\breturn)[ \t]*)"
    rf"(?P<a>{_OPERAND}) (?P<op><=|>=|<|>) (?P<b>{_OPERAND})"
    r"(?=[ \t]*(?:[),;?:]|&&|\|\||==|!=))"
)


def _compact(match: re.Match[str]) -> str:
    a, b = match.group("a"), match.group("b")
    if a in _KEYWORDS or b in _KEYWORDS:
        return match.group(0)
    return f"{match.group('pre')}({a}{match.group('op')}{b})"


_REAL_TEMPLATES = frozenset({"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast", "bit_cast"})
_SPAN_TYPES = frozenset({"parenthesized_expression", "condition_clause", "expression_statement",
                         "return_statement", "init_declarator", "argument_list"})


def parenthesize_comparisons(text: str, tree: Any) -> str | None:
    """Where tree-sitter mistook a comparison for a template, ``gr < ny && gc >= 0`` →
    ``(gr<ny) && (gc>=0)``, byte for byte the same length; None when nothing needs it.

    tree-sitter's C++ grammar reads ``gr < ny && gc >`` as a template argument list (``gr<…>``)
    and the rest as an assignment, so real bounds checks such as
    ``gr >= 0 && gr < ny && gc >= 0 && gc < nx`` were silently mis-analysed (the guarded load was
    never counted). For every ``template_function`` whose name is not a template of the file (nor
    a cast), the enclosing expression's simple comparisons — with a boundary of lower precedence
    (``(``, ``&&``, ``||``, ``,``, ``?``, ``:``, ``=``, ``return``) on both sides — are wrapped in
    parentheses, using the two spaces around the operator, so no ``<`` can open a template that a
    later ``>`` closes, and every offset and line stays the user's.
    """
    templates = set(_REAL_TEMPLATES)
    bogus: list[Any] = []
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "template_declaration":
            for c in n.named_children:
                d = c.child_by_field_name("declarator") if c.type == "function_definition" else None
                while d is not None and d.type not in ("identifier", "field_identifier"):
                    d = d.child_by_field_name("declarator")
                if d is not None:
                    templates.add(node_text(d))
                name = c.child_by_field_name("name")
                if name is not None:
                    templates.add(node_text(name))
        if n.type == "template_function":
            name = n.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                bogus.append(n)
        stack.extend(n.named_children)
    spans = []
    for n in bogus:
        if node_text(n.child_by_field_name("name")) in templates:
            continue
        a = n.parent
        while a is not None and a.type not in _SPAN_TYPES:
            a = a.parent
        if a is not None:
            spans.append((a.start_byte, a.end_byte))
    if not spans:
        return None
    data = bytearray(text.encode())
    for lo, hi in sorted(set(spans)):
        chunk = data[lo:hi].decode(errors="surrogateescape")
        fixed = _COMPARISON.sub(_compact, chunk).encode(errors="surrogateescape")
        if len(fixed) == hi - lo:
            data[lo:hi] = fixed
    fixed_text = data.decode(errors="surrogateescape")
    return None if fixed_text == text else fixed_text


_PRAGMA_LINE = re.compile(r"^[ \t]*#[ \t]*pragma\b[^\n]*$", re.MULTILINE)
_TRAILING_COMMENT = re.compile(r"(//[^\n]*|/\*(?:(?!\*/).)*\*/)\s*$", re.DOTALL)


def blank_stray_pragmas(text: str) -> tuple[str, dict[int, str]]:
    """Blank ``#pragma`` lines that sit between a control header and its unbraced body.

    ``for (...)\\n#pragma unroll\\nfor (...)`` is valid CUDA, but tree-sitter ends the outer loop at
    the directive (an empty body) and makes the inner loop its sibling, which would silently change
    what the loop repeats. The directive is blanked (offsets kept) and returned keyed by the byte
    offset of the statement it applies to, so the walker still sees the pragma.
    """
    found: dict[int, str] = {}
    out = text
    for m in _PRAGMA_LINE.finditer(text):
        before = text[max(0, m.start() - 4096) : m.start()].rstrip()
        while True:
            stripped = _TRAILING_COMMENT.sub("", before).rstrip()
            if stripped == before:
                break
            before = stripped
        if not (before.endswith(")") or re.search(r"\b(else|do)$", before)):
            continue
        if before[before.rfind("\n") + 1 :].lstrip().startswith("#"):
            continue  # follows another preprocessor line (`#define F(x) (x)`)
        rest = re.match(r"\s*", text[m.end() :])
        target = m.end() + (rest.end() if rest else 0)
        found[len(text[:target].encode())] = m.group(0).strip()
        out = out[: m.start()] + re.sub(r"[^\n]", " ", m.group(0)) + out[m.end() :]
    return out, found


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...] | None  # None: object-like
    body: str
    line: int


def collect_macros(source: str) -> dict[str, Macro]:
    """``#define``s in source order (later definitions win; ``#undef`` removes)."""
    macros: dict[str, Macro] = {}
    lines = source.split("\n")
    i = 0
    while i < len(lines):
        start = i
        text = lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        i += 1
        undef = re.match(r"^\s*#\s*undef\s+(\w+)", text)
        if undef:
            macros.pop(undef.group(1), None)
            continue
        m = _DEFINE.match(text)
        if not m:
            continue
        body = re.sub(r"//.*$", "", m.group(3))
        body = re.sub(r"/\*.*?\*/", " ", body).strip()
        params = None
        if m.group(2) is not None:
            params = tuple(p.strip() for p in m.group(2)[1:-1].split(",") if p.strip())
        macros[m.group(1)] = Macro(m.group(1), params, body, start + 1)
    return macros


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def parse_tree(text: str) -> Any:
    return _parser().parse(text.encode())


@lru_cache(maxsize=4096)
def parse_expression(text: str) -> Any:
    """The expression node of ``text`` (used to expand macro bodies), or None when it does not parse."""
    src = f"void __vf_f() {{ __vf_x = ({text}); }}"
    tree = parse_tree(src)
    if tree.root_node.has_error:
        return None
    node = tree.root_node
    for path in ("function_definition", "compound_statement", "expression_statement", "assignment_expression"):
        node = next((c for c in node.named_children if c.type == path), None)
        if node is None:
            return None
    value = node.child_by_field_name("right")
    while value is not None and value.type == "parenthesized_expression" and value.named_child_count == 1:
        value = value.named_children[0]
    return value


def node_text(node: Any) -> str:
    return node.text.decode(errors="replace")


@dataclass
class TemplateParam:
    name: str
    kind: str  # "type" | "value"
    default: str | None


@dataclass
class KernelParam:
    name: str
    type_text: str
    is_pointer: bool
    const: bool
    restrict: bool
    line: int
    is_ref: bool = False  # a C++ reference parameter (``float &acc``)
    default: str | None = None  # default argument text


@dataclass
class FunctionDef:
    name: str
    node: Any  # function_definition
    is_kernel: bool
    template: list[TemplateParam] = field(default_factory=list)
    params: list[KernelParam] = field(default_factory=list)
    launch_bounds: str | None = None
    scope: str = ""  # enclosing namespaces, ``a::b``

    @property
    def body(self) -> Any:
        return self.node.child_by_field_name("body")

    @property
    def line(self) -> int:
        return int(self.node.start_point[0]) + 1


@dataclass
class ParsedSource:
    text: str
    tree: Any
    macros: dict[str, Macro]
    functions: dict[str, list[FunctionDef]]
    file_decls: list[Any]  # file-scope declaration nodes (constants, __device__/__constant__ arrays)
    parse_errors: list[int]  # lines with ERROR nodes
    # `#pragma` lines blanked between a control header and its unbraced body, by the byte offset of
    # the statement they apply to (see :func:`blank_stray_pragmas`)
    stray_pragmas: dict[int, str] = field(default_factory=dict)

    def kernels(self) -> list[str]:
        return sorted(n for n, fs in self.functions.items() if any(f.is_kernel for f in fs))


def _declarator_name(decl: Any) -> str | None:
    while decl is not None:
        if decl.type in ("identifier", "field_identifier"):
            return node_text(decl)
        if decl.type in ("qualified_identifier", "destructor_name", "operator_name", "template_function"):
            return node_text(decl)
        if decl.type == "reference_declarator":
            decl = decl.named_children[-1] if decl.named_children else None
            continue
        decl = decl.child_by_field_name("declarator")
    return None


def _params(fn_declarator: Any) -> list[KernelParam]:
    out: list[KernelParam] = []
    plist = fn_declarator.child_by_field_name("parameters")
    if plist is None:
        return out
    for p in plist.named_children:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        decl = p.child_by_field_name("declarator")
        name = _declarator_name(decl) or ""
        text = node_text(p)
        is_ptr = False
        is_ref = False
        d = decl
        restrict = "__restrict__" in text or "__restrict" in text
        while d is not None:
            if d.type in ("pointer_declarator", "array_declarator", "abstract_pointer_declarator"):
                is_ptr = True
            if d.type in ("reference_declarator", "abstract_reference_declarator"):
                is_ref = True
                d = d.named_children[-1] if d.named_children else None
                continue
            d = d.child_by_field_name("declarator")
        type_node = p.child_by_field_name("type")
        quals = [node_text(c) for c in p.children if c.type == "type_qualifier"]
        type_text = " ".join(quals + ([node_text(type_node)] if type_node is not None else []))
        default = p.child_by_field_name("default_value") if p.type == "optional_parameter_declaration" else None
        out.append(
            KernelParam(
                name,
                type_text,
                is_ptr,
                "const" in quals,
                restrict,
                int(p.start_point[0]) + 1,
                is_ref,
                node_text(default) if default is not None else None,
            )
        )
    return out


def _template_params(tdecl: Any) -> list[TemplateParam]:
    out: list[TemplateParam] = []
    plist = tdecl.child_by_field_name("parameters")
    if plist is None:
        return out
    for p in plist.named_children:
        kind = "type" if p.type in ("type_parameter_declaration", "optional_type_parameter_declaration") else "value"
        name_node = p.child_by_field_name("name") or p.child_by_field_name("declarator")
        if name_node is None:
            ids = [c for c in p.named_children if c.type in ("type_identifier", "identifier")]
            name_node = ids[-1] if ids else None
        default = p.child_by_field_name("default_type") or p.child_by_field_name("default_value")
        if name_node is not None:
            out.append(TemplateParam(node_text(name_node), kind, node_text(default) if default is not None else None))
    return out


def _function_def(node: Any, template: list[TemplateParam], scope: str = "") -> FunctionDef | None:
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    if decl is None:
        return None
    name = _declarator_name(decl.child_by_field_name("declarator"))
    if not name:
        return None
    head = node.text[: (node.child_by_field_name("body") or node).start_byte - node.start_byte].decode(errors="replace")
    lb = re.search(r"__launch_bounds__\s*\(([^)]*)\)", head)
    return FunctionDef(
        name=name.split("::")[-1],
        node=node,
        is_kernel="__global__" in head,
        template=template,
        params=_params(decl),
        launch_bounds=lb.group(1).strip() if lb else None,
        scope="::".join(p for p in (scope, *name.split("::")[:-1]) if p),
    )


def parse_source(source: str) -> ParsedSource:
    """Parse once: functions by name, file-scope declarations, macros, lines that failed to parse."""
    text = preprocess(source)
    # the tree is parsed with stray pragmas blanked; `text` keeps them (host code compiles it)
    parsed_text, stray = blank_stray_pragmas(text)
    tree = parse_tree(parsed_text)
    fixed = parenthesize_comparisons(parsed_text, tree)
    if fixed is not None:
        parsed_text = fixed
        tree = parse_tree(parsed_text)
    functions: dict[str, list[FunctionDef]] = {}
    file_decls: list[Any] = []
    errors: list[int] = []

    def visit(node: Any, template: list[TemplateParam], scope: str = "") -> None:
        for child in node.children:
            if child.type == "ERROR":
                errors.append(int(child.start_point[0]) + 1)
            if child.type == "function_definition":
                f = _function_def(child, template, scope)
                if f is not None:
                    functions.setdefault(f.name, []).append(f)
                if child.has_error:
                    errors.extend(_error_lines(child))
            elif child.type == "template_declaration":
                visit(child, _template_params(child), scope)
            elif child.type == "namespace_definition":
                ns = child.child_by_field_name("name")
                inner = node_text(ns) if ns is not None else ""
                visit(child, [], "::".join(p for p in (scope, inner) if p))
            elif child.type == "declaration":
                file_decls.append(child)
            elif child.type in (
                "linkage_specification",
                "declaration_list",
                "preproc_ifdef",
                "preproc_if",
                "preproc_else",
                "preproc_elif",
            ):
                visit(child, [], scope)

    visit(tree.root_node, [])
    return ParsedSource(text, tree, collect_macros(text), functions, file_decls, sorted(set(errors)), stray)


def _error_lines(node: Any) -> list[int]:
    out: list[int] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            out.append(int(n.start_point[0]) + 1)
        elif n.has_error:
            stack.extend(n.children)
    return out


def find_kernel(parsed: ParsedSource, name: str) -> FunctionDef:
    """The ``__global__`` function called ``name`` (a definition, not a declaration)."""
    cands = [f for f in parsed.functions.get(name, []) if f.is_kernel]
    if not cands:
        kernels = parsed.kernels()
        listing = ", ".join(kernels) if kernels else "none"
        raise KernelNotFoundError(f"no __global__ function named {name!r} in the source; kernels found: {listing}")
    if len(cands) > 1:
        lines = ", ".join(str(c.line) for c in cands)
        raise AnalysisError(f"kernel {name!r} is overloaded (definitions at lines {lines}); rename one to analyse it")
    return cands[0]
