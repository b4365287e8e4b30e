"""Configuration, read once at the edge: `Settings.from_env()` in the CLI's `main`, in the
workbench's page set-up and in the tests' session set-up, then `configure` makes it the
settings the library reads (`current()`). No other module reads the environment.

One rule for every variable: unset or empty means the default.

    AUDIT_DATA_DIR               data/ of the checkout (installed: $XDG_DATA_HOME/xhq-audit/data)
    AUDIT_CACHE_DIR              <data>/cache: every cached signal, one folder per kind
    AUDIT_SCANS                  <data>/scans: saved scans
    AUDIT_REVIEWS                <data>/reviews: the review workspace
    AUDIT_DATA_ROOTS             <data>: what the workbench serves (os.pathsep-separated)
    AUDIT_MEMORY_LIMIT           2.5GB: DuckDB's memory limit
    LABEL_STUDIO_URL             the default Label Studio server
    LABEL_STUDIO_API_KEY         its token (else the env file's)
    AUDIT_LABEL_STUDIO_SERVERS   <home>/.labelstudio-servers.toml: further servers
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# A checkout (pyproject.toml beside the package) keeps its state in its own data/; an
# installed package in the user's data home.
CHECKOUT = REPO if (REPO / "pyproject.toml").is_file() else None
# Shipped with the checkout, not configuration: the evaluation demo (`python -m devkit
# eval-demo` writes it).
DEMO_EVALUATION = REPO / "data" / "evaluation_demo"
# The bundled demo release and its HotpotQA sources (what a scan of no path reads).
DEMO = REPO / "data" / "demo"
DEMO_RELEASE = DEMO / "release"
DEFAULT_URL = "http://127.0.0.1:8080"
MEMORY_LIMIT = "2.5GB"


@dataclass(frozen=True)
class Settings:
    home: Path                 # the checkout, or the user's data home when installed
    data: Path
    cache: Path
    scans: Path
    reviews: Path
    data_roots: tuple[Path, ...]
    labelstudio_servers: Path
    memory_limit: str = MEMORY_LIMIT
    labelstudio_url: str | None = None
    labelstudio_token: str | None = field(default=None, repr=False)
    # Named variables a servers file may point a token at (token_env); never shown.
    variables: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)

        def path(name: str, default: Path) -> Path:
            return Path(env[name]) if env.get(name) else default

        home = CHECKOUT or Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
                                ) / "xhq-audit"
        data = path("AUDIT_DATA_DIR", home / "data")
        roots = tuple(Path(p) for p in env.get("AUDIT_DATA_ROOTS", "").split(os.pathsep)
                      if p.strip())
        return cls(home=home, data=data, cache=path("AUDIT_CACHE_DIR", data / "cache"),
                   scans=path("AUDIT_SCANS", data / "scans"),
                   reviews=path("AUDIT_REVIEWS", data / "reviews"),
                   data_roots=roots or (data,),
                   memory_limit=env.get("AUDIT_MEMORY_LIMIT") or MEMORY_LIMIT,
                   labelstudio_url=(env.get("LABEL_STUDIO_URL") or "").rstrip("/") or None,
                   labelstudio_token=env.get("LABEL_STUDIO_API_KEY") or None,
                   labelstudio_servers=path("AUDIT_LABEL_STUDIO_SERVERS",
                                            home / ".labelstudio-servers.toml"),
                   variables=env)

    def cache_dir(self, kind: str) -> Path:
        """Where one kind of cached signal lives."""
        return self.cache / kind

    @property
    def uploads(self) -> Path:
        """The workbench's upload area (always served)."""
        return self.data / "uploads"

    @property
    def labelstudio_data(self) -> Path:
        """Where scripts/labelstudio.sh keeps each local server's data directory."""
        return self.data / "labelstudio"

    @property
    def labelstudio_env_file(self) -> Path:
        """The local servers' credentials (scripts/labelstudio.sh writes it)."""
        return self.home / ".labelstudio.env"



_current: Settings | None = None


def one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per core at import that spins ~0.1 s of CPU beside
    a scan's start; the audit multiplies no matrices. Called by the CLI before numpy is
    first imported; a value the user set stays."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def configure(settings: Settings) -> Settings:
    """Make `settings` the ones the library reads (the edge calls this once)."""
    global _current
    _current = settings
    return settings


def current() -> Settings:
    """The configured settings; a library used without an edge configures them from the
    environment on first use."""
    return _current if _current is not None else configure(Settings.from_env())


def cache_dir(kind: str) -> Path:
    """Where one kind of cached signal lives under the current settings."""
    return current().cache_dir(kind)


def demo_sources() -> list[str]:
    return [f"{split}={DEMO / f'hotpot_source_{split}.json'}"
            for split in ("train", "validation")]


def read_env_file(path: Path | None = None) -> dict[str, str]:
    """KEY=value lines of .labelstudio.env (comments and blank lines skipped)."""
    try:
        text = (path or current().labelstudio_env_file).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip().strip("'\"")
    return values


def default_url() -> str:
    settings = current()
    if settings.labelstudio_url:
        return settings.labelstudio_url
    try:
        recorded = (settings.labelstudio_data / "default" / "server.url").read_text(
            encoding="utf-8").strip()
    except FileNotFoundError:
        recorded = ""
    return recorded or DEFAULT_URL


def default_token() -> str | None:
    """The local admin token: LABEL_STUDIO_API_KEY, else .labelstudio.env (what
    scripts/labelstudio.sh gives every server it starts)."""
    return current().labelstudio_token or read_env_file().get("LABEL_STUDIO_API_KEY") or None
