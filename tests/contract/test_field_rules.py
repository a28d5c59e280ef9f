"""The contracts' field rules as the interceptor checks them (shared/rpc/field_rules.py): each kind of rule, on the real
request messages, refused with FIELD_INVALID, the offending field's JSON Pointer and the bound it broke; a rule
that cannot fit its field stops the server when it is built."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from services.resources.server import _PROBES
from shared.rpc.contracts import SERVICES
from shared.rpc.field_rules import RequestRules, RuleMisfit, max_chars, stated
from shared.rpc.next_steps import NEXT_STEPS
from shared.rpc.refusals import Invalid
from shared.ui.slice import MAX_PROPOSAL_BYTES
from tessera.agent.v1 import agent_pb2
from tessera.capabilities.v1 import capabilities_pb2
from tessera.common.v1 import common_pb2
from tessera.host.v1 import host_pb2
from tessera.resources.v1 import resources_pb2
from tessera.rules.v1 import rules_pb2
from tests.fixtures.in_process import RULES

HOST, RESOURCES = "/tessera.host.v1.HostService", "/tessera.resources.v1.ResourceGatewayService"
TURN = resources_pb2.TurnRef(session_id="s-1", turn_id="t-1")


def refused(method: str, request) -> Invalid:
    with pytest.raises(Invalid) as caught:
        RULES.check(method, request)
    assert caught.value.reason == "FIELD_INVALID"
    return caught.value


def begin(question: str, request_id: str = "r-1") -> host_pb2.BeginTurnRequest:
    return host_pb2.BeginTurnRequest(session_id="s-1", question=question, request_id=request_id)


def test_every_rule_of_every_contract_fits_its_field():
    built = RequestRules(service for service, _ in SERVICES.values())  # a misfit raises here
    assert built.check(f"{HOST}/BeginTurn", begin("how many orders?")) is None


def test_a_question_is_one_to_its_kinds_most_characters_at_every_hop():
    most = max_chars(rules_pb2.TEXT_KIND_QUESTION)
    assert most == 2000
    RULES.check(f"{HOST}/BeginTurn", begin("é" * most))  # characters, not bytes
    long = refused(f"{HOST}/BeginTurn", begin("x" * (most + 1)))
    assert long.metadata["pointer"] == "/question" and long.metadata["bound"] == str(most)
    assert long.metadata["rule"] == "max_chars" and "at most 2000 characters" in long.message
    assert refused(f"{HOST}/BeginTurn", begin("")).metadata["pointer"] == "/question"
    start = "/tessera.agent.v1.AgentService/StartTurn"
    assert refused(start, agent_pb2.StartTurnRequest(question="x" * (most + 1))).metadata["pointer"] == "/question"
    catalog = resources_pb2.InspectCatalogRequest(turn=TURN, question="x" * (most + 1))
    assert refused(f"{RESOURCES}/InspectCatalog", catalog).metadata["pointer"] == "/question"


def test_nested_messages_are_checked_where_they_state_rules():
    missing = refused(f"{RESOURCES}/Describe", resources_pb2.DescribeRequest(entity_ids=["ent_a"]))
    assert missing.metadata["pointer"] == "/turn" and missing.metadata["rule"] == "required"
    no_turn_id = resources_pb2.DescribeRequest(turn=resources_pb2.TurnRef(session_id="s-1"), entity_ids=["ent_a"])
    assert refused(f"{RESOURCES}/Describe", no_turn_id).metadata["pointer"] == "/turn/turn_id"
    long_id = resources_pb2.DescribeRequest(turn=resources_pb2.TurnRef(session_id="s" * 129, turn_id="t"),
                                            entity_ids=["ent_a"])
    assert refused(f"{RESOURCES}/Describe", long_id).metadata["pointer"] == "/turn/session_id"
    window = host_pb2.SendCommandRequest(command_id="c-1", resource_window=host_pb2.ResourceWindowCommand(limit=0))
    zero = refused(f"{HOST}/SendCommand", window)
    assert zero.metadata["pointer"] == "/resource_window/limit" and "at least 1" in zero.message
    assert zero.metadata["bound"] == "1"  # the side it broke, not the other


def test_each_item_of_a_repeated_message_is_checked_where_it_is():
    file = descriptor_pb2.FileDescriptorProto(name="rulestest/outer.proto", package="rulestest", syntax="proto3")
    inner = file.message_type.add(name="Inner").field.add(name="id", number=1, type=9, label=1)
    inner.options.Extensions[rules_pb2.field].CopyFrom(rules_pb2.FieldRules(text=rules_pb2.TEXT_KIND_ID,
                                                                            required=True))
    file.message_type.add(name="Outer").field.add(name="items", number=1, type=11, label=3,
                                                  type_name=".rulestest.Inner")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file.SerializeToString())
    outer = message_factory.GetMessageClass(pool.FindMessageTypeByName("rulestest.Outer"))
    check = RequestRules([]).of(outer.DESCRIPTOR)
    request = outer()
    for value in ("a", "b", "", "d"):
        request.items.add().id = value
    assert check(request, "").metadata["pointer"] == "/items/2/id"
    request.items[2].id = "c"
    assert check(request, "") is None


def test_lists_keep_their_counts_and_every_item_its_bounds():
    most = stated(resources_pb2.DescribeRequest, "entity_ids", "max_items")
    five = resources_pb2.DescribeRequest(turn=TURN, entity_ids=[f"ent_{i}" for i in range(most + 1)])
    assert refused(f"{RESOURCES}/Describe", five).metadata == {
        "pointer": "/entity_ids", "bound": str(most), "rule": "items", "next_step": NEXT_STEPS["FIELD_INVALID"]}
    assert refused(f"{RESOURCES}/Describe", resources_pb2.DescribeRequest(turn=TURN)).metadata["pointer"] == \
        "/entity_ids"
    blank = resources_pb2.DescribeRequest(turn=TURN, entity_ids=["ent_a", ""])
    assert refused(f"{RESOURCES}/Describe", blank).metadata["pointer"] == "/entity_ids/1"
    RULES.check(f"{RESOURCES}/Describe", resources_pb2.DescribeRequest(turn=TURN, entity_ids=["ent_a"] * most))


def test_enums_take_only_the_values_they_define_and_required_ones_not_their_zero():
    finish = host_pb2.FinishTurnRequest(turn_id="t-1", outcome=common_pb2.TURN_OUTCOME_ANSWERED)
    RULES.check(f"{HOST}/FinishTurn", finish)
    finish.outcome = 99  # a number a newer client may send: not one this contract defines
    unknown = refused(f"{HOST}/FinishTurn", finish)
    assert unknown.metadata["rule"] == "defined_only" and "TURN_OUTCOME_ANSWERED" in unknown.message
    finish.outcome = 0
    assert refused(f"{HOST}/FinishTurn", finish).metadata["rule"] == "required"


def test_a_required_oneof_needs_one_member():
    bare = host_pb2.SendCommandRequest(command_id="c-1", session_id="s-1", surface_id="f-1")
    assert refused(f"{HOST}/SendCommand", bare).metadata["pointer"] == "/command"
    bare.ack.SetInParent()
    RULES.check(f"{HOST}/SendCommand", bare)


def test_a_proposal_is_bounded_in_bytes_not_characters():
    def submit(text: str) -> host_pb2.SubmitProposalRequest:
        return host_pb2.SubmitProposalRequest(turn_id="t-1", proposal_id="p-1", proposal_json=text)
    RULES.check(f"{HOST}/SubmitProposal", submit("x" * MAX_PROPOSAL_BYTES))
    over = refused(f"{HOST}/SubmitProposal", submit("é" * (MAX_PROPOSAL_BYTES // 2 + 1)))
    assert over.metadata["pointer"] == "/proposal_json" and over.metadata["bound"] == str(MAX_PROPOSAL_BYTES)


def test_a_plain_id_keeps_its_alphabet_and_an_empty_optional_one_passes():
    decide = capabilities_pb2.DecideRequest(approval_id="a-1", decision=capabilities_pb2.DECISION_APPROVE)
    method = "/tessera.capabilities.v1.CapabilityBrokerService/Decide"
    RULES.check(method, decide)
    decide.decision_id = "d 1"
    assert refused(method, decide).metadata == {"pointer": "/decision_id", "rule": "pattern",
                                                "next_step": NEXT_STEPS["FIELD_INVALID"]}
    decide.decision_id = "d.1:x-y_z"
    RULES.check(method, decide)


def test_numbers_keep_their_range():
    method = "/tessera.capabilities.v1.CapabilityBrokerService/ExportAudit"
    RULES.check(method, capabilities_pb2.ExportAuditRequest(after_sequence=2**62))
    assert refused(method, capabilities_pb2.ExportAuditRequest(after_sequence=2**62 + 1)).metadata["pointer"] == \
        "/after_sequence"


def test_a_method_whose_request_states_no_rule_lets_any_request_through():
    assert RULES.check(f"{HOST}/GetInfo", host_pb2.GetInfoRequest()) is None
    assert RULES.check("/no.Such/Method", host_pb2.GetInfoRequest()) is None


def _one_field_message(field_type: int, rules: rules_pb2.FieldRules, label: int = 1):
    """A message type with one field `f` of the type, carrying the rules (in a pool of its own)."""
    file = descriptor_pb2.FileDescriptorProto(name="rulestest/one.proto", package="rulestest", syntax="proto3")
    field = file.message_type.add(name="One").field.add(name="f", number=1, type=field_type, label=label)
    field.options.Extensions[rules_pb2.field].CopyFrom(rules)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file.SerializeToString())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("rulestest.One"))


@pytest.mark.parametrize(("field_type", "rules", "label"), [
    (descriptor_pb2.FieldDescriptorProto.TYPE_INT32, rules_pb2.FieldRules(text=rules_pb2.TEXT_KIND_ID), 1),
    (descriptor_pb2.FieldDescriptorProto.TYPE_STRING, rules_pb2.FieldRules(max=3), 1),
    (descriptor_pb2.FieldDescriptorProto.TYPE_STRING, rules_pb2.FieldRules(max_items=3), 1),
    (descriptor_pb2.FieldDescriptorProto.TYPE_STRING, rules_pb2.FieldRules(defined_only=True), 1),
    (descriptor_pb2.FieldDescriptorProto.TYPE_INT64, rules_pb2.FieldRules(items_required=True), 3),
    (descriptor_pb2.FieldDescriptorProto.TYPE_INT32, rules_pb2.FieldRules(min=5, max=3), 1),
    (descriptor_pb2.FieldDescriptorProto.TYPE_STRING, rules_pb2.FieldRules(min_items=5, max_items=3), 3),
])
def test_a_rule_that_cannot_fit_its_field_stops_the_server_when_it_is_built(field_type, rules, label):
    message = _one_field_message(field_type, rules, label)
    with pytest.raises(RuleMisfit, match="does not fit|least above its most"):
        RequestRules([]).of(message.DESCRIPTOR)


def test_a_bound_the_contract_does_not_state_is_a_misfit_never_a_silent_zero():
    with pytest.raises(RuleMisfit, match="states no min"):
        stated(host_pb2.ListTurnsRequest, "limit", "min")
    with pytest.raises(RuleMisfit, match="states no bounds"):
        max_chars(999)
    unbounded = _one_field_message(descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                                   rules_pb2.FieldRules(text=rules_pb2.TEXT_KIND_UNSPECIFIED, required=True))
    assert RequestRules([]).of(unbounded.DESCRIPTOR)(unbounded(f="x"), "") is None  # no kind: no text bounds


def test_the_gateway_serves_every_probe_kind_its_contract_defines():
    defined = {value.number for value in resources_pb2.ProbeKind.DESCRIPTOR.values if value.number}
    assert set(_PROBES) == defined  # a kind the rule lets through is one the servicer knows, never a KeyError
