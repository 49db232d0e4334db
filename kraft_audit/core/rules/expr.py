"""A small, safe expression language for user rules.

An expression such as ``len(before.isr) - len(after.isr) >= 2`` is parsed with
`ast`, every node is checked against a whitelist, and the tree is turned into
nested closures. Nothing is passed to eval/exec, attribute access is limited
to named fields of `before`, `after` and `event`, and only a few pure
functions can be called.

Names: before, after (partitions; `before` is None for a creation), event,
record (the record's fields, e.g. ``record["leader"]``), min_isr,
elr_enabled, and the rule's parameters by name.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable

from kraft_audit.core.replay.partition import FIELDS
from kraft_audit.errors import ExpressionError  # noqa: F401 (exported here too)

PARTITION_FIELDS = frozenset(FIELDS)
EVENT_FIELDS = frozenset({"offset", "type", "version", "timestamp_ms", "batch_base_offset",
                          "batch_last_offset", "kind", "source"})
ATTRIBUTES = {"before": PARTITION_FIELDS, "after": PARTITION_FIELDS, "event": EVENT_FIELDS}
CONTEXT_NAMES = {"before", "after", "event", "record", "min_isr", "elr_enabled"}
FUNCTIONS: dict[str, Callable] = {
    "len": len, "set": set, "min": min, "max": max, "abs": abs, "sorted": sorted,
    "any": any, "all": all, "sum": sum, "list": list, "tuple": tuple,
}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Div: operator.truediv,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
            ast.Is: operator.is_, ast.IsNot: operator.is_not}

Env = dict[str, Any]


def compile_expression(text: str, parameters: dict[str, Any] | None = None) -> Callable[[Env], Any]:
    """The expression as a function of an environment dict; ExpressionError if not allowed."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression must be a non-empty string")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error: {exc.msg}") from None
    names = CONTEXT_NAMES | set(parameters or ())
    return _Compiler(names).build(tree.body)


class _Compiler:
    def __init__(self, names: set[str]):
        self.names = names

    def build(self, node: ast.AST) -> Callable[[Env], Any]:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise ExpressionError(f"{type(node).__name__} is not allowed in a rule expression")
        return method(node)

    def _Constant(self, node: ast.Constant):
        if not isinstance(node.value, (int, float, str, bool, type(None))):
            raise ExpressionError(f"constant {node.value!r} is not allowed")
        value = node.value
        return lambda env: value

    def _Name(self, node: ast.Name):
        name = node.id
        if name not in self.names:
            raise ExpressionError(f"unknown name {name!r} (known: {', '.join(sorted(self.names))})")
        return lambda env: env[name]

    def _Attribute(self, node: ast.Attribute):
        if not isinstance(node.value, ast.Name) or node.value.id not in ATTRIBUTES:
            raise ExpressionError("attributes are only allowed on before, after and event")
        owner, attr = node.value.id, node.attr
        if attr not in ATTRIBUTES[owner]:
            raise ExpressionError(f"{owner} has no field {attr!r} "
                                  f"(fields: {', '.join(sorted(ATTRIBUTES[owner]))})")
        return lambda env: getattr(env[owner], attr)

    def _Subscript(self, node: ast.Subscript):
        if isinstance(node.slice, ast.Slice):
            raise ExpressionError("slices are not allowed")
        value, index = self.build(node.value), self.build(node.slice)
        return lambda env: value(env)[index(env)]

    def _Call(self, node: ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(f"only these functions may be called: {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            raise ExpressionError("keyword arguments are not allowed")
        fn = FUNCTIONS[node.func.id]
        args = [self.build(a) for a in node.args]
        return lambda env: fn(*(a(env) for a in args))

    def _BinOp(self, node: ast.BinOp):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")
        left, right = self.build(node.left), self.build(node.right)
        return lambda env: op(left(env), right(env))

    def _UnaryOp(self, node: ast.UnaryOp):
        operand = self.build(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        if isinstance(node.op, ast.USub):
            return lambda env: -operand(env)
        raise ExpressionError(f"operator {type(node.op).__name__} is not allowed")

    def _BoolOp(self, node: ast.BoolOp):
        values = [self.build(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda env: all(v(env) for v in values)
        return lambda env: any(v(env) for v in values)

    def _Compare(self, node: ast.Compare):
        ops = []
        for op in node.ops:
            fn = _COMPARE.get(type(op))
            if fn is None:
                raise ExpressionError(f"comparison {type(op).__name__} is not allowed")
            ops.append(fn)
        first = self.build(node.left)
        rest = [self.build(c) for c in node.comparators]

        def compare(env):
            left = first(env)
            for fn, right_fn in zip(ops, rest):
                right = right_fn(env)
                if not fn(left, right):
                    return False
                left = right
            return True

        return compare

    def _IfExp(self, node: ast.IfExp):
        test, body, orelse = self.build(node.test), self.build(node.body), self.build(node.orelse)
        return lambda env: body(env) if test(env) else orelse(env)

    def _Tuple(self, node: ast.Tuple):
        items = [self.build(e) for e in node.elts]
        return lambda env: tuple(i(env) for i in items)

    _List = _Tuple

    def _Set(self, node: ast.Set):
        items = [self.build(e) for e in node.elts]
        return lambda env: {i(env) for i in items}
