"""python -m services.host: run the HostServer; with `migrate`: its schema only."""

import sys

from services.host.config import HostSettings
from services.host.server import HostService
from services.host.store import MIGRATIONS
from services.host.wiring import build
from shared.data import migrator
from shared.rpc.runtime import serve, serving

if __name__ == "__main__":
    if sys.argv[1:]:
        migrator.main("host", MIGRATIONS, sys.argv[1:])  # `migrate`: the schema only, then exit
    serve("host", serving(build, HostService), HostSettings)
