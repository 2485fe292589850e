"""Node-selector requirements: the set algebra the whole scheduler is built on.

A `Requirement` is the set of values a node label may take. Every operator Kubernetes and
Karpenter accept folds into one shape, ``(complement, values, gte, lte)``:

==============  ===========  ==========  =====================
operator        complement   values      bounds
==============  ===========  ==========  =====================
In [a, b]       no           {a, b}
DoesNotExist    no           {}
NotIn [a]       yes          {a}
Exists          yes          {}
Gt 5 / Gte 6    yes          {}          gte = 6
Lt 5 / Lte 4    yes          {}          lte = 4
==============  ===========  ==========  =====================

A complement set means "any value except these"; bounds keep only integer values in range.
With that shape, intersection and "do these overlap?" are a handful of set operations,
exactly as Karpenter defines them (``pkg/scheduling/requirement.go``), including its two
deliberate asymmetries:

* `Requirements.compatible` treats a key the node side does not define as a failure only
  when the incoming side *needs* a value there (``In``, ``Exists``, ``Gt`` ...): ``NotIn``
  and ``DoesNotExist`` are satisfied by a missing label. Keys in ``allow_undefined`` (the
  provider's well-known labels) are exempt, because instance types define them later.
* two "negative" requirements (``NotIn`` / ``DoesNotExist``) never conflict, even when
  their sets do not overlap.

`Requirement` and `Requirements` are immutable and hashable, so the solver can intern them
and memoise intersections and compatibility answers by identity.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import NORMALIZED_LABELS

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

__all__ = [
    "DOES_NOT_EXIST",
    "EXISTS",
    "GT",
    "GTE",
    "IN",
    "LT",
    "LTE",
    "NOT_IN",
    "SUPPORTED_OPERATORS",
    "Requirement",
    "RequirementConflict",
    "Requirements",
    "UndefinedLabel",
]

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
GT: Final = "Gt"
LT: Final = "Lt"
GTE: Final = "Gte"
LTE: Final = "Lte"
SUPPORTED_OPERATORS: Final = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE})
_NEGATIVE: Final = frozenset({NOT_IN, DOES_NOT_EXIST})
_EMPTY: frozenset[str] = frozenset()


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    number = _as_int(value)
    if number is None:
        return False
    if gte is not None and number < gte:
        return False
    return not (lte is not None and number > lte)


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a > b else b


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a < b else b


@attrs.frozen(slots=True, cache_hash=True)
class Requirement:
    """The values one label key may take (see the module docstring for the encoding)."""

    key: str
    complement: bool
    values: frozenset[str] = _EMPTY
    gte: int | None = None
    lte: int | None = None
    min_values: int | None = None

    @classmethod
    def new(
        cls,
        key: str,
        operator: str,
        values: Iterable[str] = (),
        *,
        min_values: int | None = None,
    ) -> Requirement:
        """Build from a Kubernetes ``{key, operator, values}``; aliased keys are normalised.

        Integer operators expect one integer value (validated elsewhere); an unparsable
        value behaves like Go's ``Atoi`` failure, i.e. as ``0``.
        """
        key = NORMALIZED_LABELS.get(key, key)
        if operator == IN:
            return cls(key, False, frozenset(values), min_values=min_values)
        if operator == NOT_IN:
            return cls(key, True, frozenset(values), min_values=min_values)
        if operator == EXISTS:
            return cls(key, True, min_values=min_values)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, min_values=min_values)
        first = next(iter(values), "0")
        number = _as_int(first) or 0
        if operator == GT:
            return cls(key, True, gte=number + 1, min_values=min_values)
        if operator == GTE:
            return cls(key, True, gte=number, min_values=min_values)
        if operator == LT:
            return cls(key, True, lte=number - 1, min_values=min_values)
        if operator == LTE:
            return cls(key, True, lte=number, min_values=min_values)
        raise ValueError(f"unsupported operator {operator!r}")

    @classmethod
    def exists(cls, key: str) -> Requirement:
        return cls(key, True)

    @classmethod
    def does_not_exist(cls, key: str, min_values: int | None = None) -> Requirement:
        return cls(key, False, min_values=min_values)

    @classmethod
    def in_values(cls, key: str, *values: str) -> Requirement:
        return cls(key, False, frozenset(values))

    @property
    def operator(self) -> str:
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    @property
    def is_negative(self) -> bool:
        """NotIn or DoesNotExist: satisfied by a node without the label."""
        if self.complement:
            return bool(self.values)
        return not self.values

    def __len__(self) -> int:
        """How many values the requirement admits (huge for complement sets, as in Go)."""
        if self.complement:
            return (1 << 63) - 1 - len(self.values)
        return len(self.values)

    def has(self, value: str) -> bool:
        if self.complement:
            return value not in self.values and _within(value, self.gte, self.lte)
        return value in self.values and _within(value, self.gte, self.lte)

    def intersection(self, other: Requirement) -> Requirement:
        complement = self.complement and other.complement
        gte = _max_opt(self.gte, other.gte)
        lte = _min_opt(self.lte, other.lte)
        min_values = _max_opt(self.min_values, other.min_values)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, False, min_values=min_values)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        if (gte is not None or lte is not None) and values:
            values = frozenset(v for v in values if _within(v, gte, lte))
        if not complement:
            gte = lte = None
        return Requirement(self.key, complement, values, gte, lte, min_values)

    def has_intersection(self, other: Requirement) -> bool:
        gte = _max_opt(self.gte, other.gte)
        lte = _min_opt(self.lte, other.lte)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if self.complement:
            return any(v not in self.values and _within(v, gte, lte) for v in other.values)
        if other.complement:
            return any(v not in other.values and _within(v, gte, lte) for v in self.values)
        if gte is None and lte is None:
            return not self.values.isdisjoint(other.values)
        return any(v in other.values and _within(v, gte, lte) for v in self.values)

    def any_value(self) -> str:
        """A concrete value admitted by the requirement, chosen deterministically.

        Karpenter picks at random for open sets; karpy takes the smallest admissible
        non-negative integer so the same input always yields the same label.
        """
        if not self.complement:
            return min(self.values) if self.values else ""
        low = self.gte if self.gte is not None and self.gte > 0 else 0
        high = self.lte if self.lte is not None else low + len(self.values) + 1
        for number in range(low, high + 1):
            if str(number) not in self.values:
                return str(number)
        return ""

    def sorted_values(self) -> list[str]:
        return sorted(self.values)

    def with_min_values(self, min_values: int | None) -> Requirement:
        return attrs.evolve(self, min_values=min_values)

    def render(self) -> str:
        """Human form: ``zone In [a b]``, ``gpu Exists``, ``cpu Exists >=4``."""
        op = self.operator
        if op in (EXISTS, DOES_NOT_EXIST):
            text = f"{self.key} {op}"
        else:
            values = self.sorted_values()
            if len(values) > 5:
                values = [*values[:5], f"and {len(values) - 5} others"]
            text = f"{self.key} {op} [{', '.join(values)}]"
        if self.gte is not None:
            text += f" >={self.gte}"
        if self.lte is not None:
            text += f" <={self.lte}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text

    def to_node_selector(self) -> list[dict[str, object]]:
        """As NodeSelectorRequirement dicts (a bounded range becomes Gte + Lte)."""
        base: dict[str, object] = {"key": self.key}
        if self.min_values is not None:
            base["minValues"] = self.min_values
        if self.gte is not None and self.lte is not None:
            return [
                {**base, "operator": GTE, "values": [str(self.gte)]},
                {**base, "operator": LTE, "values": [str(self.lte)]},
            ]
        if self.gte is not None:
            return [{**base, "operator": GTE, "values": [str(self.gte)]}]
        if self.lte is not None:
            return [{**base, "operator": LTE, "values": [str(self.lte)]}]
        op = self.operator
        if op in (IN, NOT_IN):
            return [{**base, "operator": op, "values": self.sorted_values()}]
        return [{**base, "operator": op}]


@attrs.frozen(slots=True)
class UndefinedLabel:
    """The incoming side requires a label key the other side does not define."""

    key: str

    def render(self) -> str:
        return f"label {self.key!r} does not have known values"


@attrs.frozen(slots=True)
class RequirementConflict:
    """Both sides constrain ``key`` and no value satisfies both."""

    key: str
    incoming: Requirement
    existing: Requirement

    def render(self) -> str:
        return f"key {self.key}, {self.incoming.render()} not in {self.existing.render()}"


@functools.lru_cache(maxsize=16384)
def _label_requirement(key: str, value: str) -> Requirement:
    # Nodes share most of their labels (zone, arch, instance type, pool): build each once.
    return Requirement.new(key, IN, (value,))


class Requirements:
    """An immutable set of requirements, at most one per label key.

    Building one from several requirements on the same key intersects them, as Kubernetes
    ANDs the expressions of one node-selector term.
    """

    __slots__ = ("_by_key", "_hash")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        by_key: dict[str, Requirement] = {}
        for req in requirements:
            existing = by_key.get(req.key)
            by_key[req.key] = req if existing is None else req.intersection(existing)
        self._by_key = by_key
        self._hash: int | None = None

    @classmethod
    def _from_dict(cls, by_key: dict[str, Requirement]) -> Requirements:
        out = cls.__new__(cls)
        out._by_key = by_key
        out._hash = None
        return out

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Requirements:
        by_key: dict[str, Requirement] = {}
        for k, v in labels.items():
            req = _label_requirement(k, v)
            existing = by_key.get(req.key)  # two aliases of one key: both must hold
            by_key[req.key] = req if existing is None else req.intersection(existing)
        return cls._from_dict(by_key)

    # -- mapping protocol -------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def keys(self) -> Iterable[str]:
        return self._by_key.keys()

    def values(self) -> Iterable[Requirement]:
        return self._by_key.values()

    def items(self) -> Iterable[tuple[str, Requirement]]:
        return self._by_key.items()

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    def get(self, key: str) -> Requirement:
        """The requirement on ``key``; an undefined key allows anything (``Exists``)."""
        req = self._by_key.get(key)
        return req if req is not None else Requirement(key, True)

    def find(self, key: str) -> Requirement | None:
        return self._by_key.get(key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requirements):
            return NotImplemented
        return self._by_key == other._by_key

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._by_key.values()))
        return self._hash

    def __repr__(self) -> str:
        return f"Requirements({self.render()})"

    # -- algebra ----------------------------------------------------------------------
    def add(self, *others: Requirement) -> Requirements:
        """A new set with each of ``others`` intersected into its key."""
        by_key = dict(self._by_key)
        for req in others:
            existing = by_key.get(req.key)
            by_key[req.key] = req if existing is None else req.intersection(existing)
        return Requirements._from_dict(by_key)

    def merge(self, other: Requirements) -> Requirements:
        if not other._by_key:
            return self
        if not self._by_key:
            return other
        return self.add(*other._by_key.values())

    def without(self, *keys: str) -> Requirements:
        return Requirements._from_dict({k: v for k, v in self._by_key.items() if k not in keys})

    def replace(self, req: Requirement) -> Requirements:
        by_key = dict(self._by_key)
        by_key[req.key] = req
        return Requirements._from_dict(by_key)

    def compatible(
        self, incoming: Requirements, allow_undefined: frozenset[str] = _EMPTY
    ) -> UndefinedLabel | RequirementConflict | None:
        """Why ``incoming`` cannot be satisfied by a node described by ``self``, or None."""
        mine = self._by_key
        for key, req in incoming._by_key.items():
            if key in mine or key in allow_undefined or req.is_negative:
                continue
            return UndefinedLabel(key)
        return self.intersects(incoming)

    def is_compatible(
        self, incoming: Requirements, allow_undefined: frozenset[str] = _EMPTY
    ) -> bool:
        return self.compatible(incoming, allow_undefined) is None

    def intersects(self, incoming: Requirements) -> RequirementConflict | None:
        """The first key (in sorted order) both sides constrain with no common value."""
        mine, theirs = self._by_key, incoming._by_key
        small, large = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
        conflicts: list[RequirementConflict] = []
        for key in small:
            if key not in large:
                continue
            existing, other = mine[key], theirs[key]
            if existing.has_intersection(other):
                continue
            if other.is_negative and existing.is_negative:
                continue
            conflicts.append(RequirementConflict(key, other, existing))
        if not conflicts:
            return None
        return min(conflicts, key=lambda c: c.key)

    def has_min_values(self) -> bool:
        return any(r.min_values is not None for r in self._by_key.values())

    def labels(self, exclude: frozenset[str] = _EMPTY) -> dict[str, str]:
        """Single-valued ``In`` requirements as labels."""
        return {
            k: next(iter(r.values))
            for k, r in self._by_key.items()
            if not r.complement and len(r.values) == 1 and k not in exclude
        }

    def render(self, exclude: frozenset[str] = _EMPTY) -> str:
        return ", ".join(sorted(r.render() for k, r in self._by_key.items() if k not in exclude))

    def to_node_selector(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for key in sorted(self._by_key):
            out.extend(self._by_key[key].to_node_selector())
        return out


EMPTY_REQUIREMENTS: Final = Requirements()
