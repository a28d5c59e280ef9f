"""What a model should do next after each refusal it can receive (§4, §9): one registry, keyed by reason.

A refusal a model can get (from the agent's tool bridge, the Resource Gateway, the host or the compiler)
carries, besides its reason and message, the JSON Pointer of the offending part, the allowed values or
the bound where there is one, and the next step from here. Refusals carry these in their ErrorInfo
metadata (compiler findings: location and hint), under these keys:

- `pointer`  where in what the model wrote: into the tool's arguments for the agent's own refusals; into
             the draft, the proposal or the probe for a peer's, which the agent re-roots under the tool's
             arguments (`/measures/0` becomes `/draft/measures/0`). Absent when the refusal is about the
             call as a whole (a budget, a token): the model then reads `""`.
- `allowed`  JSON text of a list: the values, keys or ids accepted there.
- `bound`    the limit, as a JSON number.
- `next_step` filled from NEXT_STEPS when the refusing code does not write a more specific one; a
             template may name other metadata keys (`{entity}`), filled where present.

Every reason and finding code the services define is either here or in NOT_FOR_MODELS, with why
(tests/contract/test_refusal_details.py walks them all).
"""

from __future__ import annotations

import json
import re

_IDS = "ids from this turn's inspect_catalog, describe_data or value-match results"

