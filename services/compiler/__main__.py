"""python -m services.compiler: run the compiler service."""

from services.compiler.config import CompilerSettings
from services.compiler.server import CompilerService
from services.compiler.wiring import build
from shared.rpc.runtime import serve, serving

if __name__ == "__main__":
    serve("compiler", serving(build, CompilerService), CompilerSettings)
