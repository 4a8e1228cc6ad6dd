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


@dataclass
class FunctionDef:
    name: str
    node: Any  # function_definition
    is_kernel: bool
    template: list[TemplateParam] = field(default_factory=list)
    params: list[KernelParam] = field(default_factory=list)
    launch_bounds: str | None = None

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

    def kernels(self) -> list[str]:
        return sorted(n for n, fs in self.functions.items() if any(f.is_kernel for f in fs))


def _declarator_name(decl: Any) -> str | None:
    while decl is not None:
        if decl.type in ("identifier", "field_identifier"):
            return node_text(decl)
        if decl.type in ("qualified_identifier", "destructor_name", "operator_name", "template_function"):
            return node_text(decl)
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
        d = decl
        restrict = "__restrict__" in text or "__restrict" in text
        while d is not None:
            if d.type in ("pointer_declarator", "array_declarator", "abstract_pointer_declarator"):
                is_ptr = True
            d = d.child_by_field_name("declarator")
        type_node = p.child_by_field_name("type")
        quals = [node_text(c) for c in p.children if c.type == "type_qualifier"]
        type_text = " ".join(quals + ([node_text(type_node)] if type_node is not None else []))
        out.append(KernelParam(name, type_text, is_ptr, "const" in quals, restrict, int(p.start_point[0]) + 1))
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


def _function_def(node: Any, template: list[TemplateParam]) -> FunctionDef | None:
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
    )


def parse_source(source: str) -> ParsedSource:
    """Parse once: functions by name, file-scope declarations, macros, lines that failed to parse."""
    text = preprocess(source)
    tree = parse_tree(text)
    functions: dict[str, list[FunctionDef]] = {}
    file_decls: list[Any] = []
    errors: list[int] = []

    def visit(node: Any, template: list[TemplateParam]) -> None:
        for child in node.children:
            if child.type == "ERROR":
                errors.append(int(child.start_point[0]) + 1)
            if child.type == "function_definition":
                f = _function_def(child, template)
                if f is not None:
                    functions.setdefault(f.name, []).append(f)
                if child.has_error:
                    errors.extend(_error_lines(child))
            elif child.type == "template_declaration":
                visit(child, _template_params(child))
            elif child.type == "declaration":
                file_decls.append(child)
            elif child.type in (
                "linkage_specification",
                "declaration_list",
                "namespace_definition",
                "preproc_ifdef",
                "preproc_if",
                "preproc_else",
                "preproc_elif",
            ):
                visit(child, [])

    visit(tree.root_node, [])
    return ParsedSource(text, tree, collect_macros(text), functions, file_decls, sorted(set(errors)))


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
