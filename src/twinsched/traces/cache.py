"""Parsed traces cached as one uncompressed ``.npz`` file per (trace, variant, source contents).

Parsing the openb CSVs (pandas, row checks) costs more than a fill-up's start-up; a second run
of the same trace reads its columns back instead. The key hashes the reader's version
(:data:`FORMAT` here, the reader's own ``PARSER_VERSION``), the trace, the variant and the
*contents* of every source file, so an edited file or a new parser misses. A file is written
to a temporary name and renamed (atomic: concurrent writers leave one whole file), and on
read its header (names, ``meta``) must hash to the digest stored with it and its columns to
the header's checksum (:func:`scenario_checksum`): a damaged, partial or tampered file is
never trusted, only rebuilt.

Where: ``$TWINSCHED_CACHE``, else ``$XDG_CACHE_HOME/twinsched``, else
``~/.cache/twinsched``; ``TWINSCHED_CACHE=off`` turns the cache off (``cachedir.py``). A
cache that cannot be written costs the parse, never the run. Arrays are read into memory
(not memory-mapped): openb's largest variant is about 1 MB of columns, and the arrays stay
writeable like parsed ones. Strings and ``meta`` travel as JSON, so nothing is pickled.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.model.cluster import Scenario
from twinsched.model.columns import content_columns, scenario_checksum, scenario_from_columns
from twinsched.traces.cachedir import cache_dir  # where: traces/cachedir.py

FORMAT = 2  # the layout of a cache file; bump when it changes (2: the header digest)
_CHUNK = 1 << 20
_TABLES = ("nodes", "links", "pods")  # numeric columns; the names go in the header


def cache_key(parts: Sequence[str], sources: Sequence[Path]) -> str:
    """SHA-256 over :data:`FORMAT`, ``parts`` (trace, variant, parser version) and the name
    and contents of every source file."""
    digest = hashlib.sha256(f"twinsched-trace-cache {FORMAT}\x00".encode())
    for part in parts:
        digest.update(part.encode("utf-8") + b"\x00")
    for path in sources:
        digest.update(path.name.encode("utf-8") + b"\x00")
        with path.open("rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        digest.update(b"\x01")
    return digest.hexdigest()


def cached_parse(
    parts: Sequence[str], sources: Sequence[Path], parse: Callable[[], Scenario]
) -> Scenario:
    """The scenario in the cache under ``parts`` and ``sources``, else ``parse()`` stored there.

    A missing source file is left to ``parse`` (its error names the file)."""
    folder = cache_dir()
    if folder is None or not all(p.is_file() for p in sources):
        return parse()
    path = folder / f"{cache_key(parts, sources)}.npz"
    found = read_scenario(path)
    if found is not None:
        return found
    scenario = parse()
    write_scenario(path, scenario)
    return scenario


def read_scenario(path: Path) -> Scenario | None:
    """The scenario stored at ``path``, or None if it is missing or not whole and intact."""
    try:
        # opened here: np.load of a path leaves the file open when it is not a zip
        with path.open("rb") as f, np.load(f, allow_pickle=False) as data:
            text, digest = bytes(data["header"]), bytes(data["digest"]).decode("ascii")
            header = json.loads(text.decode("utf-8"))
            columns = {t: _table(data, t) for t in _TABLES}
        scenario = scenario_from_columns(
            header["name"],
            pools=header["pools"],
            nodes={**columns["nodes"], "name": header["node_names"]},
            links=columns["links"],
            jobs=header["jobs"],
            pods={**columns["pods"], "name": header["pod_names"]},
            labels=header["labels"],
            gpu_models=header["gpu_models"],
            meta=header["meta"],
        )
        # the header (names, meta) hashes to its digest, the columns to the header's checksum
        whole = digest == hashlib.sha256(text).hexdigest()
        return scenario if whole and scenario_checksum(scenario) == header["checksum"] else None
    except Exception:  # the file is untrusted input: whatever fails to read is a miss
        return None  # missing, truncated, not a zip, a bad CRC or header, a missing column


def _table(data: Any, table: str) -> dict[str, np.ndarray]:
    prefix = f"{table}."
    return {k[len(prefix) :]: data[k] for k in data.files if k.startswith(prefix)}


def write_scenario(path: Path, scenario: Scenario) -> bool:
    """Store ``scenario`` at ``path`` atomically; False (nothing written) when it cannot be:
    a folder that cannot be written, or a ``meta`` that JSON would not give back unchanged."""
    meta = scenario.meta
    try:
        if json.loads(json.dumps(meta)) != meta:
            return False
    except (TypeError, ValueError):
        return False
    columns = content_columns(scenario)
    header = {
        "name": scenario.name,
        "pools": list(scenario.nodes.pool_names),
        "jobs": list(scenario.pods.job_names),
        "node_names": list(scenario.nodes.names),
        "pod_names": list(scenario.pods.names),
        "labels": list(scenario.labels.names),
        "gpu_models": list(scenario.nodes.gpu_models),
        "meta": meta,
        "checksum": scenario_checksum(scenario),
    }
    arrays = {
        f"{t}.{c}": np.asarray(v)
        for t in _TABLES
        for c, v in columns[t].items()
        if c not in ("name", "idx")
    }
    text = json.dumps(header).encode("utf-8")
    blob = np.frombuffer(text, dtype=np.uint8)
    digest = np.frombuffer(hashlib.sha256(text).hexdigest().encode("ascii"), dtype=np.uint8)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as f:
                np.savez(f, header=blob, digest=digest, **arrays)  # type: ignore[arg-type]
            os.replace(temp, path)  # atomic: readers see the old file or the whole new one
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
    except OSError:
        return False
    return True
