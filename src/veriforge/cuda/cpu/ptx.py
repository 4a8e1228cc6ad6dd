"""Inline PTX for the CPU runtime: a documented subset of PTX translated to C++ at build time.

A device-side ``asm("..." : outputs : inputs : clobbers)`` statement is parsed here (template
strings, ``%%`` escapes, numbered and ``%[named]`` operands, ``{ .reg ... }`` scopes, several
instructions separated by ``;``) and replaced by a C++ block that the g++ build compiles: every
operand and every ``.reg`` becomes a 64-bit register variable holding raw bits, each instruction
reads and writes registers as its PTX type, and outputs are converted back to the C++ lvalues at the
end (``runtime/vf_ptx.h`` has the helpers). Anything outside the subset raises :class:`PtxError`
naming the instruction, which the front end turns into a refusal with ``file:line`` - never a
silently different result.

The subset (``SUPPORTED``): ``mov`` (registers, immediates, special registers, ``{a, b}`` packing),
integer and floating-point arithmetic (``add sub mul mad fma div rem abs neg min max`` with
``.lo/.hi/.wide``, ``.sat``, ``.cc``/``addc``/``subc`` carry chains, rounding modifiers), bit operations
(``and or xor not cnot shl shr brev popc clz bfind bfe bfi prmt lop3``), ``cvt`` (integer, float,
``.f16``/``.bf16``, rounding and saturation), ``selp``, ``setp`` (every comparison, with ``.and/.or/.xor``),
``testp``, ``rcp sqrt rsqrt ex2 lg2 sin cos tanh copysign``, ``ld``/``ldu``/``st`` (``.global .shared
.local .const``, ``.volatile``, ``.relaxed``/``.acquire``/``.release``, cache hints, ``.nc``, ``.v2/.v4``),
``atom``/``red`` (``add min max inc dec and or xor exch cas``), ``membar``/``fence``, ``activemask``,
``shfl.sync``, ``vote.sync``, ``match.sync``, ``redux.sync``, ``bar.sync 0``/``barrier.sync``,
``bar.warp.sync``, ``nanosleep``, ``trap``, ``prefetch``, ``cvta`` (64-bit), predicated instructions
(``@p`` / ``@!p``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from veriforge.cuda.source_reader import blank

__all__ = ["SUPPORTED", "AsmStatement", "PtxError", "parse_asm", "translate", "translate_asm"]

SUPPORTED = (
    "mov add sub mul mad fma div rem abs neg min max and or xor not cnot shl shr brev popc clz bfind bfe bfi "
    "prmt lop3 cvt cvta selp setp testp rcp sqrt rsqrt ex2 lg2 sin cos tanh copysign ld ldu st atom red membar "
    "fence activemask shfl vote match redux bar barrier nanosleep trap prefetch prefetchu addc subc "
    "vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4"
).split()


class PtxError(Exception):
    """An ``asm`` statement outside the supported subset: ``instruction`` names it."""

    def __init__(self, instruction: str, reason: str) -> None:
        super().__init__(f"'{instruction}': {reason}")
        self.instruction = instruction
        self.reason = reason


@dataclass
class Operand:
    constraint: str  # without modifiers: r l h c f d n
    expr: str
    output: bool
    inout: bool
    name: str | None = None


@dataclass
class AsmStatement:
    template: str
    operands: list[Operand] = field(default_factory=list)
    clobbers: list[str] = field(default_factory=list)
    basic: bool = False  # no operand sections: `%` is not special


# ---- parsing the C++ statement ------------------------------------------------------------------

def _split_top(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside brackets and string literals (``asm("..." :: "r"(x))`` has an empty section)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i : j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:  # operand expressions are parenthesised: a `::` there is at depth 1
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "a": "\a", "v": "\v",
            "f": "\f", "b": "\b", "?": "?"}


def _string_literals(text: str) -> str:
    """The concatenated value of a sequence of C string literals, or PtxError."""
    out, i = [], 0
    text = text.strip()
    if not text:
        raise PtxError("asm", "the template is empty")
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        m = re.compile(r'(?:u8|u|U|L)?"').match(text, i)
        if not m:
            raise PtxError(text.split()[0][:40], "the asm template is not a string literal (a macro the front end "
                                                  "cannot expand?)")
        j = m.end()
        while j < len(text) and text[j] != '"':
            if text[j] == "\\" and j + 1 < len(text):
                e = text[j + 1]
                if e == "x":
                    h = re.compile(r"[0-9a-fA-F]+").match(text, j + 2)
                    out.append(chr(int(h.group(), 16)) if h else "x")
                    j = h.end() if h else j + 2
                    continue
                if e in "01234567":
                    o = re.compile(r"[0-7]{1,3}").match(text, j + 1)
                    out.append(chr(int(o.group(), 8)))
                    j = o.end()
                    continue
                out.append(_ESCAPES.get(e, e))
                j += 2
            else:
                out.append(text[j])
                j += 1
        i = j + 1
    return "".join(out)


_OPERAND = re.compile(r'^\s*(?:\[\s*(?P<name>\w+)\s*\])?\s*"(?P<c>[^"]*)"\s*\((?P<expr>.*)\)\s*$', re.S)


def parse_asm(body: str) -> AsmStatement:
    """``body``: the text between the parentheses of ``asm(...)`` (comments allowed)."""
    body = re.sub(r"\\[ \t]*\n", "", body)  # line splices (an asm inside a multi-line macro)
    sections = _split_top(blank(body, literals=False), ":")
    template = _string_literals(sections[0])
    stmt = AsmStatement(template=template, basic=len(sections) == 1)
    for index, section in enumerate(sections[1:3]):
        if not section.strip():
            continue
        for item in _split_top(section, ","):
            m = _OPERAND.match(item)
            if not m:
                raise PtxError(item.strip()[:40], "cannot parse this asm operand")
            constraint = m.group("c").replace("&", "").strip()
            output = index == 0
            inout = "+" in constraint
            letters = constraint.replace("=", "").replace("+", "")
            if letters not in ("r", "l", "h", "c", "f", "d", "n"):
                raise PtxError(f'"{m.group("c")}"', "operand constraint outside the supported set "
                                                    "(r, l, h, f, d, n with =, + or &)")
            if output and not ("=" in constraint or inout):
                raise PtxError(f'"{m.group("c")}"', "an output operand needs '=' or '+'")
            stmt.operands.append(Operand(letters, " ".join(m.group("expr").split()), output, inout, m.group("name")))
    if len(sections) > 3:
        stmt.clobbers = [c.strip().strip('"') for c in sections[3].split(",") if c.strip()]
    if len(sections) > 4:
        raise PtxError("asm goto", "asm goto is not supported")
    return stmt


# ---- PTX text ------------------------------------------------------------------------------------

_TYPES = {"u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
          "s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t",
          "b8": "uint8_t", "b16": "uint16_t", "b32": "uint32_t", "b64": "uint64_t",
          "f32": "float", "f64": "double", "pred": "bool", "f16": "uint16_t", "bf16": "uint16_t"}
_SPECIAL = {
    "%laneid": ("uint32_t", "::vf::ptx::laneid()"),
    "%warpid": ("uint32_t", "::vf::ptx::warpid()"),
    "%nwarpid": ("uint32_t", "::vf::ptx::nwarpid()"),
    "%smid": ("uint32_t", "::vf::ptx::smid()"),
    "%nsmid": ("uint32_t", "::vf::ptx::nsmid()"),
    "%gridid": ("uint64_t", "::vf::ptx::gridid()"),
    "%clock": ("uint32_t", "(uint32_t)::vf::ptx::clock64()"),
    "%clock_hi": ("uint32_t", "(uint32_t)(::vf::ptx::clock64() >> 32)"),
    "%clock64": ("uint64_t", "::vf::ptx::clock64()"),
    "%globaltimer": ("uint64_t", "::vf::ptx::globaltimer()"),
    "%globaltimer_lo": ("uint32_t", "(uint32_t)::vf::ptx::globaltimer()"),
    "%globaltimer_hi": ("uint32_t", "(uint32_t)(::vf::ptx::globaltimer() >> 32)"),
    "%lanemask_eq": ("uint32_t", "::vf::ptx::lanemask_eq()"),
    "%lanemask_le": ("uint32_t", "::vf::ptx::lanemask_le()"),
    "%lanemask_lt": ("uint32_t", "::vf::ptx::lanemask_lt()"),
    "%lanemask_ge": ("uint32_t", "::vf::ptx::lanemask_ge()"),
    "%lanemask_gt": ("uint32_t", "::vf::ptx::lanemask_gt()"),
    "WARP_SZ": ("uint32_t", "32u"),
}
for _axis in "xyz":
    _SPECIAL[f"%tid.{_axis}"] = ("uint32_t", f"threadIdx.{_axis}")
    _SPECIAL[f"%ntid.{_axis}"] = ("uint32_t", f"blockDim.{_axis}")
    _SPECIAL[f"%ctaid.{_axis}"] = ("uint32_t", f"blockIdx.{_axis}")
    _SPECIAL[f"%nctaid.{_axis}"] = ("uint32_t", f"gridDim.{_axis}")

_CONSTRAINT_BITS = {"r": 32, "l": 64, "h": 16, "c": 8, "f": 32, "d": 64, "n": 64}
_INT = re.compile(r"^-?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uU]?$")
_FLOAT_HEX = re.compile(r"^-?0[fF]([0-9a-fA-F]{8})$|^-?0[dD]([0-9a-fA-F]{16})$")
_FLOAT_DEC = re.compile(r"^-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?$")


@dataclass
class _Reg:
    cpp: str
    bits: int  # 1 for predicates
    kind: str = "reg"  # reg, operand, pred


class _Scope:
    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.names: dict[str, _Reg] = {}

    def find(self, name: str) -> _Reg | None:
        s: _Scope | None = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None


_CMP = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5, "lo": 2, "ls": 3, "hi": 4, "hs": 5,
        "equ": 6, "neu": 7, "ltu": 8, "leu": 9, "gtu": 10, "geu": 11, "num": 12, "nan": 13}

_TESTP = {"finite": 0, "infinite": 1, "number": 2, "notanumber": 3, "normal": 4, "subnormal": 5}

_ROUND_INT = {"rni": 0, "rzi": 1, "rmi": 2, "rpi": 3}

_ATOM = {"add": 0, "min": 1, "max": 2, "inc": 3, "dec": 4, "and": 5, "or": 6, "xor": 7, "exch": 8, "cas": 9}

_SHFL = {"up": 0, "down": 1, "bfly": 2, "idx": 3}
_SPACES = ("global", "shared", "local", "const", "param")


class _Translator:
    def __init__(self, stmt: AsmStatement) -> None:
        self.stmt = stmt
        self.decls: list[str] = []
        self.code: list[str] = []
        self.counter = 0
        self.uses_cc = False
        self.instr = ""

    # -- errors and names --
    def fail(self, reason: str) -> PtxError:
        return PtxError(self.instr or "asm", reason)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"vf_{stem}{self.counter}"

    # -- operands --
    def reg(self, tok: str, scope: _Scope) -> _Reg:
        tok = tok.strip()
        m = re.fullmatch(r"\$(\d+)", tok)
        if m:
            i = int(m.group(1))
            if i >= len(self.stmt.operands):
                raise self.fail(f"operand %{i} does not exist")
            return _Reg(f"vf_o{i}", _CONSTRAINT_BITS[self.stmt.operands[i].constraint], "operand")
        r = scope.find(tok)
        if r is None:
            raise self.fail(f"unknown register or symbol '{tok}'")
        return r

    def is_imm(self, tok: str) -> bool:
        t = tok.strip()
        return bool(_INT.match(t) or _FLOAT_HEX.match(t) or _FLOAT_DEC.match(t))

    def read(self, tok: str, t: str, scope: _Scope) -> str:
        """A C++ expression of type _TYPES[t] with the operand's value."""
        tok = tok.strip()
        cpp = _TYPES[t]
        if tok.startswith("!"):
            if t != "pred":
                raise self.fail("'!' applies to predicates only")
            return f"(!{self.read(tok[1:], 'pred', scope)})"
        if tok in _SPECIAL:
            _, expr = _SPECIAL[tok]
            return f"(({cpp})({expr}))"
        if tok.startswith("%") and tok not in _SPECIAL and scope.find(tok) is None:
            raise self.fail(f"special register '{tok}' is outside the supported set")
        m = _FLOAT_HEX.match(tok)
        if m:
            neg = "-" if tok.startswith("-") else ""
            if m.group(1):
                return f"(({cpp})({neg}::vf::ptx::get<float>(0x{m.group(1)}ull)))"
            return f"(({cpp})({neg}::vf::ptx::get<double>(0x{m.group(2)}ull)))"
        if _INT.match(tok):
            text = tok.rstrip("uU")
            neg = text.startswith("-")
            body = text[1:] if neg else text
            if body.lower().startswith("0b"):
                value = int(body[2:], 2)
            elif body.lower().startswith("0x"):
                value = int(body, 16)
            elif len(body) > 1 and body.startswith("0"):
                value = int(body, 8)
            else:
                value = int(body)
            if t in ("f32", "f64"):
                return f"(({cpp})({'-' if neg else ''}{value}.0))"
            return f"(({cpp})({'-' if neg else ''}{value}ull))"
        if _FLOAT_DEC.match(tok):
            return f"(({cpp})({tok}))"
        r = self.reg(tok, scope)
        if r.kind == "pred":
            if t != "pred":
                raise self.fail(f"predicate '{tok}' used as a .{t} value")
            return r.cpp
        if t == "pred":
            raise self.fail(f"'{tok}' is not a predicate")
        return f"::vf::ptx::get<{cpp}>({r.cpp})"

    def write(self, tok: str, t: str, expr: str, scope: _Scope) -> str:
        tok = tok.strip()
        if tok == "_":
            return f"(void)({expr});"
        if tok in _SPECIAL or self.is_imm(tok):
            raise self.fail(f"'{tok}' cannot be a destination")
        r = self.reg(tok, scope)
        if r.kind == "operand":
            op = self.stmt.operands[int(r.cpp[4:])]
            if not op.output:
                raise self.fail(f"operand {tok.replace('$', '%')} is an input but written")
        if r.kind == "pred":
            if t != "pred":
                raise self.fail(f"a .{t} value written to predicate '{tok}'")
            return f"{r.cpp} = ({expr});"
        if t == "pred":
            raise self.fail(f"a predicate written to '{tok}', which is not a predicate register")
        return f"{r.cpp} = ::vf::ptx::put<{_TYPES[t]}>({expr});"

    def address(self, tok: str, scope: _Scope, space: str) -> str:
        """``[reg]``, ``[reg+imm]``, ``[reg-imm]`` as a uint64_t expression."""
        tok = tok.strip()
        if not (tok.startswith("[") and tok.endswith("]")):
            raise self.fail("expected a [address] operand")
        inner = tok[1:-1].strip()
        m = re.fullmatch(r"([^+\-]+?)\s*(?:([+-])\s*(\w+))?", inner)
        if not m:
            raise self.fail(f"address '{tok}' is outside the supported forms ([reg], [reg+imm])")
        base, sign, off = m.group(1).strip(), m.group(2), m.group(3)
        if self.is_imm(base):
            raise self.fail("absolute addresses are not supported")
        r = self.reg(base, scope)
        if r.kind == "pred" or r.bits < 64:
            raise self.fail(f"a {r.bits}-bit address ({space or 'generic'} window address): the CPU runtime "
                            "needs 64-bit generic addresses (an \"l\" operand)")
        expr = f"::vf::ptx::get<uint64_t>({r.cpp})"
        if off:
            if not _INT.match(off):
                raise self.fail(f"address offset '{off}' is not a constant")
            expr = f"({expr} {sign} (uint64_t)({off.rstrip('uU')}ll))"
        return expr

    # -- statements --
    def run(self) -> str:
        text = self.stmt.template
        if not self.stmt.basic:
            text = self.substitute(text)
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        for i, op in enumerate(self.stmt.operands):
            init = f"::vf::ptx::in_{op.constraint}({op.expr})" if (not op.output or op.inout) else "0"
            self.decls.append(f"uint64_t vf_o{i} = {init};")
        root = _Scope(None)
        self.block(text, root)
        outs = [f"::vf::ptx::out_{op.constraint}(({op.expr}), vf_o{i});"
                for i, op in enumerate(self.stmt.operands) if op.output]
        tail = []
        if "memory" in self.stmt.clobbers:
            tail.append("::vf::ptx::compiler_barrier();")
        head = ["uint32_t vf_cc = 0; (void)vf_cc;"] if self.uses_cc else []
        return "do { " + " ".join(head + self.decls + self.code + outs + tail) + " } while (0)"

    def substitute(self, text: str) -> str:
        names = {op.name: i for i, op in enumerate(self.stmt.operands) if op.name}
        out, i = [], 0
        while i < len(text):
            c = text[i]
            if c != "%":
                out.append(c)
                i += 1
                continue
            nxt = text[i + 1 : i + 2]
            if nxt == "%":
                out.append("%")
                i += 2
            elif nxt.isdigit():
                m = re.compile(r"\d+").match(text, i + 1)
                out.append(f"${int(m.group())}")
                i = m.end()
            elif nxt == "[":
                end = text.find("]", i)
                name = text[i + 2 : end].strip()
                if name not in names:
                    raise PtxError(f"%[{name}]", "no operand has this name")
                out.append(f"${names[name]}")
                i = end + 1
            else:  # %laneid written with one '%' (nvcc passes it through)
                out.append("%")
                i += 1
        return "".join(out)

    def block(self, text: str, scope: _Scope) -> None:
        stack = [scope]
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c.isspace():
                i += 1
                continue
            if c == "{":
                stack.append(_Scope(stack[-1]))
                self.code.append("{")
                i += 1
                continue
            if c == "}":
                if len(stack) == 1:
                    raise PtxError("}", "unbalanced braces in the asm template")
                stack.pop()
                self.code.append("}")
                i += 1
                continue
            # one statement, up to ';' (vector operands {a, b} stay inside)
            depth, j = 0, i
            while j < n and not (text[j] == ";" and depth == 0):
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    if depth == 0:
                        break
                    depth -= 1
                j += 1
            if j >= n or text[j] != ";":
                stmt_text = " ".join(text[i:j].split())
                raise PtxError(stmt_text[:60] or "asm", "a PTX statement must end with ';'")
            self.statement(" ".join(text[i:j].split()), stack[-1])
            i = j + 1
        if len(stack) != 1:
            raise PtxError("{", "unbalanced braces in the asm template")

    def statement(self, s: str, scope: _Scope) -> None:
        self.instr = re.sub(r"\$(\d+)", r"%\1", s)  # as the user wrote it
        if re.match(r"^[\w$]+\s*:", s):
            raise self.fail("labels and branches are not supported")
        if s.startswith(".reg"):
            self.declare(s, scope)
            return
        if s.startswith("."):
            raise self.fail("only .reg declarations are supported inside asm")
        guard = None
        m = re.match(r"^@(!?)\s*([%\w$]+)\s+(.*)$", s)
        if m:
            guard = ("!" if m.group(1) else "") + self.read(m.group(2), "pred", scope)
            s = m.group(3)
        m = re.match(r"^([a-z][\w.:]*)\s*(.*)$", s)
        if not m:
            raise self.fail("not a PTX instruction")
        opcode, rest = m.group(1), m.group(2).strip()
        ops = [o.strip() for o in _split_top(rest, ",")] if rest else []
        code = self.instruction(opcode, ops, scope)
        self.code.append(f"if ({guard}) {{ {code} }}" if guard else code)

    def declare(self, s: str, scope: _Scope) -> None:
        m = re.match(r"^\.reg\s+\.(\w+)\s+(.*)$", s)
        if not m or m.group(1) not in _TYPES:
            raise self.fail("unsupported register declaration")
        t = m.group(1)
        for item in m.group(2).split(","):
            item = item.strip()
            arr = re.fullmatch(r"([%\w$]+)<(\d+)>", item)
            names = [f"{arr.group(1)}{k}" for k in range(int(arr.group(2)))] if arr else [item]
            for name in names:
                if not re.fullmatch(r"[%A-Za-z_$][\w$]*", name):
                    raise self.fail(f"bad register name '{name}'")
                if t == "pred":
                    cpp = self.fresh("p")
                    self.code.append(f"bool {cpp} = false; (void){cpp};")
                    scope.names[name] = _Reg(cpp, 1, "pred")
                else:
                    cpp = self.fresh("r")
                    self.code.append(f"uint64_t {cpp} = 0; (void){cpp};")
                    bits = 16 if t in ("f16", "bf16") else int(re.sub(r"\D", "", t) or 32)
                    scope.names[name] = _Reg(cpp, bits, "reg")

    # -- instructions --
    def instruction(self, opcode: str, ops: list[str], scope: _Scope) -> str:
        parts = opcode.split(".")
        base, mods = parts[0], parts[1:]
        types = [p for p in mods if p in _TYPES]
        handler = getattr(self, f"op_{base}", None)
        if handler is None:
            raise self.fail(f"instruction '{base}' is outside the supported PTX subset")
        return handler(base, mods, types, ops, scope)

    def need(self, ops: list[str], n: int | tuple[int, ...]) -> None:
        counts = (n,) if isinstance(n, int) else n
        if len(ops) not in counts:
            raise self.fail(f"expected {' or '.join(map(str, counts))} operands, got {len(ops)}")

    def one_type(self, types: list[str], allowed: str | None = None) -> str:
        if len(types) != 1:
            raise self.fail("expected exactly one type suffix")
        t = types[0]
        if allowed and t not in allowed.split():
            raise self.fail(f"type .{t} is not supported for this instruction")
        return t

    def op_mov(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        self.need(ops, 2)
        d, a = ops
        if d.startswith("{"):  # unpack: mov.b64 {lo, hi}, a
            parts = [p.strip() for p in d[1:-1].split(",")]
            width = _bits(t) // len(parts)
            pt = {8: "b8", 16: "b16", 32: "b32"}.get(width)
            if pt is None or len(parts) not in (2, 4):
                raise self.fail("unsupported vector mov")
            src = self.read(a, "b64" if _bits(t) == 64 else "b32", scope)
            return " ".join(self.write(p, pt, f"(({_TYPES[pt]})(({src}) >> {k * width}))", scope)
                            for k, p in enumerate(parts) if p != "_")
        if a.startswith("{"):  # pack: mov.b64 d, {lo, hi}
            parts = [p.strip() for p in a[1:-1].split(",")]
            width = _bits(t) // len(parts)
            pt = {8: "b8", 16: "b16", 32: "b32"}.get(width)
            if pt is None or len(parts) not in (2, 4):
                raise self.fail("unsupported vector mov")
            wide = _TYPES["b64" if _bits(t) == 64 else "b32"]
            expr = " | ".join(f"(({wide}){self.read(p, pt, scope)} << {k * width})" for k, p in enumerate(parts))
            return self.write(d, t, f"(({_TYPES[t]})({expr}))", scope)
        return self.write(d, t, self.read(a, t, scope), scope)

    def _binary(self, mods, types, ops, scope, fn: str, allow_float=True):
        t = self.one_type(types)
        self.need(ops, 3)
        d, a, b = ops
        if t in ("f32", "f64") and not allow_float:
            raise self.fail(f"floating-point .{t} is not supported for this instruction")
        if t == "pred":
            raise self.fail("predicate operands are not supported here")
        x, y = self.read(a, t, scope), self.read(b, t, scope)
        expr = f"::vf::ptx::{fn}<{_TYPES[t]}>({x}, {y})"
        if "sat" in mods:
            if t == "s32" and fn in ("add", "sub"):
                expr = f"::vf::ptx::{fn}_sat<int32_t>({x}, {y})"
            elif t in ("f32", "f64"):
                expr = f"::vf::ptx::sat01<{_TYPES[t]}>({expr})"
            else:
                raise self.fail(".sat is supported for .s32 add/sub and floating point only")
        return self.write(d, t, expr, scope)

    def _carry(self, base, mods, types, ops, scope, sub: bool, carry_in: bool):
        t = self.one_type(types, "u32 s32 u64 s64")
        self.need(ops, 3)
        self.uses_cc = True
        d, a, b = ops
        carry_out = "cc" in mods
        fn = "subc" if sub else "addc"
        expr = (f"::vf::ptx::{fn}<{_TYPES[t]}>({self.read(a, t, scope)}, {self.read(b, t, scope)}, vf_cc, "
                f"{'true' if carry_in else 'false'}, {'true' if carry_out else 'false'})")
        return self.write(d, t, expr, scope)

    def op_add(self, base, mods, types, ops, scope):
        if "cc" in mods:
            return self._carry(base, mods, types, ops, scope, False, False)
        return self._binary(mods, types, ops, scope, "add")

    def op_addc(self, base, mods, types, ops, scope):
        return self._carry(base, mods, types, ops, scope, False, True)

    def op_sub(self, base, mods, types, ops, scope):
        if "cc" in mods:
            return self._carry(base, mods, types, ops, scope, True, False)
        return self._binary(mods, types, ops, scope, "sub")

    def op_subc(self, base, mods, types, ops, scope):
        return self._carry(base, mods, types, ops, scope, True, True)

    def op_mul(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        self.need(ops, 3)
        d, a, b = ops
        if t in ("f32", "f64"):
            return self._binary(mods, types, ops, scope, "mul")
        x, y = self.read(a, t, scope), self.read(b, t, scope)
        if "hi" in mods:
            return self.write(d, t, f"::vf::ptx::mulhi<{_TYPES[t]}>({x}, {y})", scope)
        if "wide" in mods:
            wt = _wide(t)
            if wt is None:
                raise self.fail(f"mul.wide.{t} is not a PTX instruction")
            return self.write(d, wt, f"::vf::ptx::mulwide<{_TYPES[t]}>({x}, {y})", scope)
        return self.write(d, t, f"::vf::ptx::mul<{_TYPES[t]}>({x}, {y})", scope)

    def op_mad(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        self.need(ops, 4)
        d, a, b, c = ops
        if "cc" in mods or base == "madc":
            raise self.fail("mad.cc / madc carry chains are not supported")
        if t in ("f32", "f64"):
            expr = f"std::fma({self.read(a, t, scope)}, {self.read(b, t, scope)}, {self.read(c, t, scope)})"
            if "sat" in mods:
                expr = f"::vf::ptx::sat01<{_TYPES[t]}>({expr})"
            return self.write(d, t, expr, scope)
        x, y = self.read(a, t, scope), self.read(b, t, scope)
        if "hi" in mods:
            return self.write(d, t, f"::vf::ptx::add<{_TYPES[t]}>(::vf::ptx::mulhi<{_TYPES[t]}>({x}, {y}), "
                                    f"{self.read(c, t, scope)})", scope)
        if "wide" in mods:
            wt = _wide(t)
            if wt is None:
                raise self.fail(f"mad.wide.{t} is not a PTX instruction")
            return self.write(d, wt, f"::vf::ptx::add<{_TYPES[wt]}>(::vf::ptx::mulwide<{_TYPES[t]}>({x}, {y}), "
                                     f"{self.read(c, wt, scope)})", scope)
        return self.write(d, t, f"::vf::ptx::add<{_TYPES[t]}>(::vf::ptx::mul<{_TYPES[t]}>({x}, {y}), "
                                f"{self.read(c, t, scope)})", scope)

    def op_fma(self, base, mods, types, ops, scope):
        t = self.one_type(types, "f32 f64")
        return self.op_mad(base, mods, [t], ops, scope)

    def op_div(self, base, mods, types, ops, scope):
        return self._binary(mods, types, ops, scope, "div")

    def op_rem(self, base, mods, types, ops, scope):
        return self._binary(mods, types, ops, scope, "rem", allow_float=False)

    def op_min(self, base, mods, types, ops, scope):
        if any(m in mods for m in ("NaN", "xorsign", "abs", "relu")):
            raise self.fail("min/max with .NaN/.xorsign.abs/.relu is not supported")
        return self._binary(mods, types, ops, scope, "min_")

    def op_max(self, base, mods, types, ops, scope):
        return self.op_min(base, mods, types, ops, scope).replace("min_<", "max_<")

    def _unary(self, types, ops, scope, fn: str, allowed: str | None = None):
        t = self.one_type(types, allowed)
        self.need(ops, 2)
        return self.write(ops[0], t, f"{fn}({self.read(ops[1], t, scope)})", scope), t

    def op_abs(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        return self._unary(types, ops, scope, f"::vf::ptx::abs_<{_TYPES[t]}>")[0]

    def op_neg(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        return self._unary(types, ops, scope, f"::vf::ptx::neg<{_TYPES[t]}>")[0]

    def _logic(self, types, ops, scope, sym: str):
        t = self.one_type(types, "b16 b32 b64 pred")
        self.need(ops, 3)
        d, a, b = ops
        if t == "pred":
            return self.write(d, t, f"({self.read(a, t, scope)} {'&&' if sym == '&' else '||' if sym == '|' else '!='} "
                                    f"{self.read(b, t, scope)})", scope)
        return self.write(d, t, f"(({_TYPES[t]})({self.read(a, t, scope)} {sym} {self.read(b, t, scope)}))", scope)

    def op_and(self, base, mods, types, ops, scope):
        return self._logic(types, ops, scope, "&")

    def op_or(self, base, mods, types, ops, scope):
        return self._logic(types, ops, scope, "|")

    def op_xor(self, base, mods, types, ops, scope):
        return self._logic(types, ops, scope, "^")

    def op_not(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b16 b32 b64 pred")
        self.need(ops, 2)
        if t == "pred":
            return self.write(ops[0], t, f"(!{self.read(ops[1], t, scope)})", scope)
        return self.write(ops[0], t, f"(({_TYPES[t]})~{self.read(ops[1], t, scope)})", scope)

    def op_cnot(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b16 b32 b64")
        self.need(ops, 2)
        return self.write(ops[0], t, f"(({_TYPES[t]})({self.read(ops[1], t, scope)} == 0 ? 1 : 0))", scope)

    def op_shl(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b16 b32 b64")
        self.need(ops, 3)
        return self.write(ops[0], t, f"::vf::ptx::shl<{_TYPES[t]}>({self.read(ops[1], t, scope)}, "
                                     f"{self.read(ops[2], 'u32', scope)})", scope)

    def op_shr(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b16 b32 b64 u16 u32 u64 s16 s32 s64")
        self.need(ops, 3)
        return self.write(ops[0], t, f"::vf::ptx::shr<{_TYPES[t]}>({self.read(ops[1], t, scope)}, "
                                     f"{self.read(ops[2], 'u32', scope)})", scope)

    def op_brev(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b32 b64")
        return self._unary(types, ops, scope, f"::vf::ptx::brev<{_TYPES[t]}>")[0]

    def _video(self, base, mods, types, ops, scope):
        """SIMD video instructions: ``vop2``/``vop4.dtype.atype.btype{.sat|.add} d, a, b, c``."""
        if len(types) != 3 or any(t not in ("u32", "s32") for t in types):
            raise self.fail("expected .dtype.atype.btype, each .u32 or .s32")
        extra = [m for m in mods if m not in _TYPES]
        if any(m not in ("sat", "add") for m in extra) or len(extra) > 1:
            raise self.fail(f"modifiers {extra} are outside the supported subset (.sat or .add)")
        self.need(ops, 4)
        d, a, b, c = ops
        if any("." in o.split("[")[0].lstrip("%") for o in (d, a, b)):
            raise self.fail("lane masks and byte/half-word selectors are outside the supported subset")
        n = base[-1]
        code = ("add sub avrg absdiff min max").split().index(base[1:-1])
        dt, at, bt = types
        flags = ", ".join("true" if t == "s32" else "false" for t in (at, bt, dt))
        expr = (f"::vf::ptx::simd_video<{n}, {flags}>({self.read(a, 'u32', scope)}, {self.read(b, 'u32', scope)}, "
                f"{self.read(c, 'u32', scope)}, {code}, {'true' if 'sat' in extra else 'false'}, "
                f"{'true' if 'add' in extra else 'false'})")
        return self.write(d, "u32", expr, scope)

    op_vadd2 = op_vsub2 = op_vavrg2 = op_vabsdiff2 = op_vmin2 = op_vmax2 = _video
    op_vadd4 = op_vsub4 = op_vavrg4 = op_vabsdiff4 = op_vmin4 = op_vmax4 = _video

    def op_popc(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b32 b64")
        self.need(ops, 2)
        return self.write(ops[0], "u32", f"::vf::ptx::popc<{_TYPES[t]}>({self.read(ops[1], t, scope)})", scope)

    def op_clz(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b32 b64")
        self.need(ops, 2)
        return self.write(ops[0], "u32", f"::vf::ptx::clz<{_TYPES[t]}>({self.read(ops[1], t, scope)})", scope)

    def op_bfind(self, base, mods, types, ops, scope):
        t = self.one_type(types, "u32 u64 s32 s64")
        self.need(ops, 2)
        return self.write(ops[0], "u32", f"::vf::ptx::bfind<{_TYPES[t]}>({self.read(ops[1], t, scope)}, "
                                         f"{'true' if 'shiftamt' in mods else 'false'})", scope)

    def op_bfe(self, base, mods, types, ops, scope):
        t = self.one_type(types, "u32 u64 s32 s64")
        self.need(ops, 4)
        d, a, b, c = ops
        return self.write(d, t, f"::vf::ptx::bfe<{_TYPES[t]}>({self.read(a, t, scope)}, {self.read(b, 'u32', scope)}, "
                                f"{self.read(c, 'u32', scope)})", scope)

    def op_bfi(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b32 b64")
        self.need(ops, 5)
        f, a, b, c, d = ops
        return self.write(f, t, f"::vf::ptx::bfi<{_TYPES[t]}>({self.read(a, t, scope)}, {self.read(b, t, scope)}, "
                                f"{self.read(c, 'u32', scope)}, {self.read(d, 'u32', scope)})", scope)

    def op_prmt(self, base, mods, types, ops, scope):
        self.one_type(types, "b32")
        self.need(ops, 4)
        modes = ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"]
        mode = next((modes.index(m) + 1 for m in mods if m in modes), 0)
        d, a, b, c = ops
        return self.write(d, "b32", f"::vf::ptx::prmt({self.read(a, 'b32', scope)}, {self.read(b, 'b32', scope)}, "
                                    f"{self.read(c, 'b32', scope)}, {mode})", scope)

    def op_lop3(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b32 b64")
        self.need(ops, 5)
        d, a, b, c, lut = ops
        return self.write(d, t, f"::vf::ptx::lop3<{_TYPES[t]}>({self.read(a, t, scope)}, {self.read(b, t, scope)}, "
                                f"{self.read(c, t, scope)}, {self.read(lut, 'u32', scope)})", scope)

    def op_selp(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        self.need(ops, 4)
        d, a, b, c = ops
        return self.write(d, t, f"({self.read(c, 'pred', scope)} ? {self.read(a, t, scope)} : "
                                f"{self.read(b, t, scope)})", scope)


    def op_setp(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        cmp = next((m for m in mods if m in _CMP), None)
        if cmp is None:
            raise self.fail("setp needs a comparison")
        boolop = next((m for m in mods if m in ("and", "or", "xor")), None)
        self.need(ops, 4 if boolop else 3)
        dest = ops[0]
        p, q = _pair(dest)
        c_code = f"::vf::ptx::cmp<{_TYPES[t]}>({self.read(ops[1], t, scope)}, {self.read(ops[2], t, scope)}, " \
                 f"{_CMP[cmp]})"
        tmp = self.fresh("c")
        code = [f"bool {tmp} = {c_code};"]
        if boolop:
            c = self.read(ops[3], "pred", scope)
            sym = {"and": "&&", "or": "||", "xor": "!="}[boolop]
            code.append(self.write(p, "pred", f"({tmp} {sym} {c})", scope))
            if q:
                code.append(self.write(q, "pred", f"(!{tmp} {sym} {c})", scope))
        else:
            code.append(self.write(p, "pred", tmp, scope))
            if q:
                code.append(self.write(q, "pred", f"!{tmp}", scope))
        return "{ " + " ".join(code) + " }"


    def op_testp(self, base, mods, types, ops, scope):
        t = self.one_type(types, "f32 f64")
        what = next((m for m in mods if m in _TESTP), None)
        if what is None:
            raise self.fail("testp needs a test")
        self.need(ops, 2)
        return self.write(ops[0], "pred", f"::vf::ptx::testp<{_TYPES[t]}>({self.read(ops[1], t, scope)}, "
                                          f"{_TESTP[what]})", scope)

    def _float_fn(self, types, ops, scope, fmt: str):
        t = self.one_type(types, "f32 f64")
        self.need(ops, 2)
        return self.write(ops[0], t, fmt.format(x=self.read(ops[1], t, scope), T=_TYPES[t]), scope)

    def op_rcp(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})1 / {x})")

    def op_sqrt(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})std::sqrt({x}))")

    def op_rsqrt(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})1 / ({T})std::sqrt({x}))")

    def op_ex2(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})std::exp2({x}))")

    def op_lg2(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})std::log2({x}))")

    def op_sin(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})std::sin({x}))")

    def op_cos(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})std::cos({x}))")

    def op_tanh(self, base, mods, types, ops, scope):
        return self._float_fn(types, ops, scope, "(({T})std::tanh({x}))")

    def op_copysign(self, base, mods, types, ops, scope):
        t = self.one_type(types, "f32 f64")
        self.need(ops, 3)
        return self.write(ops[0], t, f"(({_TYPES[t]})std::copysign({self.read(ops[2], t, scope)}, "
                                     f"{self.read(ops[1], t, scope)}))", scope)


    def op_cvt(self, base, mods, types, ops, scope):
        if len(types) != 2:
            raise self.fail("cvt needs a destination and a source type")
        dt, st = types
        self.need(ops, 2)
        if "pred" in types or dt in ("f16x2", "bf16x2"):
            raise self.fail("unsupported cvt types")
        src = self.read(ops[1], st, scope)
        sat = "sat" in mods
        rint = next((_ROUND_INT[m] for m in mods if m in _ROUND_INT), None)
        # the source as a C++ number
        if st == "f16":
            val = f"::vf::ptx::half_to_float({src})"
        elif st == "bf16":
            val = f"::vf::ptx::bf16_to_float({src})"
        else:
            val = src
        src_float = st in ("f16", "bf16", "f32", "f64")
        if dt in ("f16", "bf16", "f32", "f64"):
            expr = f"(double)({val})"
            if src_float and rint is not None:
                expr = f"::vf::ptx::round_int({expr}, {rint})"
            if sat:
                expr = f"::vf::ptx::sat01<double>({expr})"
            if dt == "f16":
                expr = f"::vf::ptx::float_to_half((float)({expr}))"
            elif dt == "bf16":
                expr = f"::vf::ptx::float_to_bf16((float)({expr}))"
            else:
                expr = f"(({_TYPES[dt]})({expr}))"
            return self.write(ops[0], dt, expr, scope)
        if src_float:
            if rint is None:
                raise self.fail("a float-to-integer cvt needs .rni/.rzi/.rmi/.rpi")
            return self.write(ops[0], dt, f"::vf::ptx::f2i<{_TYPES[dt]}>((double)({val}), {rint})", scope)
        if sat:
            return self.write(ops[0], dt, f"::vf::ptx::i2i_sat<{_TYPES[dt]}, {_TYPES[st]}>({val})", scope)
        return self.write(ops[0], dt, f"(({_TYPES[dt]})({val}))", scope)

    def op_cvta(self, base, mods, types, ops, scope):
        t = self.one_type(types, "u32 u64")
        self.need(ops, 2)
        if t != "u64":
            raise self.fail("32-bit state-space window addresses (cvta ... .u32) are not supported by the CPU "
                            "runtime; use 64-bit generic addresses")
        return self.write(ops[0], "u64", self.read(ops[1], "u64", scope), scope)  # one address space

    def _mem_mods(self, mods):
        space = next((m for m in mods if m in _SPACES), "")
        if space == "param":
            raise self.fail(".param state space is not supported")
        if any(m in ("cluster", "async", "bulk", "tensor", "mmio") or m.startswith("shared::cluster") for m in mods):
            raise self.fail("cluster / async / bulk memory operations are not supported")
        vec = next((int(m[1:]) for m in mods if re.fullmatch(r"v\d", m)), 1)
        return space, vec

    def op_ld(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        if t == "pred":
            raise self.fail("ld of a predicate")
        self.need(ops, 2)
        space, vec = self._mem_mods(mods)
        addr = self.address(ops[1], scope, space)
        fn = "load_acquire" if "acquire" in mods or "relaxed" in mods else "load_volatile" if "volatile" in mods \
            else "load"
        dests = _vector(ops[0], vec, self)
        size = _bits(t) // 8
        tmp = self.fresh("a")
        code = [f"uint64_t {tmp} = {addr};"]
        for k, dreg in enumerate(dests):
            if dreg == "_":
                continue
            code.append(self.write(dreg, t, f"::vf::ptx::{fn}<{_TYPES[t]}>({tmp} + {k * size})", scope))
        return "{ " + " ".join(code) + " }"

    def op_ldu(self, base, mods, types, ops, scope):
        return self.op_ld(base, mods, types, ops, scope)

    def op_st(self, base, mods, types, ops, scope):
        t = self.one_type(types)
        self.need(ops, 2)
        space, vec = self._mem_mods(mods)
        addr = self.address(ops[0], scope, space)
        fn = "store_release" if "release" in mods or "relaxed" in mods else "store_volatile" if "volatile" in mods \
            else "store"
        srcs = _vector(ops[1], vec, self)
        size = _bits(t) // 8
        tmp = self.fresh("a")
        code = [f"uint64_t {tmp} = {addr};"]
        for k, s in enumerate(srcs):
            code.append(f"::vf::ptx::{fn}<{_TYPES[t]}>({tmp} + {k * size}, {self.read(s, t, scope)});")
        return "{ " + " ".join(code) + " }"


    def op_atom(self, base, mods, types, ops, scope):
        t = self.one_type(types, "u32 s32 u64 s64 b32 b64 f32 f64")
        op = next((m for m in mods if m in _ATOM), None)
        if op is None:
            raise self.fail("atom/red needs an operation")
        space, vec = self._mem_mods(mods)
        if vec != 1 or "noftz" in mods:
            raise self.fail("vector or .noftz atomics are not supported")
        if op in ("inc", "dec") and t != "u32":
            raise self.fail(f"atom.{op} takes .u32")
        if op in ("and", "or", "xor") and t not in ("b32", "b64"):
            raise self.fail(f"atom.{op} takes .b32/.b64")
        if op in ("add", "min", "max") and t.startswith("b"):
            raise self.fail(f"atom.{op} takes .u/.s/.f types")
        red = base == "red"
        if op == "cas":
            if red:
                raise self.fail("red.cas is not an instruction")
            self.need(ops, 4)
            d, a, b, c = ops
            expr = (f"::vf::ptx::atom_cas<{_TYPES[t]}>({self.address(a, scope, space)}, {self.read(b, t, scope)}, "
                    f"{self.read(c, t, scope)})")
            return self.write(d, t, expr, scope)
        if red:
            self.need(ops, 2)
            a, b = ops
            return (f"(void)::vf::ptx::atom<{_TYPES[t]}>({self.address(a, scope, space)}, {_ATOM[op]}, "
                    f"{self.read(b, t, scope)});")
        self.need(ops, 3)
        d, a, b = ops
        expr = f"::vf::ptx::atom<{_TYPES[t]}>({self.address(a, scope, space)}, {_ATOM[op]}, {self.read(b, t, scope)})"
        return self.write(d, t, expr, scope)

    def op_red(self, base, mods, types, ops, scope):
        return self.op_atom(base, mods, types, ops, scope)

    def op_membar(self, base, mods, types, ops, scope):
        if mods and mods[0] not in ("cta", "gl", "sys"):
            raise self.fail("membar.cta / .gl / .sys only")
        self.need(ops, 0)
        return "::vf::ptx::fence();"

    def op_fence(self, base, mods, types, ops, scope):
        if any(m.startswith("proxy") or m in ("mbarrier_init", "cluster", "op_restrict") for m in mods):
            raise self.fail("proxy / cluster fences are not supported")
        self.need(ops, 0)
        return "::vf::ptx::fence();"

    def op_activemask(self, base, mods, types, ops, scope):
        self.one_type(types, "b32")
        self.need(ops, 1)
        return self.write(ops[0], "b32", "__activemask()", scope)


    def op_shfl(self, base, mods, types, ops, scope):
        if "sync" not in mods:
            raise self.fail("shfl without .sync (pre-Volta) is not supported; use shfl.sync")
        mode = next((m for m in mods if m in _SHFL), None)
        self.one_type(types, "b32")
        self.need(ops, 5)
        if mode is None:
            raise self.fail("shfl needs .up/.down/.bfly/.idx")
        dest, a, b, c, mask = ops
        d, p = _pair(dest)
        tmp, ptmp = self.fresh("s"), self.fresh("sp")
        code = [f"bool {ptmp} = false;",
                f"uint32_t {tmp} = ::vf::ptx::shfl({_SHFL[mode]}, {self.read(a, 'b32', scope)}, "
                f"{self.read(b, 'b32', scope)}, {self.read(c, 'b32', scope)}, {self.read(mask, 'b32', scope)}, "
                f"&{ptmp});",
                self.write(d, "b32", tmp, scope)]
        if p:
            code.append(self.write(p, "pred", ptmp, scope))
        return "{ " + " ".join(code) + " }"

    def op_vote(self, base, mods, types, ops, scope):
        if "sync" not in mods:
            raise self.fail("vote without .sync (pre-Volta) is not supported; use vote.sync")
        self.need(ops, 3)
        d, a, mask = ops
        pred = self.read(a, "pred", scope)
        m = self.read(mask, "b32", scope)
        if "ballot" in mods:
            self.one_type(types, "b32")
            return self.write(d, "b32", f"__ballot_sync({m}, {pred})", scope)
        self.one_type(types, "pred")
        if "all" in mods:
            return self.write(d, "pred", f"(__all_sync({m}, {pred}) != 0)", scope)
        if "any" in mods:
            return self.write(d, "pred", f"(__any_sync({m}, {pred}) != 0)", scope)
        if "uni" in mods:
            return self.write(d, "pred", f"(__uni_sync({m}, {pred}) != 0)", scope)
        raise self.fail("vote needs .all/.any/.uni/.ballot")

    def op_match(self, base, mods, types, ops, scope):
        t = self.one_type(types, "b32 b64")
        if "sync" not in mods:
            raise self.fail("match needs .sync")
        self.need(ops, 3)
        dest, a, mask = ops
        d, p = _pair(dest)
        val, m = self.read(a, t, scope), self.read(mask, "b32", scope)
        if "any" in mods:
            if p:
                raise self.fail("match.any has no predicate destination")
            return self.write(d, "b32", f"__match_any_sync({m}, {val})", scope)
        if "all" in mods:
            tmp = self.fresh("mp")
            code = [f"int {tmp} = 0;", self.write(d, "b32", f"__match_all_sync({m}, {val}, &{tmp})", scope)]
            if p:
                code.append(self.write(p, "pred", f"({tmp} != 0)", scope))
            return "{ " + " ".join(code) + " }"
        raise self.fail("match needs .any or .all")

    def op_redux(self, base, mods, types, ops, scope):
        t = self.one_type(types, "u32 s32 b32")
        if "sync" not in mods:
            raise self.fail("redux needs .sync")
        op = next((m for m in mods if m in ("add", "min", "max", "and", "or", "xor")), None)
        if op is None:
            raise self.fail("redux needs an operation")
        self.need(ops, 3)
        d, a, mask = ops
        cast = "int" if t == "s32" else "unsigned"
        return self.write(d, t, f"(({_TYPES[t]})__reduce_{op}_sync({self.read(mask, 'b32', scope)}, "
                                f"({cast}){self.read(a, t, scope)}))", scope)

    def op_bar(self, base, mods, types, ops, scope):
        if mods and mods[0] == "warp":
            if "sync" not in mods:
                raise self.fail("bar.warp.sync only")
            self.need(ops, 1)
            return f"__syncwarp({self.read(ops[0], 'b32', scope)});"
        if any(m not in ("sync", "aligned") for m in mods) or not mods:
            raise self.fail("only bar.sync / barrier.sync (a whole-block barrier) is supported")
        self.need(ops, (1,))
        if ops[0].strip() not in ("0", "$0") and not self.is_imm(ops[0]):
            raise self.fail("named barriers other than barrier 0 are not supported")
        if self.is_imm(ops[0]) and int(ops[0].strip(), 0) != 0:
            raise self.fail("named barriers other than barrier 0 are not supported")
        return "__syncthreads();"

    def op_barrier(self, base, mods, types, ops, scope):
        return self.op_bar(base, mods, types, ops, scope)

    def op_nanosleep(self, base, mods, types, ops, scope):
        self.need(ops, 1)
        return f"__nanosleep({self.read(ops[0], 'u32', scope)});"

    def op_trap(self, base, mods, types, ops, scope):
        self.need(ops, 0)
        return "__trap();"

    def op_prefetch(self, base, mods, types, ops, scope):
        self.need(ops, 1)
        self.address(ops[0], scope, "")  # validated, nothing to do on a CPU
        return ";"

    def op_prefetchu(self, base, mods, types, ops, scope):
        return self.op_prefetch(base, mods, types, ops, scope)


def _pair(dest: str) -> tuple[str, str | None]:
    """``d|p`` (a value and a predicate destination) or ``d``."""
    if "|" not in dest:
        return dest, None
    d, p = dest.split("|", 1)
    return d.strip(), p.strip()


def _bits(t: str) -> int:
    return {"pred": 1, "f16": 16, "bf16": 16}.get(t) or int(re.sub(r"\D", "", t))


def _wide(t: str) -> str | None:
    return {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}.get(t)


def _vector(tok: str, n: int, tr: _Translator) -> list[str]:
    tok = tok.strip()
    if n == 1:
        if tok.startswith("{"):
            raise tr.fail("a vector operand needs .v2/.v4")
        return [tok]
    if not (tok.startswith("{") and tok.endswith("}")):
        raise tr.fail(f"expected a {{...}} vector of {n} registers")
    parts = [p.strip() for p in tok[1:-1].split(",")]
    if len(parts) != n:
        raise tr.fail(f"expected {n} registers in the vector")
    return parts


def translate(stmt: AsmStatement) -> str:
    """C++ for a parsed asm statement (one line; ends without ';'), or PtxError."""
    return _Translator(stmt).run()


def translate_asm(text: str, open_paren: int, close_paren: int) -> str:
    """C++ for the ``asm(...)`` whose parentheses are at ``open_paren`` / ``close_paren`` of ``text``."""
    return translate(parse_asm(text[open_paren + 1 : close_paren]))