NEXT_STEPS: dict[str, str] = {
    # --- the agent's tool bridge and turn ---------------------------------------------------------------
    "CALL_ID_INVALID": "Call again with a call id of 1-128 characters.",
    "DUPLICATE_CALL_ID": "Use a new call id: the call with this one already ran and its result stands.",
    "CALL_LIMIT": "Stop calling tools and answer the person with what you have.",
    "UNKNOWN_TOOL": "Call one of the tools listed in allowed.",
    "ARGUMENTS_NOT_JSON": "Send the arguments as one JSON object of at most 256 KiB.",
    "ARGUMENTS_INVALID": "Change the arguments at pointer as the message says (the tool's input schema describes "
                         "every key), then call the tool again.",
    "ARGUMENTS_TOO_LARGE": "Send arguments of at most 1 MiB: fewer values or blocks.",
    "CANCELLED": "Stop: the person cancelled this turn.",
    "TOOL_FAILED": "Try the call once more; if it fails again, tell the person this step failed and answer "
                   "without it.",
    "REPAIR_LIMIT_REACHED": "Stop proposing: the last good display stays. Tell the person what could not be shown.",
    "TURN_BUDGET_SPENT": "Stop calling tools and answer the person with what you have; a new question starts a "
                         "new turn with a new budget.",
    "TURN_ENDED": "Call inspect_current_context to begin a new turn, then continue.",
    "PERSON_UNKNOWN": "Ask the person to sign in again: the access token names no person this deployment accepts.",
    # A call no Tessera service explained (shared.rpc.errors.error_details): nobody answered, or it broke on the way.
    "SERVICE_UNAVAILABLE": "Tell the person the service this step needs is not answering now (the message names "
                           "it), and answer without it.",
    "SERVICE_STOPPED": "Try the call once more (the service may have restarted); if it fails again, tell the person "
                       "this step failed and answer without it.",
    "SERVICE_FAILED": "Tell the person this step failed inside Tessera, and answer without it.",
    "TOOL_UNAVAILABLE": "Answer without this tool and say it was unavailable.",
    "INTERNAL": "Tell the person this step failed inside Tessera, and answer without it.",
    "UNKNOWN": "Tell the person this step failed inside Tessera, and answer without it.",
    "RESOURCES_UNAVAILABLE": "Try again shortly; if it persists, tell the person the data is not reachable now.",
    "CHANGE_TARGET_UNAVAILABLE": "Tell the person the records this action changes cannot be reached now; they "
                                 "may try again in a few seconds.",
    "DATABASE_UNAVAILABLE": "Try again shortly; if it persists, tell the person Tessera cannot reach its own records "
                            "now.",
    # --- the catalog and the capability token --------------------------------------------------------------
    "CAPABILITY_MISSING": "Call inspect_current_context first, then inspect_catalog; then repeat this call.",
    "CAPABILITY_INVALID": "Call inspect_current_context and inspect_catalog again, then use only " + _IDS + ".",
    "CAPABILITY_EXPIRED": "Call inspect_catalog again to renew access, then repeat this call.",
    "CATALOG_CHANGED": "The catalog changed: call inspect_current_context and inspect_catalog again; earlier ids no "
                       "longer work.",
    "UNKNOWN_ID": "Use " + _IDS + "; call inspect_catalog with the question's words to find the right one.",
    "ID_NOT_IN_SCOPE": "Call describe_data for {entity} first (or inspect_catalog with words that bring it in), "
                       "then repeat this call.",
    "WRONG_ID_KIND": "Put an id of the kind allowed there (ent_ entity, fld_ field, met_ metric, rel_ relationship), "
                     "as inspect_catalog or describe_data gave it.",
    # A request field out of its contract's bounds (shared/rpc/field_rules.py); the message says which bound.
    "FIELD_INVALID": "Change the value at pointer as the message says, then call the tool again.",
    # --- probes ------------------------------------------------------------------------------------------
    "PROBE_BUDGET_EXHAUSTED": "No probes are left this turn: go on with run_analysis (filter with the values you "
                              "have), or answer.",
    "PROBE_TARGET_MISSING": "Add the id this probe kind needs (field_id, or relationship_id for join-coverage), "
                            "from inspect_catalog or describe_data.",
    "PROBE_TEXT_UNEXPECTED": "Drop text: only value-match takes one.",
    "PROBE_TEXT_INVALID": "Send text: the person's words that name a value.",
    "PROBE_NOT_ALLOWED": "Probe a field whose exposure allows it (describe_data shows each field's exposure and "
                         "type), or filter with the values you know.",
    # --- drafts ------------------------------------------------------------------------------------------
    "DRAFT_NOT_JSON": "Send the draft as one JSON object.",
    "DRAFT_TOO_LARGE": "Make the draft smaller (fewer conditions and values); it is over the bound.",
    "DRAFT_SCHEMA": "Change the draft at pointer as the message says (run_analysis's input schema describes every "
                    "key), then call run_analysis again.",
    "FIELD_NOT_EXPOSED": "Use this field only as its exposure allows (describe_data shows it): aggregate-only fields "
                         "go inside sum, avg or a count; filter-only fields only in a filter.",
    "DUPLICATE_OUTPUT": "Give every measure, dimension, calculation and listed field an id of its own.",
    "UNKNOWN_OUTPUT": "Name one of the outputs listed in allowed.",
    "AGGREGATION_NOT_ALLOWED": "Use sum, avg, count or count_distinct on this field: min and max would show single "
                               "values.",
    "AGGREGATION_TYPE": "Use count or count_distinct on this field, or sum or avg of a number field.",
    "GRAIN_NOT_TEMPORAL": "Drop the grain, or use one allowed for this field (allowed lists them).",
    "GRAIN_REQUIRED": "Add a grain to this dimension: one of allowed.",
    "CALCULATION_NEEDS_TIME": "Add a dimension on a date or time field, with a grain (name it with time when there "
                              "are several), or use another calculation.",
    "CALCULATION_NOT_ADDITIVE": "Use cumulative only over a count or a sum.",
    "PREDICATE_TOO_DEEP": "Flatten the conditions: all/any/not/has nest at most {bound} levels.",
    "VALUE_TYPE": "Write the value as the field's type needs: {expected}.",
    "OPERATOR_TYPE": "Use an operator allowed for this field's type (listed in allowed).",
    "SAME_ROLE": "Name two different roles in via: two different lists of relationship ids.",
    "HAS_SHAPE": "Inside has, use fields of one related entity (and of what it belongs to).",
    "HAS_NOT_MANY": "Filter on the related row directly, without has: each record has at most one.",
    "FILTER_THROUGH_FAN_OUT": "Wrap this condition in has, so a record is kept when one of its related rows passes.",
    "FAN_OUT": "Measure this at its own entity (a metric of {measure_entity}), or use count_distinct, min or max: "
               "this join would count its rows more than once.",
    "AMBIGUOUS_PATH": "Add via at pointer with one of the roles in allowed (each a list of relationship ids).",
    "ROLE_NOT_ON_PATH": "Use a via whose relationships lead from the measure's entity to the field's (describe_data "
                        "lists relationships), or drop via.",
    "NO_JOIN_PATH": "Use fields related to the measure's entity (describe_data lists relationships), or analyse "
                    "them in separate drafts.",
    "LIMIT_OVER_CAP": "Ask for at most {bound} rows.",
    "NO_REFERENCE_DATE": "This field has no values to count back from: filter with dates (between) instead, or drop "
                         "the period.",
    "QUERY_TIMEOUT": "Call run_analysis again asking for less: a narrower filter, fewer dimensions or a coarser "
                     "grain.",
    "ANALYSIS_BUDGET_SPENT": "No analyses are left this turn: present what you have with present_ui, or answer.",
    # The same draft asked again with only its bounds changed (a threshold search): budget says which bound held.
    "ORACLE_PATTERN": "Stop changing this draft's bounds: present the results you have with present_ui (the person "
                      "sees their values there), or ask the person which one bound they want.",
    # --- the display (host) --------------------------------------------------------------------------------
    "PROPOSAL_TOO_LARGE": "Send a proposal of at most {bound} bytes: fewer or smaller blocks.",
    "OFFER_EXPIRED": "Call present_ui without a proposal again (a fresh slice), then send the proposal with its "
                     "ids.",
    "SLICE_UNKNOWN": "Call present_ui without a proposal first, then send the proposal with that slice's ids.",
    "REVISION_CONFLICT": "The display changed meanwhile: call present_ui without a proposal again and send a "
                         "snapshot.",
    "BASE_REVISION_UNKNOWN": "Call present_ui with a snapshot ({version: 1, id, blocks}) instead of a patch.",
    "PROPOSAL_ID_REUSED": "Call present_ui with the proposal again: a new id is made for every call.",
    "TURN_UNKNOWN": "Call inspect_current_context to begin a new turn.",
    # --- people's passkeys and the operator key (the broker's refusals to web and the CLI) --------------------
    "OPERATOR_KEY_NOT_FOR_TENANT": "Approve it with the person's passkey in the browser, or have the policy list "
                                   "this tenant in the action's operator_tenants.",
    "PASSKEY_SIGNATURE_REQUIRED": "Confirm the new passkey with one you already have, or ask the operator for a "
                                  "link that replaces your passkeys (tessera persons enroll --replace).",
    "ASSERTION_NOT_FOR_THIS_ENROLLMENT": "Add the passkey again from this sign-in's page: the existing passkey "
                                         "must confirm this enrollment and this new passkey.",
    # --- compiler findings (dotted codes; their location is the pointer, their hint the next step) -----------
    "slice.not-frozen": "Call present_ui without a proposal first to get the slice, then send the proposal.",
    "slice.offer-refused": "Run the analysis again (run_analysis), then call present_ui without a proposal again.",
    "proposal.not-json": "Send the proposal as one JSON object.",
    "proposal.duplicate-key": "Write each key once.",
    "proposal.invalid-text": "Send text without lone surrogates or invalid characters.",
    "proposal.too-large": "Send a smaller proposal: fewer or smaller blocks (the bound is in the message).",
    "proposal.envelope-invalid": "Fix the proposal's top level: {version: 1, id, title?, blocks} or {version: 1, "
                                 "patch: {base_revision, operations}}.",
    "proposal.unprocessable": "Send a snapshot that follows present_ui's schema exactly.",
    "proposal.block-invalid": "Write each block as {id, component, data, children?} with only those keys.",
    "proposal.too-many-blocks": "Use at most {bound} blocks.",
    "proposal.too-deep": "Nest blocks less deeply (children inside children).",
    "proposal.empty": "Add at least one block.",
    "proposal.duplicate-block-id": "Give every block an id of its own.",
    "proposal.unknown-child": "List as children only ids of blocks in this proposal.",
    "proposal.children-cycle": "Remove the cycle: a block cannot contain itself.",
    "proposal.child-reused": "Give each block at most one parent.",
    "patch.base-invalid": "Call present_ui with a snapshot instead of a patch.",
    "patch.no-base": "Call present_ui with a snapshot: there is no display to patch yet.",
    "patch.base-mismatch": "Patch the current revision (the revision present_ui last returned), or send a snapshot.",
    "patch.operation-invalid": "Write each operation as put-block, remove-block or move-block with only its keys.",
    "patch.unknown-block": "Name a block of the current display, or put it first with put-block.",
    "component.prop-invalid": "Fix this prop as the slice's schema for the component says (present_ui without a "
                              "proposal returns it).",
    "component.slot-invalid": "Give this block only the children its component takes (the slice lists them).",
    "component.caption-not-settable": "Drop this prop: the caption comes from the analysis, never from you.",
    "component.format-not-settable": "Drop this prop: formats come from the semantic model, never from you.",
    "catalog.component-not-offered": "Use a component id of the slice (present_ui without a proposal lists them).",
    "catalog.resource-not-offered": "Bind a resource id of the slice; if the result is missing, call run_analysis "
                                    "first, then present_ui without a proposal for a slice that offers it.",
    "catalog.action-not-offered": "Use an action id of the slice (present_ui without a proposal lists them), or "
                                  "leave the action out.",
    "catalog.evidence-not-offered": "Use an evidence id of the slice (present_ui without a proposal lists them), "
                                    "or leave the evidence out.",
    "catalog.state-not-offered": "Use a state id of the slice (present_ui without a proposal lists them), or "
                                 "leave the state out.",
    "resource.offer-hash-denied": "Quote the offer tag the slice gives for this resource.",
    "resource.column-not-offered": "Use a column id the slice lists for this resource (selectable_columns; "
                                   "present_ui without a proposal gives the slice).",
    "resource.row-out-of-range": "Use a row index below the resource's row count.",
    "resource.sort-not-allowed": "Drop the sort: this result may not be re-sorted.",
    "resource.page-size-exceeded": "Ask for at most the resource's max_page_size rows per page.",
    "text.template-invalid": "Fix the text template: name each figure in braces and close every brace.",
    "text.figure-unknown": "Bind the figure this text names, or take it out of the text.",
    "text.figure-unused": "Use every bound figure in the text, or drop the binding.",
    "action.input-invalid": "Give the action the input its schema in the slice asks for.",
    "state.option-invalid": "Offer only values the state's schema allows.",
    "chart.column-incompatible": "Chart a number column against a dimension or time column of the same resource.",
}

