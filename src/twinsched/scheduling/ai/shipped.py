"""The models that ship inside the package, beside the user's registry.

``shipped_models/NAME/VERSION/`` in this folder has the registry's layout (artifacts and
``card.json``), so the same :class:`ModelRegistry` reads and verifies it. It is read only: a
name is looked up in the user's registry first and in the shipped one only when the user has
no version of it, so training a model under a shipped name replaces it for that user without
touching the package. How each shipped model was trained: ``docs/ai.md`` ("Shipped model").
"""

from __future__ import annotations

from pathlib import Path

from twinsched.errors import UnknownNameError
from twinsched.scheduling.ai.model_store import ModelCard, ModelError, ModelRegistry

SHIPPED_ROOT = Path(__file__).with_name("shipped_models")
# The digest of each shipped version's card and files (model_digest.version_digest), kept in
# the source rather than beside the files, so rewriting weights and card together is caught.
SHIPPED_DIGESTS = {
    "continuum-wait-carbon@1": "f2f7bbebf9eb757704a05a58d284e1df86a9397cfe0f39c9297007be705d8afe",
    "continuum-wait-carbon@2": "1062a815bfcc0e927bd4c2e194f3915a08c5d45072bbfe3e5fc853717283115e",
    "continuum-wait-energy@1": "4a0187fa61cb15398ef6049db92fd2283235ea04e07cbab2d9d3376a6d306979",
    "continuum-wait-energy@2": "50b7ebb98f420e0102bda11aca4f5a001e8d020fcf7c0cc1a7e1fd8e7aff7760",
    "openb-gates@1": "06ea6ae33e6e0962f766c3027d18a368be3df0d3e8d6861c7be6d66bf33cbdaa",
    "openb-rerank@1": "e37c664bd6b2924d2ac3c663eb080386f6971179ec5e511c0a19b8b6e9987903",
    "openb-rerank-dagger@1": "1e3837610c471813bbeef3f3cb353006a41d1735dac0b221848f2f84edcc7e40",
}


def is_shipped(card: ModelCard) -> bool:
    """Whether ``card`` is one of the package's own models."""
    return card.path.resolve().is_relative_to(SHIPPED_ROOT.resolve())


class Catalog:
    """Every model ``ai:NAME`` can name: the user's registry, then the shipped models."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.user = ModelRegistry(root)
        self.shipped = ModelRegistry(SHIPPED_ROOT, pinned=SHIPPED_DIGESTS)

    @property
    def root(self) -> Path:
        """The user's registry folder."""
        return self.user.root

    def names(self) -> list[str]:
        """Names with a version in either registry, sorted."""
        return sorted({*self.user.names(), *self.shipped.names()})

    def owner(self, name: str) -> ModelRegistry:
        """The registry that answers for ``name``: the user's when it has a version of it."""
        if self.user.versions(name):
            return self.user
        if self.shipped.versions(name):
            return self.shipped
        raise UnknownNameError("model", name, self.names())

    def get(self, name: str, version: int | None = None, *, verify: bool = False) -> ModelCard:
        """The card of ``name`` (its latest version when ``version`` is None)."""
        return self.owner(name).get(name, version, verify=verify)

    def scan(self, name: str | None = None) -> tuple[list[ModelCard], list[ModelError]]:
        """Readable and unreadable cards: the user's, then the shipped ones (all of both, so a
        listing shows a shipped model that a user model of the same name hides)."""
        registries = [self.owner(name)] if name is not None else [self.user, self.shipped]
        cards: list[ModelCard] = []
        bad: list[ModelError] = []
        for registry in registries:
            found, errors = registry.scan(name)
            cards += found
            bad += errors
        return cards, bad

    def check(self, card: ModelCard) -> list[str]:
        """Missing, extra and altered files of ``card``'s version, checked by the registry
        that holds it (a shipped one against the digests pinned in the package)."""
        return (self.shipped if is_shipped(card) else self.user).check(card)

    def hidden(self, card: ModelCard) -> bool:
        """Whether ``card`` is shipped but a user model of the same name answers instead."""
        return is_shipped(card) and bool(self.user.versions(card.name))

    def writable(self, name: str) -> ModelRegistry:
        """The registry to delete ``name`` from; a shipped model cannot be."""
        registry = self.owner(name)
        if registry is self.shipped:
            raise ModelError(
                f"model '{name}' ships with twinsched and cannot be deleted; a model you "
                f"register under that name in {self.root} replaces it"
            )
        return registry
