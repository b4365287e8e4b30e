"""The house's walls: the library, the workbench and the pages never import the devkit
(issue 19: fixtures, generators and the local Label Studio manager live in devkit/), and
the library never imports the workbench or Streamlit (the app's own code is workbench/)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_imports(path: Path, package: str = "devkit") -> list[int]:
    """The lines of every `import devkit…` and `from devkit… import …` in a file (or of
    another top-level `package`), at any depth (a relative import never reaches it)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(name == package or name.startswith(f"{package}.") for name in names):
            lines.append(node.lineno)
    return sorted(lines)


def test_nothing_outside_the_devkit_imports_it() -> None:
    files = sorted([*(ROOT / "audit").rglob("*.py"), *(ROOT / "workbench").rglob("*.py"),
                    *(ROOT / "pages").rglob("*.py"), ROOT / "app.py"])
    assert len(files) > 40
    assert [f"{f.relative_to(ROOT)}:{line}" for f in files for line in package_imports(f)] == []


def test_the_walk_sees_every_import_form(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import devkit\nimport os, devkit.synth as s\nfrom devkit.demo import build\n"
                     "def f():\n    from devkit import synth\nfrom . import devkit\n"
                     "import devkitten\nfrom devkitten import x\n", encoding="utf-8")
    assert package_imports(probe) == [1, 2, 3, 5]


def test_the_library_imports_neither_the_workbench_nor_streamlit() -> None:
    files = sorted((ROOT / "audit").rglob("*.py"))
    assert len(files) > 40
    assert [f"{f.relative_to(ROOT)}:{line} {package}" for package in ("workbench", "streamlit")
            for f in files for line in package_imports(f, package)] == []
