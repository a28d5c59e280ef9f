"""python -m services.resources: run the Resource Gateway; with `migrate`: its result store's schema only."""

import sys

from services.resources.config import ResourcesSettings
from services.resources.server import ResourceGatewayService
from services.resources.store import MIGRATIONS
from services.resources.wiring import build
from shared.data import migrator
from shared.rpc.runtime import serve, serving

if __name__ == "__main__":
    if sys.argv[1:]:
        migrator.main("resources", MIGRATIONS, sys.argv[1:])  # `migrate`: the schema only, then exit
    serve("resources", serving(build, ResourceGatewayService), ResourcesSettings)
