"""MIME multi-part user data, read and written the way Karpenter does.

cloud-init (AL2) and nodeadm (AL2023) both accept a ``multipart/mixed`` document whose
parts are shell scripts or NodeConfig YAML. Karpenter writes it with the boundary ``//``
and bare ``\\n`` line ends (no CR), parts in order: the user's first, its own last, so the
node's settings win where both set the same thing. Reading keeps each part's content as
it was between the boundaries (the line end before a boundary belongs to the boundary).

Writing never lets a part's content or headers change the document's shape: when any
part contains ``--//`` (which could close the part, or the whole document, early and
drop Karpenter's own part after it), another boundary is chosen that occurs in no part,
derived from the parts so equal inputs still give equal bytes; header values are
unfolded, and one that still holds a CR or LF (which would start a header of its own, or
the content) is refused with `ValueError`.
"""

from __future__ import annotations

import email
import email.message
import email.policy
import hashlib
import re
from typing import Final

import attrs

__all__ = [
    "BOUNDARY",
    "CONTENT_TYPE_MULTIPART",
    "CONTENT_TYPE_NODECONFIG",
    "CONTENT_TYPE_SHELL",
    "Part",
    "is_mime",
    "parse_archive",
    "serialize_archive",
]

BOUNDARY: Final = "//"
CONTENT_TYPE_SHELL: Final = 'text/x-shellscript; charset="us-ascii"'
CONTENT_TYPE_NODECONFIG: Final = "application/node.eks.aws"
CONTENT_TYPE_MULTIPART: Final = f'multipart/mixed; boundary="{BOUNDARY}"'


@attrs.frozen(slots=True)
class Part:
    """One part: its headers (``Content-Type`` first) and content."""

    content_type: str
    content: str
    other_headers: tuple[tuple[str, str], ...] = ()


def is_mime(user_data: str) -> bool:
    """Does ``user_data`` start as a MIME document (Karpenter's test)?"""
    stripped = user_data.strip()
    return stripped.startswith(("MIME-Version:", "Content-Type:"))


def parse_archive(user_data: str) -> list[Part]:
    """The parts of a multi-part MIME document; `ValueError` when it is not one."""
    message = email.message_from_string(user_data, policy=email.policy.compat32)
    if not message.is_multipart():
        raise ValueError("user data is not a multipart MIME document")
    parts: list[Part] = []
    for sub in message.get_payload():
        if not isinstance(sub, email.message.Message):
            raise ValueError("malformed multipart user data")
        content_type = sub.get("Content-Type", "")
        if not content_type and not sub.keys() and not str(sub.get_payload()).strip():
            continue  # an unterminated last boundary: nothing follows it
        others = tuple((k, str(v)) for k, v in sub.items() if k.lower() != "content-type")
        payload = sub.get_payload()
        if not isinstance(payload, str):
            raise ValueError("nested multipart user data is not supported")
        parts.append(Part(content_type, payload, others))
    return parts


_FOLD = re.compile(r"\r?\n(?=[ \t])")


def _header_value(name: str, value: str) -> str:
    unfolded = _FOLD.sub("", value)
    if "\r" in unfolded or "\n" in unfolded:
        raise ValueError(f"user data part header {name} contains a line break")
    return unfolded


def _boundary(parts: list[Part]) -> str:
    """``//`` unless a part holds ``--//``; then ``//`` and a digest of the parts, longer
    until no part holds it (a delimiter must never occur inside a part)."""
    texts = [p.content for p in parts] + [p.content_type for p in parts]
    texts += [value for p in parts for _, value in p.other_headers]
    digest = hashlib.sha256("\0".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
    for length in range(0, len(digest) + 1, 16):
        boundary = BOUNDARY + digest[:length]
        if not any(f"--{boundary}" in text for text in texts):
            return boundary
    raise ValueError("no MIME boundary fits the user data")  # a SHA-256 in every part


def serialize_archive(parts: list[Part]) -> str:
    """A ``multipart/mixed`` document of ``parts``, with the boundary ``//`` unless a part
    holds it (see the module docstring)."""
    boundary = _boundary(parts)
    out = [f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{boundary}"\n\n']
    for index, part in enumerate(parts):
        out.append("\n" if index else "")
        out.append(f"--{boundary}\n")
        headers = [("Content-Type", part.content_type), *part.other_headers]
        out.extend(f"{key}: {_header_value(key, value)}\n" for key, value in sorted(headers))
        out.append("\n")
        out.append(part.content)
    out.append(f"\n--{boundary}--\n")
    return "".join(out)
