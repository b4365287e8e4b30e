"""One scanned release, one DuckDB connection, several app sessions at once (issue 19,
defect 2): Review-page work (unit table, unit texts), Overview (status disagreements,
descriptors) and status reads in threads on the same cached scan each get the answer they
get alone. Before, a fixed registered name on the shared connection was replaced or
unregistered under another session's query."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from audit.engine import scan
from audit.language import descriptors
from audit.review import sampling

ROUNDS = 6


@pytest.fixture(scope="module")
def scanned():
    return scan.scan_release()


def test_sessions_on_one_connection_each_get_their_own_answer(scanned):
    release = scanned.release
    units = sampling.build_units(scanned)
    batches = [sampling.sample(units, ["unit"], seed=seed, per_stratum=2).units
               for seed in range(4)]
    expected_texts = [[t["item_id"] for t in sampling.unit_texts(release, b)]
                      for b in batches]
    assert len({tuple(t) for t in expected_texts}) == 4       # four different answers
    expected_units = units.num_rows
    expected_disagreements = scan.status_disagreements(scanned).num_rows
    expected_descriptors = descriptors.descriptors(release).num_rows

    def session(k: int) -> tuple:
        which = k % 4
        texts = [t["item_id"] for t in sampling.unit_texts(release, batches[which])]
        return (which, texts, sampling.build_units(scanned).num_rows,
                scan.status_disagreements(scanned).num_rows,
                descriptors.descriptors(release).num_rows)
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(session, range(4 * ROUNDS)))
    for which, texts, n_units, n_disagreements, n_descriptors in answers:
        assert texts == expected_texts[which]
        assert (n_units, n_disagreements, n_descriptors) == (
            expected_units, expected_disagreements, expected_descriptors)
