"""What binds a model's weights to its card: one digest of both, kept outside the version.

A card lists its files' SHA-256, but a card vouches only for itself: whoever rewrites the
weights can recompute the card too. So at registration the registry records the *version
digest* (SHA-256 over ``card.json``'s bytes and every artifact file's hash) outside the
version's folder, in ``NAME/.digests/VERSION`` (created once, exclusively); the shipped
models' digests are constants in the package source (``shipped.py``). Verifying and loading
a version recompute it and compare: weights edited together with their card no longer match.

Threat model (``docs/models.md``): this detects accidental and casual tampering, and any edit
of a version's files by someone who does not also rewrite the index file (or, for shipped
models, the package's Python source). A local attacker who can rewrite the index too is out of
scope: without a signature nothing stored beside the model can tell their edit from yours.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

CARD = "card.json"
INDEX = ".digests"  # NAME/.digests/VERSION: the version digest recorded at registration


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def hash_folder(folder: Path) -> dict[str, str]:
    """SHA-256 of every artifact file under ``folder`` by POSIX relative path (card excluded)."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() != CARD
    }


def combined(files: Mapping[str, str]) -> str:
    """One SHA-256 over ``path -> digest`` pairs, in path order."""
    lines = "".join(f"{path}\x00{digest}\n" for path, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def version_digest(folder: Path) -> str:
    """The digest of a version: its card's bytes and its artifact files, together."""
    return combined({**hash_folder(folder), CARD: sha256_file(folder / CARD)})


def index_path(root: Path, name: str, number: int) -> Path:
    """Where the registry under ``root`` keeps the digest of ``name``'s version ``number``."""
    return root / name / INDEX / str(number)


def record_digest(root: Path, name: str, number: int, digest: str) -> None:
    """Write the digest of a new version; an existing record is never overwritten."""
    path = index_path(root, name, number)
    path.parent.mkdir(exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o444)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(digest + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def recorded_digest(root: Path, name: str, number: int) -> str | None:
    """The digest recorded for a version, or None when there is none (or it is unreadable)."""
    try:
        text = index_path(root, name, number).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 64 else None
