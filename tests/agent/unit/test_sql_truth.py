"""The held-out sets' yardstick: shown rows against their author's SQL rows."""

from __future__ import annotations

import datetime as dt

from tests.fixtures.golden.sql_truth import key_text, mismatch, same_figure, top_one

TRUTH = [("web", 120.5), ("store", 80.25)]


def test_the_same_rows_in_any_order_and_with_extra_columns_match():
    assert mismatch(TRUTH, [["store", "80.25", 0.4], ["web", "120.50", 0.6]], keys=1, ordered=False) is None


def test_a_wrong_figure_a_missing_row_or_an_extra_row_does_not():
    assert "no shown row" in mismatch(TRUTH, [["web", "120.5"], ["store", "80.30"]], keys=1, ordered=False)
    assert "1 rows shown" in mismatch(TRUTH, [["web", "120.5"]], keys=1, ordered=False)
    assert "3 rows shown" in mismatch(TRUTH, [["web", "120.5"], ["store", "80.25"], ["phone", 1]], keys=1,
                                      ordered=False)


def test_order_counts_when_the_author_said_so():
    assert mismatch(TRUTH, [["store", "80.25"], ["web", "120.5"]], keys=1, ordered=False) is None
    assert "order" in mismatch(TRUTH, [["store", "80.25"], ["web", "120.5"]], keys=1, ordered=True)


def test_rows_whose_figures_tie_may_come_in_either_order():
    truth = [("wrong size", 60), ("defective", 44), ("not as described", 44), ("damaged", 30)]
    tied = [["wrong size", 60], ["not as described", 44], ["defective", 44], ["damaged", 30]]
    assert mismatch(truth, tied, keys=1, ordered=True) is None
    assert "order" in mismatch(truth, [tied[0], tied[3], tied[1], tied[2]], keys=1, ordered=True)


def test_a_ranking_answers_which_when_the_one_asked_for_comes_first():
    assert mismatch([("web", 9)], [["web", 9], ["store", 5]], keys=1, ordered=True) is None
    assert "first shown row" in mismatch([("web", 9)], [["store", 9], ["web", 5]], keys=1, ordered=True)
    assert "2 rows shown" in mismatch([("web", 9)], [["web", 9], ["store", 5]], keys=1, ordered=False)


def test_time_buckets_match_by_their_first_day_and_figures_to_the_cent_or_a_millionth():
    assert key_text("2024-01-01T00:00:00") == key_text(dt.date(2024, 1, 1)) == "2024-01-01"
    assert mismatch([("2024-01-01", 5)], [["2024-01-01T00:00:00", 5]], keys=1, ordered=False) is None
    assert same_figure("1000.004", 1000.0) and not same_figure("1000.02", 1000.0)
    assert same_figure(0.1234564, 0.1234567) and not same_figure(0.12346, 0.12345)


def test_a_headline_row_must_carry_every_figure():
    assert mismatch([(1250, 0.05)], [[1250, "0.05"]], keys=0, ordered=False) is None
    assert "no shown row" in mismatch([(1250, 0.05)], [[1250]], keys=0, ordered=False)
    assert mismatch([], [[1]], keys=0, ordered=False) == "the SQL returned no rows"


def test_a_null_figure_is_carried_by_an_empty_cell_only():
    first_year = [("2021-01-01", 108.5, None)]
    assert mismatch(first_year, [["2021-01-01T00:00:00", "108.5", None, None]], keys=1, ordered=False) is None
    assert "no shown row" in mismatch(first_year, [["2021-01-01T00:00:00", "108.5", 0.0]], keys=1, ordered=False)


def test_sql_that_orders_and_keeps_one_row_asks_which():
    assert top_one("SELECT m, COUNT(*) AS n FROM orders GROUP BY m\nORDER BY n DESC\nLIMIT 1\n")
    assert not top_one("SELECT m, COUNT(*) FROM orders GROUP BY m ORDER BY m LIMIT 10")
    assert not top_one("SELECT COUNT(*) FROM orders")


def test_a_ratio_the_sql_rounded_is_carried_by_its_exact_value():
    assert same_figure(0.10378323108384459, 0.1038) and same_figure("0.4917837", 0.4918)
    assert not same_figure(0.1032, 0.1038) and not same_figure(0.10378, 0.103)  # (0.103: not 0.1038)
    assert not same_figure(0.54, 0.5)  # a short figure is exact, not rounded


def test_money_under_ten_the_sql_rounded_to_the_cent_is_carried_by_its_exact_value():
    assert same_figure("9.4905", 9.49) and same_figure(5.994999, 5.99)
    assert not same_figure("9.4951", 9.49) and not same_figure(9.5, 9.49)
