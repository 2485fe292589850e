"""CEL's macros, compiled: ``has()`` and the comprehensions over lists and maps.

``all`` and ``exists`` absorb errors the way cel-go's folds do: ``[1, 0].all(x, 1 / x
> 0)`` is an error, but ``[0, 1].exists(x, x == 1)`` is true even if another element
errored; they stop at the first deciding element. ``exists_one``, ``filter`` and ``map``
propagate the first error. A comprehension over a map ranges over its keys. The loop
variable lives in its own frame slot, so nested comprehensions never collide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from karpy.sandbox.apiserver.schema.cel import types as t
from karpy.sandbox.apiserver.schema.cel.syntax import unwrap, unwrap_ident
from karpy.sandbox.apiserver.schema.cel.types import display
from karpy.sandbox.apiserver.schema.cel.values import CelEvalError, no_such_overload

if TYPE_CHECKING:
    from lark import Token, Tree

    from karpy.sandbox.apiserver.schema.cel.syntax import CelCompileError, Fn
    from karpy.sandbox.apiserver.schema.cel.types import CelType

__all__ = ["MacroCompiler", "compile_comprehension", "compile_has"]


class MacroCompiler(Protocol):
    """What a macro needs of the compiler (`karpy.sandbox.apiserver.schema.cel.compiler`)
    that expands it: compile a subtree, check a field, open a scope with its own slot."""

    slots: int
    scopes: list[dict[str, tuple[int, CelType]]]

    def error(
        self, node: Tree[Any] | Token, message: str, *, shift: int = 0
    ) -> CelCompileError: ...

    def compile(self, tree: Any) -> tuple[Fn, CelType]: ...

    def field(self, token: Token | Tree[Any], kind: CelType, name: str) -> tuple[str, CelType]: ...


def compile_has(compiler: MacroCompiler, tree: Tree[Any], args: list[Any]) -> tuple[Fn, CelType]:
    """``has(x.f)``: whether map or object ``x`` holds key ``f``."""
    select = unwrap(args[0], "member_dot") if len(args) == 1 else None
    if select is None:
        raise compiler.error(tree, "invalid argument to has() macro")
    target, name_token = select.children
    fn, kind = compiler.compile(target)
    key, _ = compiler.field(name_token, kind, str(name_token))

    def has(frame: list[Any]) -> bool:
        container = fn(frame)
        if isinstance(container, dict):
            return key in container
        raise CelEvalError("invalid type for field selection.")

    return has, t.BOOL


def compile_comprehension(
    compiler: MacroCompiler, tree: Tree[Any], name: str, target: Any, args: list[Any]
) -> tuple[Fn, CelType]:
    """``all``, ``exists``, ``exists_one``, ``filter`` and ``map`` (2 or 3 arguments)."""
    if not (len(args) == 2 or (name == "map" and len(args) == 3)):
        raise compiler.error(tree, f"no matching overload for macro '{name}'")
    range_fn, range_type = compiler.compile(target)
    if range_type.kind == "list":
        elem = range_type.elem or t.DYN
    elif range_type.kind == "map":
        elem = range_type.key or t.DYN
    elif range_type.is_dyn:
        elem = t.DYN
    else:
        raise compiler.error(
            tree,
            f"expression of type '{display(range_type)}' cannot be range of a comprehension "
            "(must be list, map, or dynamic)",
        )
    variable = unwrap_ident(args[0]) or ""
    slot = compiler.slots
    compiler.slots += 1
    compiler.scopes.append({variable: (slot, elem)})
    try:
        bodies = [compiler.compile(a) for a in args[1:]]
    finally:
        compiler.scopes.pop()
    predicate_type = bodies[0][1]
    if name in ("all", "exists", "exists_one", "filter") and predicate_type.kind not in (
        "bool",
        "dyn",
    ):
        raise compiler.error(
            tree,
            f"found no matching overload for '{name}' predicate of type "
            f"'{display(predicate_type)}'",
        )
    body = bodies[0][0]

    def items(frame: list[Any]) -> Any:
        container = range_fn(frame)
        if isinstance(container, list | dict):
            return container
        raise no_such_overload(name, container)

    if name in ("all", "exists"):
        decisive = name == "exists"

        def quantifier(frame: list[Any]) -> bool:
            problem: CelEvalError | None = None
            for item in items(frame):
                frame[slot] = item
                try:
                    value = body(frame)
                except CelEvalError as err:
                    problem = problem or err
                    continue
                if value is decisive:
                    return name == "exists"
                if value is not (not decisive):
                    problem = problem or no_such_overload(name, value)
            if problem is not None:
                raise problem
            return not decisive

        return quantifier, t.BOOL
    if name == "exists_one":

        def exists_one(frame: list[Any]) -> bool:
            count = 0
            for item in items(frame):
                frame[slot] = item
                value = body(frame)
                if value is True:
                    count += 1
                elif value is not False:
                    raise no_such_overload(name, value)
            return count == 1

        return exists_one, t.BOOL
    if name == "filter":

        def filter_items(frame: list[Any]) -> list[Any]:
            kept = []
            for item in items(frame):
                frame[slot] = item
                value = body(frame)
                if value is True:
                    kept.append(item)
                elif value is not False:
                    raise no_such_overload(name, value)
            return kept

        return filter_items, t.list_of(elem)
    transform, result_type = bodies[-1]
    predicate = body if len(bodies) == 2 else None

    def map_items(frame: list[Any]) -> list[Any]:
        mapped = []
        for item in items(frame):
            frame[slot] = item
            if predicate is not None:
                keep = predicate(frame)
                if keep is False:
                    continue
                if keep is not True:
                    raise no_such_overload(name, keep)
            mapped.append(transform(frame))
        return mapped

    return map_items, t.list_of(result_type)
