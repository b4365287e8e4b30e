"""The numba cache states of issue 26, built by child scripts (`python -c SCRIPT …` with
NUMBA_CACHE_DIR set): shared by tests/test_retrieval.py and bench/retrieval.py.

RANX_WARM   argv: QRELS RUN — compile (and cache) ranx's kernels on these files
STRIP       argv: CACHE TYPE — delete the cached specialisations whose signature names TYPE
            (e.g. "UnicodeCharSeq(3)"), printing how many: the "mixed" state
"""

RANX_WARM = """
import sys
from ranx import Qrels, Run, evaluate
qrels, run = Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec")
evaluate(qrels, run.make_comparable(qrels), ["hit_rate@1", "hit_rate@5", "hit_rate@20"],
         return_mean=False)
"""
STRIP = """
import pickle, sys, pathlib
removed = 0
for index in pathlib.Path(sys.argv[1]).rglob("*.nbi"):
    with index.open("rb") as stream:
        pickle.load(stream)
        _, overloads = pickle.loads(stream.read())
    for key, name in overloads.items():
        if sys.argv[2] in str(key[0]) and (index.parent / name).exists():
            (index.parent / name).unlink()
            removed += 1
print(removed)
"""
