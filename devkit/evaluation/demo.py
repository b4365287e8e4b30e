"""The data/evaluation_demo/ files the Evaluate, Judge and Retrieval pages open on, rebuilt
deterministically from the bundled demo release (`python -m devkit eval-demo`)."""

from __future__ import annotations

from pathlib import Path

from audit.io import release as readers
from audit.language import descriptors
from audit.settings import DEMO_EVALUATION, DEMO_RELEASE, demo_sources
from devkit.evaluation import demo_reviews, judge_synth, synthetic

SMALL_DESIGN = {"paragraph": 8, "question": 2, "answer": 2}


def make_demo(out: Path = DEMO_EVALUATION) -> dict:
    """Regenerate the demo's evaluation inputs from the demo release, deterministically."""
    release = readers.open_release(DEMO_RELEASE, demo_sources())
    table = descriptors.descriptors(release)
    out.mkdir(parents=True, exist_ok=True)
    written = [synthetic.write_predictions(release, table, out / "predictions-a.jsonl",
                                           seed=1, skill=0.55),
               synthetic.write_predictions(release, table, out / "predictions-b.jsonl",
                                           seed=2, skill=0.65)]
    for profile in ("v1", "v2"):
        generated = judge_synth.generate(profile, release=release, design=SMALL_DESIGN)
        written.append(judge_synth.write(generated, out / f"judge-{profile}.parquet"))
    written.append(demo_reviews.write(out / "judge-v1.parquet", out / "human-adequacy.parquet"))
    written += synthetic.write_retrieval_demo(out)
    return {"written": [str(p) for p in written]}
