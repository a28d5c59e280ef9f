"""How the Resource Gateway is put together (§3): the semantic model, the warehouse and its catalog, the result
store and the keys, opened from the settings into a Gateway; server.py serves over it."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from services.resources.capability import CapabilityIssuer
from services.resources.catalog import Catalog
from services.resources.config import ResourcesSettings
from services.resources.gateway import Gateway, utc_today
from services.resources.store import StoreUnavailable, open_store
from services.resources.warehouse import Warehouse, WarehouseUnavailable
from shared.identity.certs import CredentialError, load_secret, load_signing_key, load_verify_key
from shared.rpc import runtime
from shared.semantic.model import SemanticModelError, load_semantic_model
from tessera.common.v1 import common_pb2


@dataclass(frozen=True, kw_only=True)
class ResourcesParts:
    info: common_pb2.ServiceInfo
    gateway: Gateway
    pool: ThreadPoolExecutor  # warehouse and store work: never on the event loop
    lifecycle: runtime.Lifecycle


def open_gateway(settings: ResourcesSettings, *, today: Callable[[], dt.date] = utc_today,
                 clock: Callable[[], float] = time.time) -> Gateway:
    """The gateway over what the settings name (blocking: it connects to the warehouse and the store)."""
    model = load_semantic_model(settings.semantic_model)
    capabilities = CapabilityIssuer(load_secret(settings.capability_secret))
    signing_key, host_key = load_signing_key(settings.signing_key), load_verify_key(settings.host_verify_key)
    # One connection per query worker, and one each for the side queries beside them.
    warehouse = Warehouse(settings.warehouse_url, settings.statement_timeout_seconds,
                          connections=2 * settings.query_workers)
    try:
        catalog = Catalog(model, warehouse.engine)
        store = open_store(settings.store_url, settings.probe_budget_lifetime_seconds,
                           settings.session_budget_lifetime_seconds, settings.migrations)
    except SemanticModelError as exc:  # the model does not fit this warehouse
        warehouse.close()
        raise SemanticModelError(f"{settings.semantic_model}: {exc}") from None
    except BaseException:
        warehouse.close()
        raise
    return Gateway(settings=settings, model=model, catalog=catalog, warehouse=warehouse, store=store,
                   capabilities=capabilities, signing_key=signing_key, host_key=host_key, today=today, clock=clock)


async def build(context: runtime.ServiceContext) -> ResourcesParts:
    settings: ResourcesSettings = context.settings
    try:
        # Off the loop: connecting to the warehouse and the store may wait; health keeps answering meanwhile.
        gateway = await runtime.off_loop(open_gateway, settings)
    except SemanticModelError as exc:
        raise runtime.StartupError(f"semantic model {exc}") from None
    except (WarehouseUnavailable, StoreUnavailable) as exc:
        raise (runtime.DependencyUnavailable if exc.unreachable else runtime.StartupError)(str(exc)) from None
    except CredentialError as exc:
        raise runtime.StartupError(str(exc)) from None
    pool = ThreadPoolExecutor(max_workers=settings.query_workers, thread_name_prefix="warehouse")

    async def warehouse_reachable() -> str | None:
        return await asyncio.get_running_loop().run_in_executor(pool, gateway.warehouse.ping)

    async def store_reachable() -> str | None:
        # Not ready while the shared store is gone; calls meanwhile get UNAVAILABLE / DATABASE_UNAVAILABLE.
        return await asyncio.get_running_loop().run_in_executor(pool, gateway.store.ping)

    def stop() -> None:
        pool.shutdown(wait=True)
        gateway.close()

    return ResourcesParts(info=runtime.service_info(context), gateway=gateway, pool=pool,
                          lifecycle=runtime.Lifecycle(readiness=(warehouse_reachable, store_reachable), on_stop=stop))
