"""python -m services.capabilities: run the capability broker; with `migrate`: its schema only."""

import sys

from services.capabilities.config import CapabilitiesSettings
from services.capabilities.server import CapabilityBrokerService
from services.capabilities.store import MIGRATIONS
from services.capabilities.wiring import build
from shared.data import migrator
from shared.rpc.runtime import serve, serving

if __name__ == "__main__":
    if sys.argv[1:]:
        migrator.main("capabilities", MIGRATIONS, sys.argv[1:])  # `migrate`: the schema only, then exit
    serve("capabilities", serving(build, CapabilityBrokerService), CapabilitiesSettings)
