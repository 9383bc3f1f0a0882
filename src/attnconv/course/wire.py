"""Answers as data: how a student's values cross from an untrusted process to the grader.

:func:`encode` runs where student code ran (the notebook's kernel, or the grader's sandbox). It turns values into
plain JSON: numbers, strings, lists, dicts with string keys, tensors and arrays (dtype, shape and flat values),
SymPy expressions (as ``srepr`` text), exceptions (their type name and message) and dataclasses (their fields).
Anything else becomes ``{"__object__": type name}``, which no check accepts.

:func:`decode` runs in the grader's checker process (``attnconv.course.checker``, with its own time and memory
limits). It rebuilds the values from that JSON and executes nothing: a SymPy ``srepr`` is rebuilt node by node
against an allow-list by ``attnconv.course.symrepr.parse_srepr``, with no ``eval`` and no string ever parsed
by SymPy. Pickle is never used, because unpickling runs code.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from typing import Any

from .symrepr import parse_srepr

__all__ = ["Opaque", "RaisedError", "decode", "dumps", "encode", "loads"]

MAX_ITEMS = 5_000_000  # array elements per value: a submission cannot flood the grader
MAX_DEPTH = 20


@dataclasses.dataclass(frozen=True)
class RaisedError:
    """An exception the student caught and handed over as an answer (its type name and message)."""

    type: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclasses.dataclass(frozen=True)
class Opaque:
    """A value that is not data (a module, a function): only its type name crosses."""

    type: str


def _float(v: float) -> Any:
    if math.isfinite(v):
        return v
    return {"__float__": repr(v)}  # nan, inf, -inf: JSON has no literal for them


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data (see the module docstring)."""
    if depth > MAX_DEPTH:
        raise ValueError("value nests too deeply to be an answer")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral) and type(value).__module__ == "builtins":
        return int(value)
    if isinstance(value, float):
        return _float(value)
    cls = type(value)
    module = cls.__module__.split(".")[0]
    if module == "torch":
        import torch

        if isinstance(value, torch.Tensor):
            t = value.detach().cpu()
            if t.is_complex():
                raise ValueError("complex tensors are not answers")
            return {"__array__": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                    "data": [_float(v) if isinstance(v, float) else v for v in t.flatten().tolist()], "kind": "torch"}
        if isinstance(value, torch.dtype):
            return {"__dtype__": str(value)}
    if module == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf":
                return {"__object__": f"numpy array of {value.dtype}"}
            flat = value.ravel().tolist()
            return {"__array__": str(value.dtype), "shape": list(value.shape),
                    "data": [_float(v) if isinstance(v, float) else v for v in flat], "kind": "numpy"}
        if isinstance(value, np.generic):
            return {"__array__": str(value.dtype), "shape": [], "data": [encode(value.item(), depth + 1)],
                    "kind": "numpy"}
    if module == "sympy":
        import sympy as sp

        if isinstance(value, sp.Basic):
            return {"__sympy__": sp.srepr(value)}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _float(float(value))
    if isinstance(value, BaseException):
        return {"__exception__": type(value).__name__, "message": str(value)[:2000]}
    if isinstance(value, (list, tuple)):
        return {"__list__" if isinstance(value, list) else "__tuple__": [encode(v, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"__set__": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"__dict__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"__fields__": type(value).__name__,
                "items": {f.name: encode(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}}
    return {"__object__": f"{cls.__module__}.{cls.__qualname__}"}


def dumps(values: dict[str, Any]) -> str:
    """Encode a name → value mapping as one JSON line; a value that cannot be encoded becomes an opaque marker."""
    out = {}
    for name, value in values.items():
        try:
            out[name] = encode(value)
        except Exception as err:  # noqa: BLE001  (a student's value may fail in any way)
            out[name] = {"__object__": f"{type(value).__name__} ({err})"}
    return json.dumps(out, allow_nan=False)


# ----- grader side -----------------------------------------------------------------------------------------------

def decode(obj: Any, depth: int = 0) -> Any:
    """Rebuild a value from :func:`encode`'s JSON (grader side; executes nothing the student wrote)."""
    if depth > MAX_DEPTH + 2:
        raise ValueError("answer nests too deeply")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):  # only inside an already-tagged value
        return [decode(v, depth + 1) for v in obj]
    if not isinstance(obj, dict):
        raise ValueError(f"unexpected JSON value of type {type(obj).__name__}")
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__list__" in obj:
        return [decode(v, depth + 1) for v in obj["__list__"]]
    if "__tuple__" in obj:
        return tuple(decode(v, depth + 1) for v in obj["__tuple__"])
    if "__set__" in obj:
        items = [decode(v, depth + 1) for v in obj["__set__"]]
        try:
            return set(items)
        except TypeError:
            return items
    if "__dict__" in obj:
        out = {}
        for k, v in obj["__dict__"]:
            key = decode(k, depth + 1)
            out[key if isinstance(key, (str, int, float, bool, tuple)) else str(key)] = decode(v, depth + 1)
        return out
    if "__array__" in obj:
        import numpy as np

        shape = [int(s) for s in obj["shape"]]
        size = math.prod(shape)
        if size > MAX_ITEMS or len(obj["data"]) != size:
            raise ValueError(f"array of shape {shape} does not hold {len(obj['data'])} values")
        dtype = np.dtype(str(obj["__array__"]).replace("bfloat16", "float32"))
        data = [float(v["__float__"]) if isinstance(v, dict) else v for v in obj["data"]]
        array = np.array(data, dtype=dtype).reshape(shape)
        if obj.get("kind") == "torch":
            import torch

            return torch.from_numpy(array.copy())
        return array if shape else array.reshape(()).astype(dtype)[()]
    if "__sympy__" in obj:
        return parse_srepr(obj["__sympy__"])
    if "__exception__" in obj:
        return RaisedError(str(obj["__exception__"]), str(obj.get("message", "")))
    if "__fields__" in obj:
        return {str(k): decode(v, depth + 1) for k, v in obj["items"].items()}
    if "__dtype__" in obj:
        return str(obj["__dtype__"])
    if "__object__" in obj:
        return Opaque(str(obj["__object__"]))
    raise ValueError(f"unknown answer tag {sorted(obj)[:3]}")


def loads(text: str) -> dict[str, Any]:
    """Decode a line written by :func:`dumps` into a name → value mapping."""
    raw = json.loads(text)
    if not isinstance(raw, dict):
        raise ValueError("answers must be a JSON object")
    return {str(name): decode(value) for name, value in raw.items()}
