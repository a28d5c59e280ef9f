"""python -m services.capabilities: run the capability broker; with `migrate`: its schema only."""

import sys

from services.capabilities.config import CapabilitiesSettings
from services.capabilities.server import build
from services.capabilities.store import MIGRATIONS
from shared import migrator
from shared.runtime import serve

if __name__ == "__main__":
    if sys.argv[1:]:
        migrator.main("capabilities", MIGRATIONS, sys.argv[1:])  # `migrate`: the schema only, then exit
    serve("capabilities", build, CapabilitiesSettings)
