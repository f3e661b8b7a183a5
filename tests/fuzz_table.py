"""The columns of the reliability table (``docs/reliability.md``), shared by the fuzzers."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

COLUMNS = ("tried", "clear error", "accepted", "stored wrongly", "tracebacks", "5xx")
HEADER = ["| target | " + " | ".join(COLUMNS) + " |", "|---" + "|---:" * len(COLUMNS) + "|"]
KEEP = 5  # failures kept for a test's message


@dataclass
class Tally:
    """The counts of one target, in the order of :data:`COLUMNS`, and its first failures."""

    tried: int = 0
    clear: int = 0
    accepted: int = 0
    wrongly: int = 0
    tracebacks: int = 0
    server_errors: int = 0
    failures: list[str] = field(default_factory=list)

    def row(self, target: str) -> str:
        """The Markdown row of ``target``."""
        cells = (self.tried, self.clear, self.accepted, self.wrongly, self.tracebacks,
                 self.server_errors)  # fmt: skip
        return f"| {target} | " + " | ".join(map(str, cells)) + " |"

    def failed(self, what: str) -> None:
        """Keep ``what`` for the message if fewer than :data:`KEEP` are kept."""
        if len(self.failures) < KEEP:
            self.failures.append(what)

    def add(self, outcome: str, detail: str = "") -> None:
        """Count one input by outcome: ``clear``, ``accepted``, ``wrongly`` or ``tracebacks``;
        the last two keep ``detail``."""
        self.tried += 1
        setattr(self, outcome, getattr(self, outcome) + 1)
        if outcome in ("wrongly", "tracebacks"):
            self.failed(detail)

    def merge(self, other: Tally) -> None:
        """Add ``other``'s counts (of the same class) and keep its failures while room is left."""
        for f in fields(self):
            if f.name != "failures":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        for what in other.failures:
            self.failed(what)
