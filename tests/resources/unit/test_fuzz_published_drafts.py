"""Conformance of the published draft schema: drafts generated from it (hypothesis-jsonschema) through the
Resource Gateway's Analyze path, in process.

A draft the published schema accepts is answered, or refused for what only the catalog or a bound can tell (an
id, a field's type or exposure, an output name, a join, time, a budget): never INTERNAL, never a refusal the
schema could have said (DRAFT_SCHEMA, a shape, a missing key), and every refusal says where and what next.
The strategy (tests/fixtures/published_drafts.py) is the gateway's published schema with recursion cut and ids
narrowed to this catalog; every draft is checked against the published schema itself before it is sent.
`make test` tries a modest number; `make fuzz` twenty times as many. With TESSERA_CONFORMANCE_REPORT set, the
counts (drafts, accepted, refused by reason) are written there as JSON.
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.resources.catalog import CatalogEntity, CatalogField, CatalogMetric, CatalogRelationship
from shared.data.analysis_draft import DRAFT_SCHEMA_JSON
from shared.rpc.errors import status_of
from shared.rpc.refusals import Refusal
from tests.fixtures.fuzz import fuzz_settings
from tests.fixtures.published_drafts import drafts
from tests.resources.conftest import Session
from tests.resources.unit.test_fuzz_analyze import seeded_gateway

CALL_DEADLINE = 20.0
PUBLISHED = json.loads(DRAFT_SCHEMA_JSON)
VALIDATOR = jsonschema.Draft7Validator(PUBLISHED)
# What a schema-valid draft may still be refused for: what only the catalog, the data or a bound can tell.
# (Ids are narrowed to this catalog's visible ones and the capability has seen them all, and each draft runs in a
# turn of its own: an unknown or unseen id, or a spent budget, would be a fault here, so none is allowed.)
FOR_MEANING = {
    "FIELD_NOT_EXPOSED", "OPERATOR_TYPE", "VALUE_TYPE",
    "AGGREGATION_TYPE", "AGGREGATION_NOT_ALLOWED", "GRAIN_NOT_TEMPORAL", "GRAIN_REQUIRED", "UNKNOWN_OUTPUT",
    "DUPLICATE_OUTPUT", "CALCULATION_NEEDS_TIME", "CALCULATION_NOT_ADDITIVE", "FAN_OUT", "FILTER_THROUGH_FAN_OUT",
    "AMBIGUOUS_PATH", "ROLE_NOT_ON_PATH", "NO_JOIN_PATH", "HAS_NOT_MANY", "HAS_SHAPE", "SAME_ROLE",
    "NO_REFERENCE_DATE",
    # bounds and budgets
    "LIMIT_OVER_CAP", "PREDICATE_TOO_DEEP", "DRAFT_TOO_LARGE", "QUERY_TIMEOUT",
}
COUNTS: Counter = Counter()


@pytest.fixture(scope="module")
def gateway(request, cert_dir, tmp_path_factory):
    built = seeded_gateway("sqlite", request, cert_dir, tmp_path_factory)
    yield built
    built.close()


@pytest.fixture(scope="module")
def session(gateway) -> Session:
    return Session(gateway)


@pytest.fixture(scope="module")
def published(gateway):
    """Drafts from the published schema, with this catalog's model-visible ids."""
    kinds = {"entity": CatalogEntity, "field": CatalogField, "metric": CatalogMetric,
             "relationship": CatalogRelationship}
    ids = {kind: sorted(i for i, item in gateway.catalog.by_id.items() if isinstance(item, cls)
                        and getattr(item, "model_visible", True)) for kind, cls in kinds.items()}
    return drafts(PUBLISHED, ids)


@pytest.fixture(scope="module")
def worker():
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="published-drafts")
    yield pool
    pool.shutdown(wait=False, cancel_futures=True)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    target = os.environ.get("TESSERA_CONFORMANCE_REPORT")
    if target and COUNTS:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        refused = {k: v for k, v in sorted(COUNTS.items()) if k not in ("drafts", "accepted")}
        Path(target).write_text(json.dumps({"drafts": COUNTS["drafts"], "accepted": COUNTS["accepted"],
                                            "refused": refused, "internal": 0}, indent=2) + "\n")


@fuzz_settings(100)
@given(data=st.data())
def test_schema_valid_drafts_are_answered_or_refused_only_for_their_meaning(gateway, session, published, worker,
                                                                             data):
    draft = data.draw(published)
    assert VALIDATOR.is_valid(draft), draft  # the strategy only ever narrows the published schema
    COUNTS["drafts"] += 1
    call = worker.submit(gateway.analyze, session.session_id, f"t-{uuid.uuid4().hex[:8]}", json.dumps(draft),
                         session.capability)
    try:
        call.result(timeout=CALL_DEADLINE)
    except Refusal as refused:
        assert status_of(refused).code not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), (refused, draft)
        assert refused.reason in FOR_MEANING, (refused, draft)  # never what the schema could have said
        pointer = refused.metadata.get("pointer", "")
        assert (pointer == "" or pointer.startswith("/")) and refused.metadata["next_step"], refused
        COUNTS[refused.reason] += 1
        return
    except TimeoutError:
        pytest.fail(f"Analyze did not answer within {CALL_DEADLINE} s: {json.dumps(draft)[:500]}")
    COUNTS["accepted"] += 1
