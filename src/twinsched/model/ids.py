"""What a twin id may be: 1-253 printable characters (``docs/twin.md``, security and errors).

The pattern is written as character ranges so that it means the same to pydantic's regex
engine and to jsonschema's (Python's ``re``, which has no ``\\p{..}`` classes).
"""

from __future__ import annotations

MAX_ID_LENGTH = 253  # as a Kubernetes object name; keeps (node, metric) keys indexable in SQL
# Unicode's control (Cc), format (Cf: bidi overrides, zero-width) and line and paragraph
# separator (Zl, Zp) characters, as ranges: the pattern must mean the same to pydantic's
# regex engine and to jsonschema's (Python's ``re``, which has no \p{..} classes).
UNPRINTABLE = (
    (0x00, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C),
    (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)  # fmt: skip


def _escape(code: int) -> str:
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


_RANGES = "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in UNPRINTABLE)
ID_PATTERN = f"^[^{_RANGES}]+$"  # printable: no control, format or separator character
