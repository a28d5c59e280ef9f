"""python -m services.capabilities: run the capability broker."""

from services.capabilities.config import CapabilitiesSettings
from services.capabilities.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("capabilities", build, CapabilitiesSettings)