# Reasons a model never receives, and why; every other reason the services define is in NEXT_STEPS.
_WINDOWS = "a window read for a person's screen (host to gateway), under a grant no model holds"
_COMPILER = "the host's own call to the compiler; the host answers the model for it"
_STREAM = "the model's own stream failing: the turn ends and the person is told, as the turn's error"
_SESSIONS = "a person's web session (web and the broker, answered to the browser); no model has one"
_FRAME = "the answer frame's own tools (MCP Apps, visibility app): a frame calls them, never a model"
NOT_FOR_MODELS: dict[str, str] = {
    "TOO_MANY_READS": _FRAME, "COMMAND_NOT_FROM_FRAME": _FRAME, "WAIT_INVALID": _FRAME, "REVISION_REQUIRED": _FRAME,
    "CURSOR_INVALID": _FRAME, "COMMAND_INVALID": _FRAME,
    "WINDOW_TOO_LARGE": _WINDOWS, "WINDOW_OUTSIDE_GRANT": _WINDOWS, "GRANT_REVOKED": _WINDOWS,
    "WINDOWS_REPLY_FULL": _WINDOWS, "WINDOW_OVER_REPLY_BOUND": _WINDOWS,
    "GRANT_RESOURCE_MISMATCH": _WINDOWS, "COLUMN_NOT_GRANTED": _WINDOWS, "RESOURCE_NOT_FOUND": _WINDOWS,
    "BASE_DOCUMENT_INVALID": _COMPILER, "SLICE_CATALOG_MISMATCH": _COMPILER, "SLICE_HASH_MISMATCH": _COMPILER,
    "SLICE_SCHEMA_INVALID": _COMPILER,
    "PLANNER_FAILED": _STREAM, "PROVIDER_ERROR": _STREAM, "RESPONSE_TOO_LARGE": _STREAM, "STREAM_BROKEN": _STREAM,
    "STREAM_MALFORMED": _STREAM,
    "DIALECT_UNSUPPORTED": "a warehouse of a kind the gateway does not run on; it does not start",
    "PLACEMENT_UNKNOWN": "the agent freezes slices for its one placement",
    "TOKEN_OTHER_TURN": "an offer of another turn: the host drops it from the slice, with the finding "
                        "slice.offer-refused",
    "TURN_ALREADY_OPEN": "the MCP front's own protocol with the agent (agent.ServeTools)",
    "TURN_NOT_OPENED": "the MCP front's own protocol with the agent (agent.ServeTools)",
    "TURN_NOT_YOURS": "cancelling another person's turn (web, the CLI); a model cannot cancel",
    "TURN_NOT_STOPPED": "a person's cancel (web, the CLI) of a turn whose agent went away; a model cannot cancel",
    # People's web sessions: between web and the broker (and the person's browser); no model holds a session.
    "SESSION_UNKNOWN": _SESSIONS, "SESSION_ENDED": _SESSIONS, "SESSION_EXPIRED": _SESSIONS,
    "SESSION_FROM_WEB_ONLY": _SESSIONS, "SESSION_REQUEST_INVALID": _SESSIONS, "SESSION_CHECK_UNAVAILABLE": _SESSIONS,
    "slice.actions-unavailable": "a warning kept with the frozen slice (the broker did not list actions); the "
                                 "slice the model gets simply offers none",
}


def fill(reason: str, metadata: dict[str, str]) -> dict[str, str]:
    """`metadata` with the registered next step for `reason` (unless it has one), and nothing else changed."""
    template = NEXT_STEPS.get(reason)
    if template is None or metadata.get("next_step"):
        return metadata
    return {**metadata, "next_step": re.sub(r"\{(\w+)\}", lambda m: str(metadata.get(m.group(1)) or _UNKNOWN.get(
        m.group(1), m.group(0))), template)}


# What a template says where its metadata lacks a value.
_UNKNOWN = {"entity": "the entity the id belongs to", "bound": "the allowed", "expected": "see the message",
            "measure_entity": "the measure's entity"}


def metadata(pointer: str | None = None, *, allowed=None, bound=None, next_step: str = "",
             **extra: str) -> dict[str, str]:
    """ErrorInfo metadata of a refusal a model may receive, in the keys above."""
    found = {key: str(value) for key, value in extra.items() if value is not None}
    if pointer is not None:
        found["pointer"] = pointer
    if allowed is not None:
        found["allowed"] = json.dumps(list(allowed))
    if bound is not None:
        found["bound"] = json.dumps(bound)
    if next_step:
        found["next_step"] = next_step
    return found
