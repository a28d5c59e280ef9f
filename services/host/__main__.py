"""python -m services.host: run the HostServer."""

from services.host.config import HostSettings
from services.host.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("host", build, HostSettings)
