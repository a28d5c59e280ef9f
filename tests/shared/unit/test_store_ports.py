"""Each store implements the ports its service's modules are written against (host, resources, broker)."""

from __future__ import annotations

import pytest

from services.capabilities import ports as broker_ports
from services.capabilities.passkey_store import PasskeyStore
from services.capabilities.store import BrokerStore
from services.host import ports
from services.host.store import HostStore
from services.resources import ports as resource_ports
from services.resources.store import ResourceStore
from tests.fixtures.ports import missing_from


@pytest.mark.parametrize("port", [ports.SessionStore, ports.RevisionStore, ports.JournalStore, ports.CommandStore,
                                  ports.HostStorage])
def test_the_host_store_implements_the_port(port):
    assert missing_from(HostStore, port) == []


def test_a_store_that_lacks_a_method_or_renames_a_parameter_is_told_so():
    class Partial:
        def __init__(self) -> None:
            self.replica = "hst_x"

        def claim_command(self, session_id, command, payload_hash, lease): ...
        def finish_command(self, session_id, command_id, response): ...

    assert missing_from(Partial, ports.CommandStore) == [
        "claim_command: takes [('self', 'POSITIONAL_OR_KEYWORD', False), ('session_id', 'POSITIONAL_OR_KEYWORD', "
        "False), ('command', 'POSITIONAL_OR_KEYWORD', False), ('payload_hash', 'POSITIONAL_OR_KEYWORD', False), "
        "('lease', 'POSITIONAL_OR_KEYWORD', False)], the port says [('self', 'POSITIONAL_OR_KEYWORD', False), "
        "('session_id', 'POSITIONAL_OR_KEYWORD', False), ('command_id', 'POSITIONAL_OR_KEYWORD', False), "
        "('payload_hash', 'POSITIONAL_OR_KEYWORD', False), ('lease', 'POSITIONAL_OR_KEYWORD', False)]",
        "release_command: missing"]
    assert missing_from(Partial, ports.JournalStore)[0] == "append_events: missing"


@pytest.mark.parametrize("port", [resource_ports.PinnedResults, resource_ports.TurnBudgets,
                                  resource_ports.GrantRevocations, resource_ports.ResourceStorage])
def test_the_result_store_implements_the_port(port):
    assert missing_from(ResourceStore, port) == []


@pytest.mark.parametrize("port", [broker_ports.AuditTrail, broker_ports.IntentRecords, broker_ports.EffectRuns,
                                  broker_ports.ReadRecords, broker_ports.Outbox, broker_ports.BrokerStorage])
def test_the_broker_store_implements_the_port(port):
    assert missing_from(BrokerStore, port) == []


def test_the_passkey_store_implements_the_port():
    assert missing_from(PasskeyStore, broker_ports.People) == []
