"""python -m services.host: run the host service."""

from services.host.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("host", build)
