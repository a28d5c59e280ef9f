"""How the host is put together (§3): its parts from its settings (keys, catalog, database, fanout, peers);
server.py serves over them, tests build them over fakes with `host_parts`."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import sqlalchemy as sa

from services.host.commands import Commands
from services.host.commits import Commits
from services.host.config import HostSettings
from services.host.database import AsyncStore
from services.host.fanout import SurfaceFanout, listen_url
from services.host.offers import Offers
from services.host.peers import Peers
from services.host.store import MIGRATIONS, HostStore, engine_for
from services.host.windows import Windows
from shared.data.db import prepare_schema, worth_waiting
from shared.identity.actors import ActorVerifier
from shared.identity.certs import CredentialError, load_signing_key, load_verify_key
from shared.rpc import runtime
from shared.ui.contracts import ContractError, load_catalog
from tessera.common.v1 import common_pb2

NOTHING_AROUND = runtime.Lifecycle()  # parts a test serves in process: no probes, no background work


@dataclass(frozen=True, kw_only=True)
class HostParts:
    """What the servicer works with: build() wires them from the environment, tests from fakes (host_parts)."""

    info: common_pb2.ServiceInfo
    actors: ActorVerifier
    db: AsyncStore
    fanout: SurfaceFanout
    offers: Offers
    commits: Commits
    commands: Commands
    lifecycle: runtime.Lifecycle


def host_parts(*, info: common_pb2.ServiceInfo, actors: ActorVerifier, db: AsyncStore, fanout: SurfaceFanout,
               peers: Peers, catalog, offer_key, grant_key, lifecycle: runtime.Lifecycle = NOTHING_AROUND) -> HostParts:
    """The host's domain objects over one store, one fanout and the peers it calls (real stubs or fakes)."""
    offers = Offers(db, peers, catalog, offer_key)
    windows = Windows(db, fanout, peers, grant_key)
    return HostParts(info=info, actors=actors, db=db, fanout=fanout, offers=offers,
                     commits=Commits(db, fanout, peers, offers, windows), commands=Commands(db, fanout, peers, windows),
                     lifecycle=lifecycle)


def _prepared_database(url: str, migrations: str) -> sa.Engine:
    """The host's database, its schema this release's (blocking: run off the event loop)."""
    try:
        engine = engine_for(url)
        prepare_schema(engine, MIGRATIONS, migrations)
    except Exception as exc:  # a database that cannot be reached or migrated
        failure = runtime.DependencyUnavailable if worth_waiting(exc) else runtime.StartupError
        raise failure(f"TESSERA_HOST_DATABASE_URL: cannot prepare the host database: "
                      f"{str(exc).splitlines()[0][:200]}") from None
    return engine


async def build(context: runtime.ServiceContext) -> HostParts:
    settings: HostSettings = context.settings
    try:
        grant_key = load_signing_key(settings.signing_key)
        offer_key = load_verify_key(settings.resources_verify_key)
        catalog = load_catalog()
    except (CredentialError, ContractError) as exc:
        raise runtime.StartupError(str(exc)) from None
    # Off the loop: health keeps answering while the database is reached and its schema prepared.
    engine = await runtime.off_loop(_prepared_database, settings.database_url, settings.migrations)
    store = HostStore(engine)
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="host-db")
    db = AsyncStore(store, pool)
    wake_url = listen_url(settings.database_url)
    fanout = SurfaceFanout(db, settings.journal_retention, wake_url, settings.safety_reread_seconds,
                           settings.wake_interval_ms / 1000)

    async def database_reachable() -> str | None:
        return await asyncio.get_running_loop().run_in_executor(pool, store.ping)

    def stop() -> None:
        pool.shutdown(wait=True)
        engine.dispose()

    background = (fanout.safety_reads, *((fanout.listen,) if wake_url else ()))
    return host_parts(info=runtime.service_info(context), actors=ActorVerifier.from_cert_dir(settings.cert_dir),
                      db=db, fanout=fanout, peers=Peers.connect(context.credentials), catalog=catalog,
                      offer_key=offer_key, grant_key=grant_key,
                      lifecycle=runtime.Lifecycle(readiness=(database_reachable, fanout.listener_ready),
                                                  background=background, on_stop=stop))
