"""python -m services.resources: run the resources service."""

from services.resources.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("resources", build)
