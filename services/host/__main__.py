"""python -m services.host: run the HostServer; with `migrate`: its schema only."""

import sys

from services.host.config import HostSettings
from services.host.server import build
from services.host.store import MIGRATIONS
from shared import migrator
from shared.runtime import serve

if __name__ == "__main__":
    if sys.argv[1:]:
        migrator.main("host", MIGRATIONS, sys.argv[1:])  # `migrate`: the schema only, then exit
    serve("host", build, HostSettings)
