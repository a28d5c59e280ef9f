"""The broker's work beside serving: expiry, web-session purging, taking up orphaned intents, warming the tool
servers (wiring.py starts them with the server).

Each goes on through an outage of the broker's database and resumes by itself: the outage is said by the
database's Outage (once, now and then, once when it ends), so the loops add no line of their own for it; anything
else fails one round, with its traceback.
"""

from __future__ import annotations

import asyncio
import logging

from services.capabilities.broker import Broker
from services.capabilities.database import BrokerDatabase, database_away
from services.capabilities.mcp_gate import ToolGate
from services.capabilities.web_sessions import WebSessions

logger = logging.getLogger("tessera.broker")
EXPIRY_SWEEP_SECONDS = 1.0
WEB_SESSION_PURGE_SECONDS = 300.0  # ended and expired web sessions leave the table within this of their time


async def sweep_expired(broker: Broker) -> None:
    """Expire due approvals every EXPIRY_SWEEP_SECONDS, from the moment the broker serves."""
    while True:
        try:
            await broker.expire()
        except Exception as exc:  # keep sweeping; the next round retries
            if not database_away(exc):
                logger.exception("expiring approvals failed")
        await asyncio.sleep(EXPIRY_SWEEP_SECONDS)


async def purge_web_sessions(web_sessions: WebSessions, database: BrokerDatabase) -> None:
    """Keep the session table bounded: every WEB_SESSION_PURGE_SECONDS, drop expired and long-ended sessions."""
    while True:
        try:
            purged = await database(web_sessions.purge)
            if purged:
                logger.info("purged %d ended or expired web session(s)", purged)
        except Exception as exc:  # the database hiccuped: the next round retries
            if not database_away(exc):
                logger.exception("purging web sessions failed")
        await asyncio.sleep(WEB_SESSION_PURGE_SECONDS)


async def recover(broker: Broker) -> None:
    """Take up approved intents nobody is running: at start (what a previous process left; each round until
    the database answers for it), then every third of a lease (what a replica that died left, or an effect
    whose database did not answer), so a surviving replica takes over."""
    resumed = False
    while True:
        try:
            if not resumed:
                taken = await broker.resume()
                resumed = True
                if taken:
                    logger.info("took up %d approved intent(s) left running by a previous process", taken)
            elif taken := await broker.take_up():
                logger.info("took up %d approved intent(s) whose replica stopped answering for them", taken)
        except Exception as exc:  # the database hiccuped: the next round retries
            if not database_away(exc):
                logger.exception("taking up orphaned intents failed")
        await asyncio.sleep(min(10.0, broker.store.lease_seconds / 3))


async def warm_up(gate: ToolGate) -> None:
    """Open the tool servers now, so the first session does not wait for them to start."""
    try:
        await gate.survey()
    except Exception:  # a server that cannot start is reported per session; it must not stop us
        logger.exception("warming up the tool servers failed")
