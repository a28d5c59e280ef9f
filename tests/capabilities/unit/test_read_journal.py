"""The broker's read journal: a write starts with the first read, the reads that arrive meanwhile share the
next transaction, a failed transaction fails each of its reads (their retries run one by one), and closing
waits for what was queued."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from services.capabilities.read_journal import MAX_BATCH, ExternalRead, ReadJournal


def _read(n: int) -> ExternalRead:
    return ExternalRead("acme", "alice", "ses_1", "trn_1", "tickets.get_ticket", f"ticket {n}", f"text {n}", False,
                        [])


class _Database:
    """Records each transaction's reads; the first one waits until the test lets it finish."""

    def __init__(self, fail: bool = False) -> None:
        self.transactions: list[list[str]] = []
        self.first_started = threading.Event()
        self.release_first = threading.Event()
        self.fail = fail

    def write(self, reads: list[ExternalRead]) -> None:
        if not self.transactions:
            self.first_started.set()
            assert self.release_first.wait(30)
        self.transactions.append([r.ref for r in reads])
        if self.fail:
            raise OSError("disk I/O error")


async def _first_write_held(journal: ReadJournal, database: _Database) -> asyncio.Future:
    """The first read, its transaction started and held open by the database until the test lets it go."""
    first = journal.add(_read(0))
    await asyncio.get_running_loop().run_in_executor(None, database.first_started.wait, 30)
    return first


@pytest.fixture
def pool():
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def test_reads_that_arrive_during_a_write_share_the_next_transaction(pool):
    async def scenario():
        database = _Database()
        journal = ReadJournal(database.write, pool)
        first = await _first_write_held(journal, database)
        rest = [journal.add(_read(n)) for n in range(1, 6)]
        database.release_first.set()
        await asyncio.gather(first, *rest)
        return database.transactions
    assert asyncio.run(scenario()) == [["ticket 0"], [f"ticket {n}" for n in range(1, 6)]]


def test_a_failed_transaction_fails_every_read_in_it(pool):
    async def scenario():
        database = _Database(fail=True)
        database.release_first.set()
        journal = ReadJournal(database.write, pool)
        outcomes = await asyncio.gather(*(journal.add(_read(n)) for n in range(3)), return_exceptions=True)
        return outcomes, database.transactions
    outcomes, transactions = asyncio.run(scenario())
    assert all(isinstance(o, OSError) for o in outcomes) and sum(len(t) for t in transactions) == 3


def test_a_long_queue_is_written_in_bounded_transactions_and_closing_waits_for_it(pool):
    async def scenario():
        database = _Database()
        journal = ReadJournal(database.write, pool)
        first = await _first_write_held(journal, database)
        queued = [journal.add(_read(n)) for n in range(1, MAX_BATCH + 11)]
        database.release_first.set()
        await journal.close()
        assert first.done() and all(q.done() for q in queued)
        return [len(t) for t in database.transactions]
    assert asyncio.run(scenario()) == [1, MAX_BATCH, 10]


def test_a_stopped_journal_settles_every_read_it_holds(pool):
    """Cancelled mid-write (a broker stopping), no read is left with a future nobody will ever resolve."""
    async def scenario():
        database = _Database()
        journal = ReadJournal(database.write, pool)
        first = await _first_write_held(journal, database)
        queued = journal.add(_read(1))
        journal._writer.cancel()
        await asyncio.wait({journal._writer})
        database.release_first.set()
        return first, queued
    first, queued = asyncio.run(scenario())
    assert isinstance(first.exception(), ConnectionAbortedError)
    assert isinstance(queued.exception(), ConnectionAbortedError)
