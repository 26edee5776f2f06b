"""Spelling of MLIR attribute literals and identifiers, in pure Python.

These helpers know nothing about PyTorch: they turn Python scalars into the
textual MLIR forms that the `trace` dialect uses for a call's non-tensor
arguments (see docs/examples.md and docs/architecture.md, "The contracts").
"""

from __future__ import annotations

import math
import re
import struct

__all__ = [
    "mlir_string",
    "mlir_float",
    "mlir_int",
    "ssa_name",
    "dict_key",
]

_BARE_SSA = re.compile(r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*")
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
# Words that the MLIR lexer treats as keywords: a dictionary key that is one
# of them must be quoted.
_KEYWORDS = frozenset(
    """affine_map affine_set array attributes bf16 ceildiv complex dense
    dense_resource distinct f16 f32 f64 f80 f128 false floordiv for func index
    loc max min mod none offset size sparse step strided symbol tensor tf32 to
    true tuple type unit vector""".split()
)

I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1


def mlir_string(text: str) -> str:
    """A double-quoted MLIR string literal holding `text` (UTF-8)."""
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append("\\%02X" % byte)
    out.append('"')
    return "".join(out)


def mlir_float(value: float) -> str:
    """The body of an f64 attribute that MLIR parses back to exactly `value`.

    Finite values use Python's shortest round-trip decimal (`repr`), with a
    `.0` added where MLIR's lexer needs a decimal point (`1e-05` becomes
    `1.0e-05`). Infinities and NaNs use MLIR's hexadecimal bit-pattern form,
    which is only valid with an explicit type (the caller appends `: f64`).
    """
    value = float(value)
    if math.isfinite(value):
        text = repr(value)
        mantissa, sep, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + sep + exponent
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return "0x%016X" % bits


def mlir_int(value: int, type_: str = "i64") -> str:
    """`N : i64`; raises OverflowError if it does not fit in a signed i64."""
    value = int(value)
    if not I64_MIN <= value <= I64_MAX:
        raise OverflowError(f"integer {value} does not fit in i64")
    return f"{value} : {type_}"


def ssa_name(hint: str, used: set[str]) -> str:
    """A fresh SSA value name (without `%`) derived from `hint`."""
    name = re.sub(r"[^A-Za-z0-9_$.\-]", "_", hint) or "v"
    if not _BARE_SSA.fullmatch(name) or name[0].isdigit():
        name = "v_" + name
    base, n = name, 0
    while name in used:
        n += 1
        name = f"{base}_{n}"
    used.add(name)
    return name


def dict_key(key: str) -> str:
    """A dictionary-attribute key: bare when MLIR allows it, quoted otherwise."""
    if _BARE_KEY.fullmatch(key) and key not in _KEYWORDS:
        return key
    return mlir_string(key)
