"""How the compiler is put together (§3): its parts from its settings; server.py serves over them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from services.compiler.compile import Compiler
from services.compiler.config import CompilerSettings
from shared.rpc.runtime import Lifecycle, ServiceContext, StartupError, service_info
from shared.ui.contracts import ContractError, load_catalog
from tessera.common.v1 import common_pb2


@dataclass(frozen=True, kw_only=True)
class CompilerParts:
    info: common_pb2.ServiceInfo
    compiler: Compiler
    pool: ThreadPoolExecutor  # compiles are CPU-bound: off the event loop, two at a time
    lifecycle: Lifecycle


def build(context: ServiceContext) -> CompilerParts:
    settings: CompilerSettings = context.settings
    try:
        catalog = load_catalog(settings.catalog_dir)
    except ContractError as exc:
        raise StartupError(f"component contract {exc}") from None
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="compile")
    return CompilerParts(info=service_info(context), compiler=Compiler(catalog), pool=pool,
                         lifecycle=Lifecycle(on_stop=lambda: pool.shutdown(wait=True)))
