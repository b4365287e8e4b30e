"""The view (release, sources, policy, filter) round-trips through the URL, and the scan
cache builds each key once."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlparse

from audit.analysis.browse import Filters
from workbench.serving import ScanCache
from workbench.viewstate import View

QUERY = {"release": "data/x/*.parquet", "source_train": "data/hotpot_train.json",
         "policy": "data/policy.toml", "question_language": "fa,ur", "stratum": "S4",
         "status": "accepted", "gold_language": "de", "gold_mode": "all", "k_c_min": "3"}


def test_a_view_round_trips_through_its_url():
    view = View.from_query({**QUERY, "row": "7", "unknown": "x"})
    assert view.release == "data/x/*.parquet"
    assert view.sources == (("train", "data/hotpot_train.json"),)
    assert view.policy == "data/policy.toml"
    assert view.filters == Filters(question_language=["fa", "ur"], stratum=["S4"],
                                   status=["accepted"], gold_language=["de"], gold_mode="all",
                                   k_c_min=3)
    assert view.to_query() == QUERY
    assert View.from_query(view.to_query()) == view
    href = view.href("Instance", row=7)
    assert href.startswith("./Instance?")
    assert {k: v[0] for k, v in parse_qs(urlparse(href).query).items()} == {**QUERY,
                                                                          "row": "7"}
    assert view.describe_filter() == ("question_language fa, ur · gold_language de · "
                                      "gold_mode all · stratum S4 · status accepted · "
                                      "k_c_min 3")
    assert View().href("Browse") == "./Browse" and View().describe_filter() == "no filter"


def test_the_browse_page_belongs_to_the_view_and_a_new_filter_starts_at_page_one():
    view = View.from_query({"stratum": "S4", "page": "3"})
    assert view.page == 3 and view.to_query() == {"stratum": "S4", "page": "3"}
    assert "page=3" in view.href("Instance", row=5)
    assert view.with_filters(Filters(stratum=["S3"])).to_query() == {"stratum": "S3"}
    assert View.from_query({"page": "abc"}).page is None
    assert View.from_query({"page": "1"}).to_query() == {}


def test_hostile_values_stay_inside_the_query_string():
    view = View.from_query({"release": '"><script>x</script>&row=1#', "stratum": "a&b=c"})
    href = view.href("Instance", row=3)
    parsed = parse_qs(urlparse(href).query)
    assert parsed["release"] == ['"><script>x</script>&row=1#'] and parsed["row"] == ["3"]
    assert "<" not in href and '"' not in href and "#" not in href


def test_the_scan_cache_builds_a_key_once_and_keeps_the_latest_few():
    cache, built, gate = ScanCache(size=2), [], threading.Event()

    def build(name):
        def run():
            gate.wait(5)
            built.append(name)
            return name
        return run

    threads = [threading.Thread(target=cache.get, args=(("a",), build("a"))) for _ in range(4)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert built == ["a"]
    assert cache.get(("b",), build("b")) == "b" and cache.get(("c",), build("c")) == "c"
    assert cache.cached(("a",)) is None and cache.cached(("c",)) == "c"
