"""The shared statistics module: the resampling designs against direct computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from audit.analysis import stats


def test_rng_for_is_keyed_and_reproducible():
    a = stats.rng_for(7, "answer_f1", "S4").integers(0, 1000, 5)
    assert list(a) == list(stats.rng_for(7, "answer_f1", "S4").integers(0, 1000, 5))
    assert list(a) != list(stats.rng_for(7, "answer_f1", "S2").integers(0, 1000, 5))


def test_group_means_resample_within_groups_with_fixed_sizes():
    values = np.array([0.0, 1.0, 1.0, 0.5, 0.25, 0.25, 1.0])
    groups = np.array([0, 0, 0, 1, 1, 1, -1])   # the last item is in no group
    result = stats.group_means(values, groups, 3, 4000, np.random.default_rng(1))
    assert list(result.n) == [3, 3, 0]
    assert result.mean[0] == pytest.approx(2 / 3) and result.mean[1] == pytest.approx(1 / 3)
    assert np.isnan(result.mean[2]) and np.isnan(result.replicates[:, 2]).all()
    # A resample of group 0 is k/3 with k ~ Binomial(3, 2/3): every value in {0, 1/3, 2/3, 1}
    # and the frequencies follow that law.
    k = np.round(result.replicates[:, 0] * 3).astype(int)
    assert set(k) <= {0, 1, 2, 3}
    expected = sps.binom.pmf(np.arange(4), 3, 2 / 3)
    assert np.allclose(np.bincount(k, minlength=4) / 4000, expected, atol=0.03)
    # Group 1 can only mix 0.5 and 0.25 three times: its replicates stay in [0.25, 0.5].
    assert result.replicates[:, 1].min() >= 0.25 and result.replicates[:, 1].max() <= 0.5


def test_group_means_equal_the_item_index_bootstrap_in_distribution():
    rng = np.random.default_rng(3)
    values = rng.choice([0.0, 0.4, 2 / 3, 1.0], size=300, p=[0.3, 0.1, 0.2, 0.4])
    fast = stats.group_means(values, np.zeros(300, int), 1, 20000, rng).replicates[:, 0]
    slow = values[rng.integers(0, 300, (20000, 300))].mean(axis=1)
    assert fast.mean() == pytest.approx(slow.mean(), abs=2e-3)
    assert fast.std() == pytest.approx(slow.std(), rel=0.03)
    assert np.percentile(fast, 2.5) == pytest.approx(np.percentile(slow, 2.5), abs=5e-3)


def test_stratified_mean_keeps_design_weights():
    values = np.array([80.0, 90, 100, 100, 70])
    strata = np.array([0, 0, 1, 1, 2])
    estimate, replicates, parts = stats.stratified_mean(
        values, strata, 3, 1000, np.random.default_rng(0), weights=np.array([4, 1, 1]))
    assert estimate == pytest.approx((4 * 85 + 100 + 70) / 6)
    assert replicates.shape == (1000,)
    # Strata with one distinct value never move; only stratum 0 varies (80 or 90 draws).
    assert set(np.round(replicates * 6 - 170, 6)) <= {320.0, 340.0, 360.0}


def test_percentile_interval_and_p_value():
    replicates = np.concatenate([np.arange(1, 101, dtype=float), [np.nan]])
    low, high, defined = stats.percentile_interval(replicates)
    assert defined == 100 and low == pytest.approx(3.475) and high == pytest.approx(97.525)
    assert stats.bootstrap_p_value(np.arange(1, 101, dtype=float)) == pytest.approx(2 / 101)
    assert stats.bootstrap_p_value(np.array([-1.0, 1.0])) == 1.0
    lows, highs, n = stats.percentile_intervals(np.column_stack([replicates, replicates * 2]))
    assert list(n) == [100, 100] and highs[1] == pytest.approx(2 * 97.525)


def test_holm_matches_the_hand_computation():
    p = [0.01, 0.04, 0.03, np.nan, 0.005]
    # Sorted 0.005, 0.01, 0.03, 0.04 with multipliers 4, 3, 2, 1, made monotone.
    assert list(np.round(stats.holm(p), 6))[:3] == [0.03, 0.06, 0.06]
    assert np.isnan(stats.holm(p)[3]) and stats.holm(p)[4] == pytest.approx(0.02)


def test_wilson_interval():
    low, high = stats.wilson_interval(145, 150)
    assert low == pytest.approx(0.9244, abs=1e-4) and high == pytest.approx(0.9857, abs=1e-4)
    assert np.isnan(stats.wilson_interval(0, 0)[0])


def test_cluster_bootstrap_item_and_cluster_weighted_means():
    clusters = np.array(["a", "a", "b", "c", "c", "c"])
    values = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    boot = stats.ClusterBootstrap(clusters, 600, 5, "test")
    estimate, replicates = boot.means(values)
    assert estimate[0, 0] == pytest.approx(0.5) and replicates.shape == (600, 1, 1)
    by_cluster, _ = boot.means(values, per="cluster")
    assert by_cluster[0, 0] == pytest.approx((0.5 + 1 + 1 / 3) / 3)
    # Replicate r: Σ_c w_rc·sum_c / Σ_c w_rc·size_c with the weights the object draws.
    weights = np.concatenate(list(boot._weight_chunks()))
    sums, sizes = np.array([1.0, 1.0, 1.0]), np.array([2.0, 1.0, 3.0])
    assert np.allclose(replicates[:, 0, 0], weights @ sums / (weights @ sizes))
    # Same seed and keys: the same draw, so two statistics through it are paired.
    again = stats.ClusterBootstrap(clusters, 600, 5, "test").means(values)[1]
    assert np.array_equal(again, replicates)


def test_cluster_bootstrap_masks_give_paired_group_replicates():
    rng = np.random.default_rng(2)
    clusters = rng.integers(0, 40, 400)
    values = rng.random((400, 2))
    masks = np.column_stack([clusters % 2 == 0, np.ones(400, bool)])
    boot = stats.ClusterBootstrap(clusters, 300, 1)
    estimate, replicates = boot.means(values, masks)
    assert estimate.shape == (2, 2) and replicates.shape == (300, 2, 2)
    assert estimate[0, 1] == pytest.approx(values[masks[:, 0], 1].mean())
    # Chunks regenerate the same weights whatever the chunk boundaries.
    assert np.array_equal(boot.means(values, masks)[1], replicates)


def test_cluster_mean_keeps_the_review_reports_semantics():
    values = np.array([1.0, 0.0, 1.0, 1.0])
    mean, low, high = stats.cluster_mean(values, np.array(["x", "x", "y", "z"]), 500,
                                         np.random.default_rng(0))
    assert mean == 0.75 and 0 <= low <= mean <= high <= 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rank_correlations_from_tables_equal_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    human = rng.choice([1, 2, 3, 3.5, 4, 4.5, 5], 90)
    judge = np.clip(np.round(human * 18 + rng.normal(0, 12, 90)), 0, 100)
    result = stats.rank_correlations(judge, human, 500, np.random.default_rng(0))
    assert result["spearman"][0] == pytest.approx(sps.spearmanr(judge, human).statistic)
    assert result["kendall_tau_b"][0] == pytest.approx(sps.kendalltau(judge, human).statistic)
    for estimate, low, high in result.values():
        assert low < estimate < high


def test_replicate_tables_are_the_tables_of_resampled_items():
    x, y = np.array([1, 2, 2, 3]), np.array([5, 5, 4, 4])
    table, tables = stats.contingency_tables(x, y, 50, np.random.default_rng(4))
    assert table.tolist() == [[0, 1], [1, 1], [1, 0]]
    idx = stats.resample_indices(4, 50, np.random.default_rng(4))
    first = sps.kendalltau(x[idx[0]], y[idx[0]]).statistic
    assert stats.kendall_tau_b_of_tables(tables[0]) == pytest.approx(first, nan_ok=True)


def test_holm_agrees_with_statsmodels():
    from statsmodels.stats.multitest import multipletests
    p = np.random.default_rng(5).random(17) ** 3
    assert np.allclose(stats.holm(p), multipletests(p, method="holm")[1])


def test_cluster_bootstrap_partitions_equal_masks():
    rng = np.random.default_rng(8)
    clusters, values = rng.integers(0, 30, 200), rng.random((200, 3))
    codes = rng.integers(-1, 4, 200)
    boot = stats.ClusterBootstrap(clusters, 100, 3)
    by_codes = boot.means(values, [(codes, 4)])
    by_masks = boot.means(values, np.column_stack([codes == g for g in range(4)]))
    assert np.allclose(by_codes[0], by_masks[0], equal_nan=True)
    assert np.allclose(by_codes[1], by_masks[1], equal_nan=True)


def test_mcnemar_exact_on_discordant_pairs():
    before = np.array([1, 1, 1, 1, 1, 1, 0, 0, 1, 0], bool)
    after = np.array([0, 0, 0, 0, 0, 1, 0, 1, 1, 0], bool)
    b, c, p = stats.mcnemar_exact(before, after)
    # b = 5 (yes → no), c = 1: two-sided binomial(6, ½) tail 2·(1 + 6)/64.
    assert (b, c) == (5, 1) and p == pytest.approx(14 / 64)
    assert stats.mcnemar_exact(before, before)[2] == 1.0


def test_paired_source_difference_as_issue_13_uses_it():
    """ΔR: per-source defect indicators of two versions, one resample of sources for both."""
    rng = np.random.default_rng(9)
    old = rng.random(500) < 0.06
    new = old & (rng.random(500) < 0.3)
    boot = stats.ClusterBootstrap(np.arange(500), 2000, 1, "delta-r")
    estimate, replicates = boot.means(new.astype(float) - old.astype(float))
    assert estimate[0, 0] == pytest.approx(new.mean() - old.mean())
    low, high, _ = stats.percentile_interval(replicates[:, 0, 0])
    assert low < estimate[0, 0] < high < 0
