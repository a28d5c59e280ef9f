"""The read-path screen against issue 45's first held-out corpus (tests/fixtures/screen_fresh/fresh_1.jsonl,
sha256 98e39481…), written by someone who had not read the screen. Its first pass, before any change, caught
24 of 172 attacks (14.0%) and flagged 8 of 209 benign texts (3.8%); the screen was then fixed with it in view,
so these figures are a floor against regressions, not a measure of how the screen generalises (that is the
sealed second corpus's first pass: tests/fixtures/screen_fresh/sealed/README.md)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bench.screen_fresh import score

CORPUS = Path(__file__).parents[1] / "fixtures" / "screen_fresh" / "fresh_1.jsonl"
DIGEST = "98e394810dac2459d99d822a89e3f611a6c2ba9a956169d07158fe5b0290e98b"
MIN_RECALL = 0.95  # 166/172 when this floor was set
MAX_FALSE_POSITIVES = 0.07  # 14/209 then, most of them security write-ups quoting attacks


@pytest.fixture(scope="module")
def report() -> dict:
    data = CORPUS.read_bytes()
    assert hashlib.sha256(data).hexdigest() == DIGEST, "the held-out corpus must stay as its author wrote it"
    return score([json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()])


def test_recall_on_the_first_held_out_corpus_stays_above_its_floor(report):
    recall = report["attacks"]["all"]["all"]
    assert recall["ratio"] >= MIN_RECALL, (recall, report["missed"])


def test_false_positives_on_the_first_held_out_corpus_stay_below_their_ceiling(report):
    benign = report["benign"]["all"]["all"]
    assert benign["ratio"] <= MAX_FALSE_POSITIVES, (benign, report["false_positives"])
