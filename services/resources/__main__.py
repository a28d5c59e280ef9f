"""python -m services.resources: run the Resource Gateway."""

from services.resources.config import ResourcesSettings
from services.resources.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("resources", build, ResourcesSettings)
