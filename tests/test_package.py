"""The package as a user installs it: a wheel built from pyproject.toml, installed into a
fresh virtual environment outside the checkout (its dependencies from our .venv, offline),
run from another directory: the entry point lists the checks, scans a release given by
path and writes only where its settings say; the Label Studio configs come from the
installed package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from test_cli import make_release

pytestmark = pytest.mark.package

ROOT = Path(__file__).resolve().parent.parent


def run(*command: str | Path, cwd: Path, env: dict | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """bin/ of a fresh venv holding only the wheel; the build reads a copy of the sources,
    so nothing (build/, *.egg-info) is written into the checkout."""
    work = tmp_path_factory.mktemp("package")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "audit", source / "audit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                "--no-index", "--quiet", source, "-w", work / "wheels", cwd=work)
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "wheels").glob("xhq_audit-*.whl")
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    # Our .venv's packages resolve the dependencies (offline), as --system-site-packages
    # would from it.
    site = Path(run(env_dir / "bin" / "python", "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=work).stdout.strip())
    (site / "our-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = run(env_dir / "bin" / "python", "-m", "pip", "install", "--no-deps", "--no-index",
               "--quiet", wheel, cwd=work)
    assert done.returncode == 0, done.stderr
    return env_dir / "bin"


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AUDIT_", "LABEL_STUDIO_")) and k != "PYTHONPATH"}
    return {**env, **extra}


def test_the_installed_entry_point_lists_the_checks(installed, tmp_path):
    done = run(installed / "xhq-audit", "checks", cwd=tmp_path,
               env=clean_env(XDG_DATA_HOME=str(tmp_path / "xdg")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0].split()[:2] == ["blank_question", "question"]
    where = run(installed / "python", "-c", "import audit; print(audit.__file__)",
                cwd=tmp_path, env=clean_env())
    assert Path(where.stdout.strip()).is_relative_to(installed.parent)
    assert list(tmp_path.iterdir()) == []


def test_the_installed_package_finds_its_label_studio_configs(installed, tmp_path):
    probe = ("from audit.review import kinds\n"
             "print(kinds.config('translation_review').path)\n"
             "for form in kinds.CONFIGS.values():\n"
             "    form.validate(form.load())\n"
             "print(len(kinds.CONFIGS))")
    done = run(installed / "python", "-c", probe, cwd=tmp_path, env=clean_env())
    assert done.returncode == 0, done.stderr
    path, kinds = done.stdout.split()
    assert Path(path).is_relative_to(installed.parent) and Path(path).is_file()
    assert kinds == "11"     # review and adjudication configs, post-edit, ESA and MQM pairs


def test_an_installed_scan_writes_only_where_its_settings_say(installed, tmp_path):
    release = make_release(tmp_path / "input")
    here, state = tmp_path / "elsewhere", tmp_path / "state"
    here.mkdir()
    done = run(installed / "xhq-audit", "scan", release, "--skip", "language_mismatch",
               cwd=here, env=clean_env(AUDIT_DATA_DIR=str(state),
                                       XDG_DATA_HOME=str(tmp_path / "xdg")))
    assert done.returncode == 0, done.stderr
    scan = Path(json.loads(done.stdout)["scan"])
    assert scan.parent.parent == state / "scans" and (scan / "manifest.json").is_file()
    assert sorted(p.name for p in state.iterdir()) == ["cache", "scans"]
    assert list(here.iterdir()) == [] and not (tmp_path / "xdg").exists()
    bad = run(installed / "xhq-audit", "scan", tmp_path / "missing", cwd=here,
              env=clean_env(AUDIT_DATA_DIR=str(state)))
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == (f"error: {tmp_path / 'missing'}: no such file or "
                                           "directory")


def test_requirements_pin_what_pyproject_pins():
    """requirements.txt (what scripts/setup.sh installs) holds every pin of pyproject.toml,
    the same version: one truth."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = [*project["dependencies"],
            *(p for extra in project["optional-dependencies"].values() for p in extra)]
    lines = {line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")}
    assert sorted(set(pins) - lines) == []
