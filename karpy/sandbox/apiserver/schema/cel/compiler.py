"""Compiling CEL: celpy's parse tree -> a checked tree of Python closures.

celpy parses the expression; this module then does what cel-go's checker and planner do
for kube-apiserver. It resolves identifiers (``self``, ``oldSelf``, macro variables,
type names), checks field selections and calls against the static types derived from
the schema (rejecting ``self.nosuchfield`` or ``self.replicas.startsWith('a')`` with
cel-go's messages), expands the macros (``has``, ``all``, ``exists``, ``exists_one``,
``map``, ``filter``), and turns every node into a closure over a *frame*: a list holding
``self``, ``oldSelf`` and one slot per macro variable. Evaluating a rule is then a chain
of plain function calls with no tree walking and no dictionary lookups, which keeps a
rule evaluation in the tens of microseconds.

celpy's own evaluator is not used: Kubernetes rules depend on cel-go's exact error
texts, error absorption (``false && error`` is false), heterogeneous equality and 64-bit
overflow, which are easier to guarantee here than to patch into it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, cast

import attrs
from celpy.celparser import CELParseError, CELParser

from karpy.sandbox.apiserver.schema.cel import k8slib, stdlib, strings
from karpy.sandbox.apiserver.schema.cel import operators as ops
from karpy.sandbox.apiserver.schema.cel import types as t
from karpy.sandbox.apiserver.schema.cel.library import FUNCTIONS, Function
from karpy.sandbox.apiserver.schema.cel.literals import LiteralError, decode_literal
from karpy.sandbox.apiserver.schema.cel.macros import compile_comprehension, compile_has
from karpy.sandbox.apiserver.schema.cel.signatures import arithmetic_result, relation_accepts
from karpy.sandbox.apiserver.schema.cel.syntax import (
    CelCompileError,
    Fn,
    literal_string,
    position,
    unwrap_ident,
)
from karpy.sandbox.apiserver.schema.cel.types import display
from karpy.sandbox.apiserver.schema.cel.values import (
    CelEvalError,
    TypeValue,
    cel_equal,
    no_such_overload,
)
from karpy.sandbox.apiserver.schema.regex import RegexError, compile_go_regex

if TYPE_CHECKING:
    from lark import Token, Tree

    from karpy.sandbox.apiserver.schema.cel.types import CelType

__all__ = ["CompiledExpression", "compile_expression"]

assert k8slib and stdlib and strings  # the libraries register their functions on import

_PARSER = CELParser()
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_TYPE_NAMES = (
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
)
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})


@attrs.frozen(slots=True)
class CompiledExpression:
    """A checked, compiled expression. `run` evaluates it for one ``self``/``oldSelf``."""

    source: str
    fn: Fn
    result_type: CelType
    frame_size: int
    uses_old_self: bool

    def run(self, self_value: Any, old_self: Any = None) -> Any:
        frame = [None] * self.frame_size
        frame[0] = self_value
        frame[1] = old_self
        return self.fn(frame)


class _Compiler:
    def __init__(self, source: str, variables: dict[str, CelType]) -> None:
        self.source = source
        self.scopes: list[dict[str, tuple[int, CelType]]] = [
            {name: (slot, kind) for slot, (name, kind) in enumerate(variables.items())}
        ]
        self.slots = len(variables)
        self.used: set[str] = set()

    def error(self, node: Tree[Any] | Token, message: str, *, shift: int = 0) -> CelCompileError:
        """cel-go's error text at ``node`` (``shift`` moves the caret, e.g. from a field
        name back to the dot that selects it, where cel-go points)."""
        line, column = position(node)
        column = max(1, column + shift)
        source_line = self.source.splitlines()[line - 1] if self.source else ""
        text = (
            f"ERROR: <input>:{line}:{column}: {message}\n | {source_line}\n | {'.' * (column - 1)}^"
        )
        return CelCompileError(text)

    def no_overload(self, node: Tree[Any] | Token, name: str, *kinds: CelType) -> CelCompileError:
        applied = ", ".join(display(k) for k in kinds)
        return self.error(node, f"found no matching overload for '{name}' applied to '({applied})'")

    def lookup(self, name: str) -> tuple[int, CelType] | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # --- dispatch ------------------------------------------------------------------

    def compile(self, tree: Any) -> tuple[Fn, CelType]:
        kind = tree.data
        children = tree.children
        if len(children) == 1 and kind in (
            "expr", "conditionalor", "conditionaland", "relation", "addition",
            "multiplication", "unary", "member", "primary",
        ):  # fmt: skip
            return self.compile(children[0])
        method = getattr(self, f"c_{kind}", None)
        if method is None:
            raise self.error(tree, f"unsupported syntax: {kind}")
        result: tuple[Fn, CelType] = method(tree)
        return result

    # --- logic ---------------------------------------------------------------------

    def c_expr(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        condition, then, otherwise = (self.compile(c) for c in tree.children)
        cond_fn, cond_type = condition
        if cond_type.kind not in ("bool", "dyn"):
            raise self.error(
                tree,
                f"found no matching overload for '_?_:_' applied to '({display(cond_type)}, ...)'",
            )
        then_fn, then_type = then
        else_fn, else_type = otherwise

        def ternary(frame: list[Any]) -> Any:
            chosen = cond_fn(frame)
            if chosen is True:
                return then_fn(frame)
            if chosen is False:
                return else_fn(frame)
            raise no_such_overload("_?_:_", chosen)

        same = str(then_type) == str(else_type)
        return ternary, then_type if same else (then_type if else_type.kind == "null" else t.DYN)

    def c_conditionalor(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.logical(tree, "_||_", short_circuit=True)

    def c_conditionaland(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.logical(tree, "_&&_", short_circuit=False)

    def logical(self, tree: Tree[Any], name: str, short_circuit: bool) -> tuple[Fn, CelType]:
        left_fn, left_type = self.compile(tree.children[0])
        right_fn, right_type = self.compile(tree.children[1])
        for kind in (left_type, right_type):
            if kind.kind not in ("bool", "dyn"):
                raise self.error(
                    tree,
                    f"found no matching overload for '{name}' applied to "
                    f"'({display(left_type)}, {display(right_type)})'",
                )
        decisive = short_circuit  # the value that decides: True for ||, False for &&

        def logical_op(frame: list[Any]) -> bool:
            problem: CelEvalError | None = None
            try:
                left = left_fn(frame)
            except CelEvalError as err:
                problem = err
            else:
                if left is decisive:
                    return short_circuit
                if left is not (not decisive):
                    problem = no_such_overload(name, left)
            try:
                right = right_fn(frame)
            except CelEvalError:
                if problem is not None:
                    raise problem from None
                raise
            if right is decisive:
                return short_circuit
            if right is not (not decisive):
                raise problem or no_such_overload(name, right)
            if problem is not None:
                raise problem
            return not decisive

        return logical_op, t.BOOL

    # --- relations -------------------------------------------------------------------

    def c_relation(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        operator_tree, right_tree = tree.children
        operator = operator_tree.data.removeprefix("relation_")
        left_fn, left_type = self.compile(operator_tree.children[0])
        right_fn, right_type = self.compile(right_tree)
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "in": "in"}[
            operator
        ]
        self.check_relation(tree, symbol, left_type, right_type)
        if symbol == "==":
            return (lambda f: cel_equal(left_fn(f), right_fn(f))), t.BOOL
        if symbol == "!=":
            return (lambda f: not cel_equal(left_fn(f), right_fn(f))), t.BOOL
        if symbol == "in":
            return self.membership(left_fn, right_fn), t.BOOL
        return (lambda f: ops.compare(symbol, left_fn(f), right_fn(f))), t.BOOL

    @staticmethod
    def membership(left_fn: Fn, right_fn: Fn) -> Fn:
        """``x in list``; against a constant list of strings (Karpenter's label allow-lists)
        a set lookup, since CEL equality between strings is plain equality."""
        constant = getattr(right_fn, "cel_constant", None)
        if isinstance(constant, list) and constant and all(isinstance(c, str) for c in constant):
            strings = frozenset(constant)

            def in_strings(frame: list[Any]) -> bool:
                value = left_fn(frame)
                if isinstance(value, str):
                    return value in strings
                return ops.contains(value, constant)

            return in_strings
        return lambda f: ops.contains(left_fn(f), right_fn(f))

    def check_relation(self, tree: Tree[Any], symbol: str, left: CelType, right: CelType) -> None:
        if not relation_accepts(symbol, left, right):
            name = {"in": "@in"}.get(symbol, f"_{symbol}_")
            raise self.no_overload(tree, name, left, right)

    # --- arithmetic ----------------------------------------------------------------------

    def c_addition(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.arithmetic(tree)

    def c_multiplication(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.arithmetic(tree)

    def arithmetic(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        operator_tree, right_tree = tree.children
        operator = operator_tree.data.split("_", 1)[1]
        left_fn, left_type = self.compile(operator_tree.children[0])
        right_fn, right_type = self.compile(right_tree)
        symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}[operator]
        result = self.arithmetic_type(tree, symbol, left_type, right_type)
        function = {
            "+": ops.add, "-": ops.subtract, "*": ops.multiply, "/": ops.divide, "%": ops.modulo,
        }[symbol]  # fmt: skip
        return (lambda f: function(left_fn(f), right_fn(f))), result

    def arithmetic_type(
        self, tree: Tree[Any], symbol: str, left: CelType, right: CelType
    ) -> CelType:
        result = arithmetic_result(symbol, left, right)
        if result is None:
            raise self.no_overload(tree, f"_{symbol}_", left, right)
        return result

    def c_unary(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        operator, operand = tree.children
        fn, kind = self.compile(operand)
        if operator.data == "unary_not":
            if kind.kind not in ("bool", "dyn"):
                raise self.error(
                    tree, f"found no matching overload for '!_' applied to '({display(kind)})'"
                )

            def logical_not(frame: list[Any]) -> bool:
                value = fn(frame)
                if value is True or value is False:
                    return not value
                raise no_such_overload("!_", value)

            return logical_not, t.BOOL
        if kind.kind not in ("int", "double", "dyn", "duration"):
            raise self.error(
                tree, f"found no matching overload for '-_' applied to '({display(kind)})'"
            )
        return (lambda f: ops.negate(fn(f))), kind

    # --- members -------------------------------------------------------------------------

    def c_member_dot(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        target, name_token = tree.children
        name = str(name_token)
        receiver = unwrap_ident(target)
        if (
            receiver is not None
            and self.lookup(receiver) is None
            and f"{receiver}.{name}" in _TYPE_NAMES
        ):
            value = TypeValue(f"{receiver}.{name}")
            return (lambda f: value), t.TYPE
        fn, kind = self.compile(target)
        key, field_type = self.field(name_token, kind, name)
        return (lambda f: ops.select(fn(f), key)), field_type

    def field(self, token: Token | Tree[Any], kind: CelType, name: str) -> tuple[str, CelType]:
        """The property a selection reads and its type (checking it exists)."""
        if kind.kind == "object":
            entry = (kind.fields or {}).get(name)
            if entry is None:
                raise self.error(token, f"undefined field '{name}'", shift=-1)
            return entry
        if kind.kind == "map":
            return name, kind.elem or t.DYN
        if kind.kind == "dyn":
            return name, t.DYN
        raise self.error(
            token, f"type '{display(kind)}' does not support field selection", shift=-1
        )

    def c_member_index(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        target, key_tree = tree.children
        fn, kind = self.compile(target)
        key_fn, key_type = self.compile(key_tree)
        if kind.kind == "list":
            if key_type.kind not in ("int", "uint", "dyn"):
                raise self.no_overload(tree, "_[_]", kind, key_type)
            result = kind.elem or t.DYN
        elif kind.kind == "map":
            result = kind.elem or t.DYN
        elif kind.kind == "dyn":
            result = t.DYN
        else:
            raise self.no_overload(tree, "_[_]", kind, key_type)
        return (lambda f: ops.index(fn(f), key_fn(f))), result

    def c_member_dot_arg(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        target, name_token, *rest = tree.children
        name = str(name_token)
        args = list(rest[0].children) if rest else []
        receiver_ident = unwrap_ident(target)
        if receiver_ident is not None and self.lookup(receiver_ident) is None:
            qualified = f"{receiver_ident}.{name}"
            if qualified in FUNCTIONS:
                return self.call(tree, FUNCTIONS[qualified], None, args)
        if name in _MACROS and args and unwrap_ident(args[0]) is not None:
            return compile_comprehension(self, tree, name, target, args)
        function = FUNCTIONS.get(name)
        if function is None or not function.has_style(member=True):
            raise self.error(name_token, f"undeclared reference to '{name}' (in container '')")
        return self.call(tree, function, target, args)

    def c_member_object(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        raise self.error(tree, "message construction is not supported")

    # --- primaries ------------------------------------------------------------------------

    def c_literal(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        token = cast("Token", tree.children[0])
        try:
            value = decode_literal(token.type, str(token))
        except LiteralError as err:
            raise self.error(token, str(err)) from None
        kind = {
            "INT_LIT": t.INT, "UINT_LIT": t.UINT, "FLOAT_LIT": t.DOUBLE, "STRING_LIT": t.STRING,
            "MLSTRING_LIT": t.STRING, "BYTES_LIT": t.BYTES, "BOOL_LIT": t.BOOL, "NULL_LIT": t.NULL,
        }[token.type]  # fmt: skip
        return _constant(value), kind

    def c_ident(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        token = tree.children[0]
        name = str(token)
        entry = self.lookup(name)
        if entry is not None:
            slot, kind = entry
            self.used.add(name)
            return (lambda f: f[slot]), kind
        if name in _TYPE_NAMES:
            value = TypeValue(name)
            return (lambda f: value), t.TYPE
        raise self.error(token, f"undeclared reference to '{name}' (in container '')")

    def c_paren_expr(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.compile(tree.children[0])

    def c_list_lit(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        items = [self.compile(c) for c in tree.children[0].children] if tree.children else []
        fns = [fn for fn, _ in items]
        kinds = {str(kind) for _, kind in items}
        elem = items[0][1] if len(kinds) == 1 else t.DYN
        constants = [getattr(fn, "cel_constant", _NOT_CONSTANT) for fn in fns]
        if _NOT_CONSTANT not in constants:
            return _constant(constants), t.list_of(elem)
        return (lambda f: [fn(f) for fn in fns]), t.list_of(elem)

    def c_map_lit(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        entries = list(tree.children[0].children) if tree.children else []
        pairs = [
            (self.compile(k), self.compile(v))
            for k, v in zip(entries[::2], entries[1::2], strict=True)
        ]
        key_fns = [k[0] for k, _ in pairs]
        value_fns = [v[0] for _, v in pairs]
        key_kinds = {str(k[1]) for k, _ in pairs}
        value_kinds = {str(v[1]) for _, v in pairs}
        key_type = pairs[0][0][1] if len(key_kinds) == 1 else t.DYN
        value_type = pairs[0][1][1] if len(value_kinds) == 1 else t.DYN

        def build(frame: list[Any]) -> dict[Any, Any]:
            result: dict[Any, Any] = {}
            for key_fn, value_fn in zip(key_fns, value_fns, strict=True):
                key = key_fn(frame)
                if not isinstance(key, str | int):
                    raise CelEvalError(f"unsupported key type: {type(key).__name__}")
                result[key] = value_fn(frame)
            return result

        return build, t.map_of(key_type, value_type)

    def c_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        name_token, *rest = tree.children
        name = str(name_token)
        args = list(rest[0].children) if rest else []
        if name == "has":
            return compile_has(self, tree, args)
        function = FUNCTIONS.get(name)
        if function is None or not function.has_style(member=False):
            raise self.error(name_token, f"undeclared reference to '{name}' (in container '')")
        return self.call(tree, function, None, args)

    def c_dot_ident(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.c_ident(tree)

    def c_dot_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, CelType]:
        return self.c_ident_arg(tree)

    # --- calls -------------------------------------------------------------------------------

    def call(
        self, tree: Tree[Any], function: Function, target: Any, args: list[Any]
    ) -> tuple[Fn, CelType]:
        compiled = ([self.compile(target)] if target is not None else []) + [
            self.compile(a) for a in args
        ]
        fns = [fn for fn, _ in compiled]
        kinds = [kind for _, kind in compiled]
        member = target is not None
        result = function.check(member, kinds)
        if result is None:
            shown = ", ".join(display(k) for k in (kinds[1:] if member else kinds))
            applied = f"{display(kinds[0])}.({shown})" if member else f"({shown})"
            raise self.error(
                tree, f"found no matching overload for '{function.name}' applied to '{applied}'"
            )
        if function.name in _REGEX_FUNCTIONS and len(args) >= 1:
            pattern = literal_string(args[0] if member else args[-1])
            if pattern is not None:
                try:
                    compile_go_regex(pattern)
                except RegexError as err:
                    raise self.error(tree, f"invalid regex: {err}") from None
        impl = function.impl
        if len(fns) == 1:
            only = fns[0]
            return (lambda f: impl(only(f))), result
        if len(fns) == 2:
            first, second = fns
            return (lambda f: impl(first(f), second(f))), result
        return (lambda f: impl(*[fn(f) for fn in fns])), result


_NOT_CONSTANT = object()


def _constant(value: Any) -> Fn:
    """A closure returning ``value``, marked so that enclosing literals can fold."""

    def constant(frame: list[Any]) -> Any:
        return value

    constant.cel_constant = value  # type: ignore[attr-defined]
    return constant


@functools.lru_cache(maxsize=1024)
def _parse(source: str) -> Tree[Any]:
    """celpy's parse tree (cached: CRDs repeat rules, and the compiler never mutates it)."""
    return _PARSER.parse(source)


def compile_expression(source: str, variables: dict[str, CelType]) -> CompiledExpression:
    """Parse, check and compile ``source`` with ``variables`` in scope (their order fixes
    the frame slots: the first two are ``self`` and ``oldSelf``)."""
    try:
        tree = _parse(source)
    except CELParseError as err:
        line = getattr(err, "line", None) or 1
        column = getattr(err, "column", None) or 1
        source_line = source.splitlines()[line - 1] if source.splitlines() else ""
        raise CelCompileError(
            f"ERROR: <input>:{line}:{column}: Syntax error: {str(err.args[0]).splitlines()[0]}\n"
            f" | {source_line}\n | {'.' * (column - 1)}^"
        ) from None
    compiler = _Compiler(source, dict(variables))
    fn, result_type = compiler.compile(tree)
    return CompiledExpression(
        source=source,
        fn=fn,
        result_type=result_type,
        frame_size=max(compiler.slots, 2),
        uses_old_self="oldSelf" in compiler.used,
    )
