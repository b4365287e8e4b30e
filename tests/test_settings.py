"""Configuration is read once, at the edge: `Settings.from_env()` with one rule for every
variable (unset or empty: the default), and no audit module reads the environment itself."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from audit import settings

ROOT = Path(__file__).resolve().parent.parent
VARIABLES = ("AUDIT_DATA_DIR", "AUDIT_CACHE_DIR", "AUDIT_SCANS", "AUDIT_REVIEWS",
             "AUDIT_DATA_ROOTS", "AUDIT_MEMORY_LIMIT", "LABEL_STUDIO_URL",
             "LABEL_STUDIO_API_KEY", "AUDIT_LABEL_STUDIO_SERVERS")


def test_an_empty_variable_is_the_default_for_every_layer(tmp_path):
    """AUDIT_CACHE_DIR="" used to put the language and translation caches under ./langid and
    ./heuristics of the working directory while the others went to data/cache."""
    unset = settings.Settings.from_env({})
    empty = settings.Settings.from_env({name: "" for name in VARIABLES})
    assert empty == unset
    assert unset.cache == ROOT / "data" / "cache" and unset.scans == ROOT / "data" / "scans"
    assert unset.data_roots == (ROOT / "data",) and unset.memory_limit == "2.5GB"
    assert unset.labelstudio_url is None and unset.labelstudio_token is None
    # In a process started in an empty directory with AUDIT_CACHE_DIR="", every layer's
    # cache is under data/cache.
    probe = ("from audit import settings\n"
             "from audit.translation import preservation\n"
             "from audit.language import layer\n"
             "from audit.translation import layer as translation\n"
             "import json\n"
             "print(json.dumps([str(settings.cache_dir(k)) for k in "
             "('langid', 'heuristics', 'preservation', 'contexts', 'results')]))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "AUDIT_CACHE_DIR": "",
                                          "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [str(ROOT / "data" / "cache" / kind) for kind in
                                       ("langid", "heuristics", "preservation", "contexts",
                                        "results")]
    assert list(tmp_path.iterdir()) == []


def test_settings_follow_the_environment_read_at_the_edge(tmp_path, settings_env):
    """Modules imported first, the variables set afterwards: the next Settings.from_env()
    (what the CLI's main and every page run call) is what every layer reads."""
    from audit.engine import (
        identity,  # noqa: F401 (imported before the variables change)
        store,  # noqa: F401
    )
    from audit.review import workspace
    chosen = settings_env(AUDIT_CACHE_DIR=tmp_path / "cache", AUDIT_SCANS=tmp_path / "scans",
                          AUDIT_REVIEWS=tmp_path / "reviews", AUDIT_MEMORY_LIMIT="1GB",
                          AUDIT_DATA_ROOTS=os.pathsep.join([str(tmp_path / "a"), "",
                                                            str(tmp_path / "b")]),
                          LABEL_STUDIO_URL="http://127.0.0.1:9/", LABEL_STUDIO_API_KEY="k1")
    assert settings.current() is chosen
    assert settings.cache_dir("langid") == tmp_path / "cache" / "langid"
    assert workspace.batch_dir("b1") == tmp_path / "reviews" / "b1"
    assert chosen.data_roots == (tmp_path / "a", tmp_path / "b")
    assert settings.default_url() == "http://127.0.0.1:9"
    assert settings.default_token() == "k1" and "k1" not in repr(chosen)


def test_the_cli_reads_its_settings_when_it_runs(tmp_path, settings_env):
    """`main` is the edge: a variable set after `audit.cli.main` was imported counts."""
    from test_cli import make_release

    from audit.cli.main import main
    release = make_release(tmp_path)
    # A cache of its own: the scan it remembers is no other test's to restore.
    settings_env(AUDIT_SCANS=tmp_path / "elsewhere", AUDIT_CACHE_DIR=tmp_path / "cache")
    os.environ["AUDIT_SCANS"] = str(tmp_path / "scans")   # settings_env restores it
    assert main(["scan", str(release), "--fresh"]) == 0
    assert len(list((tmp_path / "scans").glob("release/*/manifest.json"))) == 1
    assert not (tmp_path / "elsewhere").exists()
    assert settings.current().scans == tmp_path / "scans"


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that touch os.environ / os.getenv / os.putenv (or import them by name)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv",
                                                             "environb", "unsetenv"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                alias.name in ("environ", "getenv", "putenv") for alias in node.names):
            lines.append(node.lineno)
    return lines


def test_no_audit_module_reads_the_environment_but_settings():
    found = {str(path.relative_to(ROOT)): lines for path in sorted((ROOT / "audit").rglob("*.py"))
             if path.name != "settings.py" or path.parent.name != "audit"
             for lines in [_reads_environment(ast.parse(path.read_text(encoding="utf-8")))]
             if lines}
    assert found == {}
