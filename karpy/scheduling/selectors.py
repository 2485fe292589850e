"""Label selectors (``metav1.LabelSelector``) as small hashable matchers.

Pod affinity terms and topology spread constraints select the pods they count with a
label selector. Two details matter for scheduling and follow apimachinery:

* an absent selector (``None``) matches *nothing*; an empty one (``{}``) matches
  everything;
* an invalid selector (unknown operator, ``In`` without values) matches nothing.

Selectors are frozen and hash their value once, so topology groups keyed by selector are
cheap dictionary lookups.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["NOTHING", "LabelSelector", "selector_from_dict"]


@attrs.frozen(slots=True, cache_hash=True)
class SelectorTerm:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == "NotIn":
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == "Exists":
            return self.key in labels
        return self.key not in labels

    def render(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        if self.operator == "In" and len(self.values) == 1:
            return f"{self.key}={next(iter(self.values))}"
        return f"{self.key} {self.operator} [{', '.join(sorted(self.values))}]"


@attrs.frozen(slots=True, cache_hash=True)
class LabelSelector:
    """A conjunction of terms; ``matches_nothing`` for absent or invalid selectors."""

    terms: tuple[SelectorTerm, ...] = ()
    matches_nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        for term in self.terms:  # noqa: SIM110 - hot path: a loop beats all() with a generator
            if not term.matches(labels):
                return False
        return True

    def keys(self) -> frozenset[str]:
        return frozenset(t.key for t in self.terms)

    def with_terms(self, *extra: SelectorTerm) -> LabelSelector:
        if self.matches_nothing:
            return self
        return LabelSelector(tuple(sorted({*self.terms, *extra}, key=_term_order)))

    def render(self) -> str:
        if self.matches_nothing:
            return "<none>"
        if not self.terms:
            return "<all>"
        return ",".join(t.render() for t in self.terms)


def _term_order(term: SelectorTerm) -> tuple[str, str, tuple[str, ...]]:
    return (term.key, term.operator, tuple(sorted(term.values)))


NOTHING: Final = LabelSelector(matches_nothing=True)
EVERYTHING: Final = LabelSelector()
_VALID_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def selector_from_dict(data: Mapping[str, Any] | None) -> LabelSelector:
    """Compile a ``metav1.LabelSelector`` dict (``None`` selects nothing)."""
    if data is None:
        return NOTHING
    labels = tuple((str(k), str(v)) for k, v in (data.get("matchLabels") or {}).items())
    exprs = tuple(
        (
            str(e.get("key", "")),
            str(e.get("operator", "")),
            tuple(str(v) for v in e.get("values") or ()),
        )
        for e in data.get("matchExpressions") or ()
    )
    return _compile(labels, exprs)


@functools.lru_cache(maxsize=4096)
def _compile(
    labels: tuple[tuple[str, str], ...], exprs: tuple[tuple[str, str, tuple[str, ...]], ...]
) -> LabelSelector:
    # Pods of one workload carry the same selectors: compile each distinct one once.
    terms: set[SelectorTerm] = {SelectorTerm(k, "In", frozenset((v,))) for k, v in labels}
    for key, op, raw in exprs:
        values = frozenset(raw)
        if op not in _VALID_OPERATORS:
            return NOTHING
        if op in ("In", "NotIn") and not values:
            return NOTHING
        if op in ("Exists", "DoesNotExist") and values:
            return NOTHING
        terms.add(SelectorTerm(key, op, values))
    return LabelSelector(tuple(sorted(terms, key=_term_order)))
