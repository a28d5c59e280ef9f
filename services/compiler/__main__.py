"""python -m services.compiler: run the compiler service."""

from services.compiler.config import CompilerSettings
from services.compiler.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("compiler", build, CompilerSettings)
