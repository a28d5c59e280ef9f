"""The one-thread deadline watcher that stops DuckDB statements past the policy timeout."""

import threading

from services.resources.deadlines import DeadlineWatcher


def test_a_deadline_fires_once_it_is_due_and_says_so():
    watcher = DeadlineWatcher()
    fired = threading.Event()
    deadline = watcher.arm(0.05, fired.set)
    assert fired.wait(10)
    assert deadline.expired


def test_a_cancelled_deadline_never_fires():
    watcher = DeadlineWatcher()
    fired = threading.Event()
    deadline = watcher.arm(0.05, fired.set)
    deadline.cancel()
    later = threading.Event()
    watcher.arm(0.1, later.set)  # a later deadline firing proves the watcher got past the cancelled one
    assert later.wait(10)
    assert not fired.is_set() and not deadline.expired


def test_a_sooner_deadline_armed_after_a_later_one_fires_first():
    watcher = DeadlineWatcher()
    order = []
    done = threading.Event()
    watcher.arm(3600, lambda: order.append("late"))
    watcher.arm(0.05, lambda: (order.append("soon"), done.set()))
    assert done.wait(10)  # the watcher was woken, not left sleeping until the hour-long one
    assert order == ["soon"]


def test_cancel_waits_for_a_running_expiry_to_finish():
    watcher = DeadlineWatcher()
    started, release = threading.Event(), threading.Event()
    finished = []

    def slow_interrupt():
        started.set()
        release.wait(10)
        finished.append(True)

    deadline = watcher.arm(0.01, slow_interrupt)
    assert started.wait(10)
    cancelling = threading.Thread(target=deadline.cancel)
    cancelling.start()
    cancelling.join(0.2)
    assert cancelling.is_alive()  # held while the interrupt runs: a connection is not released mid-interrupt
    release.set()
    cancelling.join(10)
    assert not cancelling.is_alive() and finished == [True]


def test_a_failing_expiry_does_not_stop_the_watcher():
    watcher = DeadlineWatcher()
    watcher.arm(0.01, lambda: 1 / 0)
    fired = threading.Event()
    watcher.arm(0.05, fired.set)
    assert fired.wait(10)


def test_many_statements_share_one_thread():
    watcher = DeadlineWatcher(name="deadlines-under-test")
    deadlines = [watcher.arm(3600, lambda: None) for _ in range(200)]
    names = [t.name for t in threading.enumerate()]
    assert names.count("deadlines-under-test") == 1
    for deadline in deadlines:
        deadline.cancel()


def test_closing_stops_the_thread_and_nothing_fires_after():
    watcher = DeadlineWatcher(name="deadlines-closing")
    fired = threading.Event()
    watcher.arm(0.2, fired.set)
    watcher.close()
    assert "deadlines-closing" not in [t.name for t in threading.enumerate()]
    assert not fired.wait(0.5)


def test_many_cancelled_deadlines_do_not_pile_up():
    watcher = DeadlineWatcher()
    for _ in range(1000):
        watcher.arm(3600, lambda: None).cancel()
    assert len(watcher._heap) <= 130  # swept, not kept for the hour until each comes due
    watcher.close()
