"""Shared pieces of the repair tests: real-text releases, corrections that undo their
planted defects, the CLI in a child process, and the reference toolkit when it is here."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import realdata_release as real

from audit.checks import preservation
from audit.checks import translation as heuristic_checks

REPO = Path(__file__).resolve().parent.parent
# The reference toolkit (GitHub Iman998/XhotpotQA): a checkout named by XHOTPOTQA_TOOLKIT,
# else the machine's mirror of it; never part of this repository.
TOOLKIT_MIRROR = Path("/work/.mirror/Iman998+XhotpotQA/repo")
# Random NTREX lines stand beside HotpotQA sentences in the real-text release: the
# translation-quality heuristics and the preservation checks (answer, bridge entity) would
# judge noise there (tests/test_realdata_release.py).
HEURISTICS = (*heuristic_checks.HEURISTIC_NAMES, *preservation.PRESERVATION_NAMES)
SKIP_HEURISTICS = [arg for name in HEURISTICS for arg in ("--skip", name)]


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=env)


def write_lines(path: Path, objects: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects),
                    encoding="utf-8")
    return path


def pristine_views() -> dict[tuple[str, str], dict]:
    """{(split, id): the view as realdata_release drew it, before any plant}: the same
    seeded draws, without planting."""
    sources, ntrex = real.load_sources(), real.load_ntrex()
    rng = random.Random(real.VIEW_SEED)
    return {(split, s["_id"]): real.make_view(split, s, ntrex, rng)
            for split in real.SPLITS for s in sources[split]}


def restoring(units: list[dict], pristine: dict, author: str = "test editor") -> list[dict]:
    """A correction per work-list unit giving back the text it had before the plant."""
    out = []
    for u in units:
        view = pristine[(u["source_split"], u["id"])]
        line = {"id": u["id"], "unit": u["unit"], "old_sha256": u["old_sha256"],
                "reason": "restored", "author": author}
        if u["unit"] in ("question", "answer"):
            line["text"] = view[u["unit"]]
        else:
            title, sentences, _ = view["context"][int(u["paragraph_id"][1:])]
            line["paragraph_id"] = u["paragraph_id"]
            if u["unit"] == "title":
                line["text"] = title
            elif u["unit"] == "sentence":
                line.update(sentence_index=u["sentence_index"],
                            text=sentences[u["sentence_index"]])
            else:
                line["sentences"] = sentences
        out.append(line)
    return out


def plus_release(folder: Path, sources: int, untranslated: int) -> dict:
    """An XHotpotQA+-shaped release of real aligned text (bench/realtext.py): 24 views per
    source sharing one context; `untranslated` sentences per context left in English."""
    sys.path.insert(0, str(REPO / "bench"))
    import realtext
    return realtext.build(folder, sources=sources, untranslated=untranslated)


def aligned_translation(english: str, language: str, ntrex: dict) -> str:
    """The NTREX line in `language` aligned with an English NTREX line."""
    return ntrex[language][ntrex["en"].index(english)]


def toolkit(tmp: Path) -> Path | None:
    """A directory holding the toolkit's scripts/ and src/, or None."""
    named = os.environ.get("XHOTPOTQA_TOOLKIT")
    if named and (Path(named) / "scripts" / "build_hf_public_v1.py").is_file():
        return Path(named)
    if not TOOLKIT_MIRROR.is_dir():
        return None
    target = tmp / "toolkit"
    target.mkdir(exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(TOOLKIT_MIRROR), "archive", "HEAD",
                              "scripts", "src"], capture_output=True)
    if archive.returncode:
        return None
    subprocess.run(["tar", "x", "-C", str(target)], input=archive.stdout, check=True)
    return target
