"""Read a transformed training step back from the pipeline's MLIR output.

The pipeline prints trace-dialect MLIR with the copies in place. The bridge
does not need the whole IR back, only what it says about order and copies:
for each function, the top-level ops in order, each either a traced FX node
(by its `node` name; in backward, possibly a forward view the pipeline
re-applied to a loaded storage, marked `offload.rebuilt_view`) or a copy op
(`offload.*`) with its SSA operands and results, plus the function's
arguments (by their `trace.name`) and returned values. This module reads exactly that from the printed (custom) form, which
the project's own printer produces, and rejects anything else with a
`PlanReadError` naming the line, so the bridge can fall back instead of
rebuilding a wrong graph.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["IrOp", "IrFunction", "PlanReadError", "read_step"]


class PlanReadError(RuntimeError):
    """The transformed IR has a construct the bridge cannot map back to FX."""


@dataclasses.dataclass
class IrOp:
    """One top-level op of a function, in order."""

    kind: str  # "trace", "offload_start", "load_start", "wait",
    #            "offload_to_cpu", "load_to_gpu", "return"
    results: list[str]  # SSA names, `%5` or `%5#1` for multi-result ops
    operands: list[str]
    node: str | None = None  # FX node name of a trace op
    result_names: list[str] | None = None  # FX getitem names, multi-result ops
    line: int = 0
    # A forward view the pipeline re-applied in backward to a loaded storage
    # (`offload.rebuilt_view`): `node` names the forward FX node.
    rebuilt: bool = False
    # A load start the backward graph before this one starts
    # (`offload.prefetch`), and an op before which this graph starts the
    # next graph's (`offload.prefetch_issue`).
    prefetch: bool = False
    prefetch_issue: bool = False
    # An offload's wait the next graph's forward completes (`offload.deferred`).
    deferred: bool = False


@dataclasses.dataclass
class IrFunction:
    name: str
    arg_names: dict[str, str]  # SSA `%arg3` -> FX placeholder name
    host_args: set[str]  # FX placeholder names whose type is #offload.host
    ops: list[IrOp]


_FUNC = re.compile(r"^\s*func\.func @([\w$.-]+)\(")
_ARG = re.compile(r"(%[\w$.-]+)\s*:\s*(.*)$", re.S)
_TRACE_NAME = re.compile(r'trace\.name = "((?:[^"\\]|\\.)*)"')
_RESULTS = re.compile(r"^(%[\w$.-]+)(?::(\d+))?(?:, %[\w$.-]+)* = ")
_SSA = re.compile(r"%[\w$.-]+(?:#\d+)?")
_TRACE = re.compile(r'^trace\.(?:op|view) "([^"]+)"\(([^)]*)\)\s*\{(.*)\}\s*:')
_NODE = re.compile(r'(?:^|[{,\s])node = "((?:[^"\\]|\\.)*)"')
_RESULT_NAMES = re.compile(r"result_names = \[([^\]]*)\]")
_REBUILT = re.compile(r"(?:^|[{,\s])offload\.rebuilt_view(?:$|[,}\s])")
_PREFETCH = re.compile(r"(?:^|[{,\s])offload\.prefetch(?:$|[,}\s])")
_PREFETCH_ISSUE = re.compile(r"(?:^|[{,\s])offload\.prefetch_issue(?:$|[,}\s])")
_DEFERRED = re.compile(r"(?:^|[{,\s])offload\.deferred(?:$|[,}\s])")
_COPY = re.compile(
    r"^offload\.(offload_start|load_start|wait|offload_to_cpu|load_to_gpu) "
    r"(%[\w$.-]+(?:#\d+)?)\s*(\{[^}]*\})?\s*:"
)


def _results(line: str) -> tuple[list[str], str]:
    m = _RESULTS.match(line)
    if not m:
        return [], line
    rest = line[m.end():]
    head = line[: m.end() - 3]
    if m.group(2):  # `%5:2 = ...`
        return [f"{m.group(1)}#{i}" for i in range(int(m.group(2)))], rest
    return [r.strip() for r in head.split(",")], rest


_OPEN, _CLOSE = "<([{", ">)]}"


def _top_level(text: str):
    """(index, char) of each character of `text` outside brackets (`<>`,
    `()`, `[]`, `{}`) and string literals, and of each bracket that closes
    back to that level; the `>` of `->` closes nothing."""
    depth, quoted, escaped = 0, False, False
    for i, c in enumerate(text):
        if quoted:
            quoted = escaped or c != '"'
            escaped = not escaped and c == "\\"
        elif c == '"':
            quoted = True
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE and not (c == ">" and text[i - 1:i] == "-"):
            depth -= 1
            if depth == 0:
                yield i, c
        elif depth == 0:
            yield i, c


def split_top_level(text: str, sep: str | None = ",") -> list[str]:
    """`text` split at each `sep` (None: each whitespace) outside brackets
    and string literals, empty pieces dropped: a type such as
    `tensor<4x8xcomplex<f32>>` or an attribute dictionary stays whole."""
    pieces, start = [], 0
    for i, c in _top_level(text):
        if c == sep or (sep is None and c.isspace()):
            pieces.append(text[start:i].strip())
            start = i + 1
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _argument_list(line: str, open_at: int) -> str:
    """The text between the `(` at `open_at` and its matching `)`."""
    for i, c in _top_level(line[open_at:]):
        if c == ")":
            return line[open_at + 1:open_at + i]
    raise PlanReadError(f"unbalanced argument list: {line[:120]}")


def _function_args(text: str) -> tuple[dict[str, str], set[str]]:
    names: dict[str, str] = {}
    host: set[str] = set()
    for piece in split_top_level(text):
        m = _ARG.match(piece)
        if not m:
            raise PlanReadError(f"cannot read the function argument {piece[:120]!r}")
        # `%arg3: TYPE {attrs} loc(...)`: a type has no space outside brackets.
        ssa, (ty, *attrs) = m.group(1), split_top_level(m.group(2), None)
        tn = _TRACE_NAME.search(" ".join(attrs))
        if not tn:
            raise PlanReadError(f"argument {ssa} has no trace.name")
        names[ssa] = tn.group(1)
        if "#offload.host" in ty:
            host.add(tn.group(1))
    return names, host


def read_step(ir: str) -> dict[str, IrFunction]:
    """The functions of the transformed module, by symbol name."""
    functions: dict[str, IrFunction] = {}
    current: IrFunction | None = None
    for lineno, raw in enumerate(ir.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("//") or line in ("module {", "}"):
            if line == "}" and current is not None:
                functions[current.name] = current
                current = None
            continue
        fm = _FUNC.match(line)
        if fm:
            names, host = _function_args(_argument_list(line, fm.end() - 1))
            current = IrFunction(fm.group(1), names, host, [])
            continue
        if current is None:
            continue
        results, rest = _results(line)
        if rest.startswith("return") or rest.startswith("func.return"):
            body = rest.split(" ", 1)[1] if " " in rest else ""
            operands = _SSA.findall(body.split(" : ")[0]) if body else []
            current.ops.append(IrOp("return", [], operands, line=lineno))
            continue
        tm = _TRACE.match(rest)
        if tm:
            attrs = tm.group(3)
            node = _NODE.search(attrs)
            if not node:
                raise PlanReadError(f"line {lineno}: trace op without a node name")
            rn = _RESULT_NAMES.search(attrs)
            result_names = None
            if rn:
                result_names = [s.strip().strip('"') for s in rn.group(1).split(",")]
            current.ops.append(
                IrOp("trace", results, _SSA.findall(tm.group(2)), node.group(1),
                     result_names, lineno, rebuilt=_REBUILT.search(attrs) is not None,
                     prefetch_issue=_PREFETCH_ISSUE.search(attrs) is not None)
            )
            continue
        cm = _COPY.match(rest)
        if cm:
            attrs = cm.group(3) or ""
            current.ops.append(IrOp(cm.group(1), results, [cm.group(2)], line=lineno,
                                    prefetch=_PREFETCH.search(attrs) is not None,
                                    prefetch_issue=_PREFETCH_ISSUE.search(attrs) is not None,
                                    deferred=_DEFERRED.search(attrs) is not None))
            continue
        raise PlanReadError(f"line {lineno}: cannot map back to FX: {line[:120]}")
    if current is not None:
        raise PlanReadError(f"function @{current.name} is not closed")
    return functions
