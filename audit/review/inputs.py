"""A review batch spec as read (Spec; spec.py reads the file) and what its paths and
design resolve to: the scanned release, the sampling design, a path relative to the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Spec:
    path: Path
    kind: str
    annotators: list | dict
    batch: str | None = None
    release: str | None = None
    sources: list[str] = field(default_factory=list)
    design: str | dict = "default"
    seed: int | None = None
    pairs: str | None = None
    adjudicators: list[str] = field(default_factory=list)
    server: str | None = None
    servers: dict[str, str] | None = None
    new_release: str | None = None
    new_sources: list[str] = field(default_factory=list)
    plan: str | None = None
    options: dict = field(default_factory=dict)   # the kind's own keys, as it read them

    def as_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "path"}


def design(spec: Spec):
    """The sampling Design of a translation spec (seed overridden when given)."""
    from dataclasses import replace

    from . import sampling
    if isinstance(spec.design, str):
        chosen = sampling.PRESETS[spec.design]
    else:
        table = spec.design
        by = tuple(table["by"])
        levels = {**sampling.target_languages_only(by)["levels"],
                  **{dim: tuple(values) for dim, values in table.get("levels", {}).items()}}
        chosen = sampling.Design(name="spec", by=by, seed=sampling.PAPER_SEED,
                                 allocation=table.get("allocation", "equal"),
                                 per_stratum=table.get("per_stratum"), size=table.get("size"),
                                 levels=levels)
    return replace(chosen, seed=spec.seed) if spec.seed is not None else chosen


def scanned(spec: Spec, value: str | None, sources: list[str]):
    """The scan of the release at a path in the spec with its sources, or of the demo
    release with its sources when the spec names none (remembered, or made now)."""
    from .. import settings
    from ..engine import policy, store
    from ..io.release import open_release
    if value:
        release = open_release(relative(spec, value), sources or None)
    else:
        release = open_release(settings.DEMO_RELEASE, settings.demo_sources())
    return store.scanned(release, policy.DEFAULT)[0]


def relative(spec: Spec, value: str) -> Path:
    """A path in the spec, relative to the spec's folder unless absolute or present."""
    path = Path(value).expanduser()
    if path.is_absolute() or path.exists():
        return path
    return spec.path.parent / path


def server_urls(spec: Spec) -> dict[str, str] | str | None:
    return spec.servers or spec.server
