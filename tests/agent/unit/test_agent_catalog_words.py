"""What the agent's tools hand a model of the gateway's words for questions: a date field's event verbs, the
words that named a matched value (and whether they were a near spelling of it), and what relative periods count
from; each kept by its tool's output schema."""

from __future__ import annotations

import asyncio

import jsonschema

from services.agent.contracts import CONTRACTS
from services.agent.tools import TurnState, TurnTools
from shared.data.analysis_draft import DRAFT_SCHEMA_SHA256, DRAFT_SCHEMA_VERSION
from tessera.common.v1 import common_pb2
from tessera.resources.v1 import resources_pb2 as res

CUSTOMERS = res.Entity(
    entity_id="ent_customersxxx", label="Customer",
    fields=[res.Field(field_id="fld_signupxxxxxx", label="Signup date", type=common_pb2.COLUMN_TYPE_DATE,
                      exposure=res.FIELD_EXPOSURE_BOUNDED_VALUES, event_verbs=["signed up", "joined"]),
            res.Field(field_id="fld_segmentxxxxx", label="Customer segment", type=common_pb2.COLUMN_TYPE_STRING,
                      exposure=res.FIELD_EXPOSURE_BOUNDED_VALUES)])


class WordsResources:
    """A gateway that answers with the new words: event verbs, matched text, a time anchor."""

    async def InspectContext(self, request, timeout=None):
        return res.InspectContextResponse(dataset_label="Retail", catalog_fingerprint="fp", capability_token="t0",
                                          draft_schema_version=DRAFT_SCHEMA_VERSION,
                                          draft_schema_sha256=DRAFT_SCHEMA_SHA256, time_anchor="latest_data")

    async def InspectCatalog(self, request, timeout=None):
        return res.InspectCatalogResponse(entities=[CUSTOMERS], capability_token="t1")

    async def Probe(self, request, timeout=None):
        matches = res.ValueMatches(matches=[
            res.ValueMatch(field_id="fld_segmentxxxxx", entity_id="ent_customersxxx", value="small_business",
                           matched_text="small business"),
            res.ValueMatch(field_id="fld_segmentxxxxx", entity_id="ent_customersxxx", value="enterprise",
                           matched_text="enterprize", approximate=True)])
        return res.ProbeResponse(kind=request.kind, probes_remaining=1, value_matches=matches, capability_token="t2")


def tools() -> TurnTools:
    async def ready() -> dict[str, str]:
        return {"resources": "SERVING", "host": "SERVING", "capabilities": "SERVING"}

    state = TurnState(actor=common_pb2.ActorAssertion(), session_id="ses_1", turn_id="trn_1", surface_id="srf_1",
                      base_revision_id="rev_0")
    return TurnTools(state, WordsResources(), host=None, peers_ready=ready)


def shown(tool: str, result: dict) -> dict:
    """The result as the model receives it: projected through the tool's output schema, and valid against it."""
    contract = CONTRACTS[tool]
    projected = contract.project(result)
    jsonschema.Draft7Validator(contract.output_schema).validate(projected)
    return projected


def test_a_date_field_shows_its_event_verbs_and_other_fields_show_none():
    result = shown("inspect_catalog", asyncio.run(tools().inspect_catalog({"question": "how many signed up"})))
    signup, segment = result["entities"][0]["fields"]
    assert signup["event_verbs"] == ["signed up", "joined"]
    assert "event_verbs" not in segment


def test_a_value_match_says_which_words_named_the_value_and_whether_they_were_a_near_spelling():
    result = shown("probe_data", asyncio.run(tools().probe_data(
        {"kind": "value-match", "text": "Small business or enterprize"})))
    said, near = result["matches"]
    assert said == {"field_id": "fld_segmentxxxxx", "entity_id": "ent_customersxxx",
                    "untrusted_value": "small_business", "matched_text": "small business", "approximate": False}
    assert (near["untrusted_value"], near["matched_text"], near["approximate"]) == ("enterprise", "enterprize", True)


def test_the_context_says_what_relative_periods_count_from():
    result = shown("inspect_current_context", asyncio.run(tools().inspect_current_context({})))
    assert result["time_anchor"] == "latest_data"
