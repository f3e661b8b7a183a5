"""Versioned models on disk, found by name: a small local registry in the spirit of MLflow's.

Layout: ``ROOT/NAME/VERSION/`` holds the artifact files that a ``save`` callback wrote and
``card.json`` (what the model is, how it was trained, on which data, how well it did). A
version appears all at once: its files are written to a hidden temporary folder beside it and
renamed into place, so a crash or a failing ``save`` never leaves half a version. Numbers are
claimed by exclusive file creation (``NAME/.claims/N``), so concurrent registrations get
distinct versions and a deleted version's number is not reused. The digest of card and
files together is recorded at registration outside the version (``NAME/.digests/N``,
:mod:`~twinsched.scheduling.ai.model_digest`) and checked by :meth:`ModelRegistry.check`,
which loading and ``models verify`` run. Every numbered folder is a version: one without a
readable card is an error naming it, never skipped in favour of another model.

Serving a registered model as the scheduler ``ai:NAME[@VERSION]`` lives in
:mod:`twinsched.scheduling.ai.serving`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.extras import data_home
from twinsched.scheduling.ai.model_digest import (
    CARD,
    combined,
    hash_folder,
    index_path,
    record_digest,
    recorded_digest,
    sha256_file,
    version_digest,
)

__all__ = ["CARD", "sha256_file"]  # re-exported: the card's file name, the file hash
ENV_VAR = "TWINSCHED_MODELS"
CARD_FORMAT = 1
FRAMEWORKS = ("twinsched", "numpy", "torch", "gymnasium", "stable-baselines3", "sb3-contrib")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_TYPES: dict[str, type] = {
    "name": str, "version": int, "created": str, "kind": str, "spec": dict,
    "data_checksum": str, "metrics": dict, "artifact_sha256": str, "files": dict,
    "frameworks": dict,
}  # fmt: skip
_FIELDS = tuple(_TYPES)
_TEXT_MAPS = ("files", "frameworks")  # {str: str}

Save = Callable[[Path], object] | Mapping[str, bytes]  # writes files into the folder


class ModelError(TwinschedError):
    """A registry operation failed on purpose: bad name, bad input, unreadable card."""


class CardError(ModelError):
    """A ``card.json`` cannot be used; the message names the file and, if one, the field."""

    def __init__(self, path: Path, field: str | None, problem: str) -> None:
        self.path, self.field, self.problem = path, field, problem
        super().__init__(f"{path}: field '{field}': {problem}" if field else f"{path}: {problem}")


class ModelIntegrityError(ModelError):
    """A version's artifact files no longer match the checksums on its card."""


def default_root() -> Path:
    """``$TWINSCHED_MODELS``, else the ``models`` folder in the user data folder."""
    if raw := os.environ.get(ENV_VAR):
        return Path(raw)
    return data_home() / "models"


