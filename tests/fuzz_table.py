"""The columns of the reliability table (``docs/reliability.md``), shared by the fuzzers."""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("tried", "clear error", "accepted", "stored wrongly", "tracebacks", "5xx")
HEADER = ["| target | " + " | ".join(COLUMNS) + " |", "|---" + "|---:" * len(COLUMNS) + "|"]


@dataclass
class Tally:
    """The counts of one target, in the order of :data:`COLUMNS`."""

    tried: int = 0
    clear: int = 0
    accepted: int = 0
    wrongly: int = 0
    tracebacks: int = 0
    server_errors: int = 0

    def row(self, target: str) -> str:
        """The Markdown row of ``target``."""
        cells = (self.tried, self.clear, self.accepted, self.wrongly, self.tracebacks,
                 self.server_errors)  # fmt: skip
        return f"| {target} | " + " | ".join(map(str, cells)) + " |"
