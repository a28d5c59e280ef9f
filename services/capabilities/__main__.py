"""python -m services.capabilities: run the capabilities service."""

from services.capabilities.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("capabilities", build)