def check_name(name: str) -> str:
    """``name`` if it is a safe model name (letters, digits, ``._-``, at most 100), else raise."""
    if not _safe(name):
        raise ModelError(
            f"bad model name {name!r}: use 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def _safe(name: object) -> bool:
    return isinstance(name, str) and bool(_NAME.fullmatch(name)) and ".." not in name


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME@3`` or ``NAME@latest`` as (name, version or None for the latest)."""
    name, at, ver = ref.partition("@")
    if at and not (_number(ver) or ver == "latest"):
        raise ModelError(
            f"bad model reference {ref!r:.120}: expected NAME or NAME@VERSION (a positive int)"
        )
    return check_name(name), int(ver) if _number(ver) else None


def framework_versions(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Python and the installed versions of the packages a model may depend on."""
    out = {"python": platform.python_version()}
    for package in FRAMEWORKS:
        with contextlib.suppress(PackageNotFoundError):
            out[package] = version(package)
    return out | dict(extra or {})


@dataclass(frozen=True)
class ModelCard:
    """What one registered version is; ``path`` is its folder (artifacts and ``card.json``)."""

    name: str
    version: int
    created: str
    kind: str
    spec: dict[str, Any]
    data_checksum: str
    metrics: dict[str, Any]
    artifact_sha256: str
    files: dict[str, str]
    frameworks: dict[str, str]
    path: Path = field(compare=False)

    @property
    def ref(self) -> str:
        """``NAME@VERSION``."""
        return f"{self.name}@{self.version}"

    def to_json(self) -> dict[str, Any]:
        """The card as written to ``card.json`` (without the folder)."""
        return {"format": CARD_FORMAT} | {key: getattr(self, key) for key in _FIELDS}

    @classmethod
    def read(cls, folder: Path) -> ModelCard:
        """The card in ``folder``; a bad file raises :class:`CardError` naming file and field."""
        path = folder / CARD
        if not path.is_file():
            problem = "missing: a version folder without its card is not a usable model"
            raise CardError(path, None, f"{problem} (remove it or register the model again)")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: deep nesting
            raise CardError(path, None, f"unreadable model card: {exc}") from None
        if not isinstance(raw, dict):
            raise CardError(path, None, "a model card is a JSON object")
        for key, kind in _TYPES.items():
            if key not in raw:
                raise CardError(path, key, "missing")
            if not isinstance(raw[key], kind) or isinstance(raw[key], bool):
                got = type(raw[key]).__name__
                raise CardError(path, key, f"{raw[key]!r:.60} is a {got}, not a {kind.__name__}")
        for key in _TEXT_MAPS:
            if not all(isinstance(v, str) for v in raw[key].values()):
                raise CardError(path, key, "maps names to strings only")
        if str(raw["version"]) != folder.name:
            raise CardError(path, "version", f"{raw['version']!r} is not {folder.name}")
        return cls(**{key: raw[key] for key in _FIELDS}, path=folder)


_Cards = list[ModelCard]  # aliases: the method ``list`` hides the builtin in the class
_Problems = list[str]
_Errors = list[ModelError]


class ModelRegistry:
    """Registered models under one root folder (argument, ``$TWINSCHED_MODELS``, user data)."""

    def __init__(
        self, root: str | Path | None = None, pinned: Mapping[str, str] | None = None
    ) -> None:
        """``pinned`` (``NAME@VERSION`` -> digest) replaces the on-disk index: the shipped
        models' digests live in the package source, not beside the files they vouch for."""
        self.root = Path(root) if root else default_root()
        self.pinned = None if pinned is None else dict(pinned)

    def register(
        self,
        name: str,
        kind: str,
        save: Save,
        spec: Mapping[str, Any] | None = None,
        data_checksum: str = "",
        metrics: Mapping[str, Any] | None = None,
        *,
        frameworks: Mapping[str, str] | None = None,
    ) -> ModelCard:
        """Store a new version of ``name``: ``save(folder)`` writes the artifact files (or give
        a ``{file name: bytes}`` mapping); ``data_checksum`` is the SHA-256 hex digest of the
        training data. Returns the card of the version, numbered after the latest one."""
        check_name(name)
        if not kind or not isinstance(kind, str):
            raise ModelError(f"model '{name}': kind must be a loader key, e.g. 'twinsched.policy'")
        if not _SHA256.fullmatch(data_checksum):
            raise ModelError(f"model '{name}': data_checksum must be a SHA-256 hex digest")
        spec, metrics = _json_dict(name, "spec", spec), _json_dict(name, "metrics", metrics)
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder))
        try:
            _write_artifacts(tmp, save)
            if (tmp / CARD).exists():
                raise ModelError(f"model '{name}': '{CARD}' is reserved for the model card")
            if not (files := hash_folder(tmp)):
                raise ModelError(f"model '{name}': save wrote no artifact file")
            number = self._claim(folder)
            card = ModelCard(
                name, number, datetime.now(UTC).isoformat(timespec="seconds"), kind, spec,
                data_checksum, metrics, combined(files), files, framework_versions(frameworks),
                folder / str(number),
            )  # fmt: skip
            _write_json(tmp / CARD, card.to_json())
            record_digest(self.root, name, number, version_digest(tmp))
            os.rename(tmp, card.path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return card

    def names(self) -> list[str]:
        """Names with at least one version, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if _safe(p.name) and self.versions(p.name)
        )

    def versions(self, name: str) -> list[int]:
        """Version numbers of ``name``, ascending (empty when unknown)."""
        folder = self.root / check_name(name)
        if not folder.is_dir():
            return []
        return sorted(int(p.name) for p in folder.iterdir() if _number(p.name) and p.is_dir())

    def list(self, name: str | None = None) -> _Cards:
        """Readable cards of every version (of one name), by name then version; :meth:`scan`
        also says which cards cannot be read."""
        return self.scan(name)[0]

    def scan(self, name: str | None = None) -> tuple[_Cards, _Errors]:
        """Cards of every version (of one name), by name then version, and the error of each
        version whose card cannot be read: one bad card hides no other."""
        cards: _Cards = []
        bad: _Errors = []
        for n in [name] if name is not None else self.names():
            for number in self.versions(n):
                try:
                    cards.append(self._read(n, number))
                except ModelError as exc:
                    bad.append(exc)
        return cards, bad

    def get(self, name: str, version: int | None = None, *, verify: bool = False) -> ModelCard:
        """The card of one version (the latest when ``version`` is None); ``verify`` checks the
        artifact files against it first. Unknown names and versions list the known ones.

        Without a version, the newest version folder answers; if it cannot be used the error
        says so and lists the usable versions: no older version is picked behind your back."""
        number = self.resolve(name, version)
        try:
            card = self._read(name, number)
        except ModelError as exc:
            if version is not None:
                raise
            usable = [c.ref for c in self.scan(name)[0]]
            raise ModelError(
                f"the newest version of '{name}' cannot be used: {exc}; name a version "
                f"(usable: {', '.join(usable) or 'none'})"
            ) from exc
        if verify and (problems := self.check(card)):
            raise ModelIntegrityError("; ".join(problems))
        return card

    def delete(self, name: str, version: int | None = None) -> _Cards:
        """Remove one version, or every version and the name itself; returns what went."""
        self.resolve(name, version)  # unknown names and versions list the known ones
        cards = self.scan(name)[0]  # a version with a bad card goes too, unlisted
        if version is not None:
            cards = [c for c in cards if c.version == version]
        folder = self.root / name
        targets = [folder / str(version)] if version is not None else [folder]
        for target in targets:  # rename first, so readers never see a half-deleted version
            trash = target.parent / f".trash-{target.name}-{uuid.uuid4().hex}"
            os.rename(target, trash)
            shutil.rmtree(trash)
        return cards

    def verify(self, name: str, version: int | None = None) -> _Problems:
        """Problems with the artifact files of one version (empty when they match the card)."""
        return self.check(self.get(name, version))

    def check(self, card: ModelCard) -> _Problems:
        """Missing, extra and altered artifact files of ``card``'s version."""
        found = hash_folder(card.path)
        problems = [f"{card.ref}: file '{f}' is missing" for f in card.files if f not in found]
        problems += [
            f"{card.ref}: file '{f}' is not on the card" for f in found if f not in card.files
        ]
        problems += [
            f"{card.ref}: file '{f}': sha256 {found[f][:12]}… does not match {card.files[f][:12]}…"
            for f in card.files
            if f in found and found[f] != card.files[f]
        ]
        if not problems and combined(found) != card.artifact_sha256:
            problems.append(f"{card.ref}: artifact_sha256 does not match its files")
        return problems or self._digest_problems(card)

    def _digest_problems(self, card: ModelCard) -> _Problems:
        """Whether card and files together are what was registered (module docstring)."""
        if self.pinned is not None:
            expected, where = self.pinned.get(card.ref), "the digest pinned in the package"
        else:
            where = str(index_path(self.root, card.name, card.version))
            expected = recorded_digest(self.root, card.name, card.version)
        if expected is None:
            return [f"{card.ref}: no digest of card and files was recorded for it ({where}); "
                    "register the model again"]  # fmt: skip
        if version_digest(card.path) != expected:
            return [f"{card.ref}: card and files differ from the version registered: their "
                    f"digest does not match {where}"]  # fmt: skip
        return []

    def resolve(self, name: str, version: int | None) -> int:
        """``version`` (the latest when None) if ``name`` has it, else an error listing them."""
        versions = self.versions(name)
        if not versions:
            raise UnknownNameError("model", name, self.names())
        number = versions[-1] if version is None else version
        if number not in versions:
            known = [f"{name}@{v}" for v in versions]
            raise UnknownNameError("model version", f"{name}@{number}", known)
        return number

    def _read(self, name: str, number: int) -> ModelCard:
        card = ModelCard.read(self.root / name / str(number))
        if card.name != name:
            raise CardError(card.path / CARD, "name", f"{card.name!r} is not {name!r}")
        return card

    def _claim(self, folder: Path) -> int:
        """The next free version number, claimed atomically (O_EXCL) so no two writers share it."""
        claims = folder / ".claims"
        claims.mkdir(exist_ok=True)
        taken = [int(p.name) for p in claims.iterdir() if p.name.isdigit()]
        number = max([*taken, *self.versions(folder.name)], default=0) + 1
        while True:
            try:
                os.close(os.open(claims / str(number), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                return number
            except FileExistsError:
                number += 1


def _number(text: str) -> bool:
    """A version folder's name: a positive decimal, ASCII only (``"²".isdigit()`` is True)."""
    return 0 < len(text) <= 9 and text.isascii() and text.isdigit() and text == str(int(text))


def _json_dict(name: str, what: str, value: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(value or {})
    try:
        return dict(json.loads(json.dumps(out)))
    except (TypeError, ValueError) as exc:
        raise ModelError(f"model '{name}': field '{what}' is not JSON: {exc}") from exc


def _write_artifacts(folder: Path, save: Save) -> None:
    if callable(save):
        save(folder)
        return
    for file_name, data in save.items():
        target = folder / file_name
        if target.resolve().parent != folder.resolve():
            raise ModelError(f"artifact name {file_name!r} must be a plain file name")
        target.write_bytes(data)


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
