"""The conversation as a person keeps it: each earlier turn a card (the question as asked, the heading its answer was
shown under, what was said), a follow-up attached to the turn it refines, kept on reload, and an earlier answer's
figures drawn again, read-only, from its own revision's rows."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.test_browser import ask, table_rows
from tests.browser.test_states import checked


def _answered(page, question: str) -> None:
    ask(page, question)
    expect(page.locator("#answer-state")).to_contain_text(f"Answer to “{question}”", timeout=30_000)


def test_a_follow_up_is_attached_to_the_turn_it_refines_and_the_thread_outlives_the_page(page):
    _answered(page, "Net revenue by month")
    _answered(page, "and just for 2023")
    # The answer says what it answers: the question as it was read, not the words typed.
    heading = page.locator("#surface tessera-heading h2")
    expect(heading).to_contain_text("2023", timeout=15_000)
    assert heading.inner_text() != "and just for 2023"
    expect(page.locator("#answer-state")).to_contain_text("a follow-up to “Net revenue by month”")

    cards = page.locator("#thread > li")
    expect(cards).to_have_count(1, timeout=15_000)
    earlier = page.locator(f"#{cards.first.get_attribute('id')}")  # (by its id: newer cards come first)
    expect(earlier.locator(".asked")).to_contain_text("You asked “Net revenue by month”")
    expect(earlier.locator("h3")).not_to_have_text("Net revenue by month", timeout=15_000)  # its heading, read
    assert "2023" not in earlier.locator("h3").inner_text()
    expect(earlier.locator(".turn-answer")).to_contain_text("Here is")

    ask(page, "What is the weather on Mars?")  # refused: the answer area says so, the follow-up joins the thread
    expect(page.locator("#refusal")).to_contain_text("No answer to “What is the weather on Mars?”", timeout=30_000)
    expect(cards).to_have_count(2, timeout=15_000)
    follow_up = cards.first
    expect(follow_up).to_have_class("turn answered follow-up")
    link = follow_up.locator(".follows a")
    expect(link).to_have_text("“Net revenue by month”")
    assert link.get_attribute("href") == f"#{earlier.get_attribute('id')}"
    checked(page, "conversation", 1280)

    # A reload: the same conversation. The answer area shows the answer last drawn (the follow-up's); the refusal
    # after it is at the top of the thread.
    page.reload()
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    thread = page.locator("#thread > li")
    expect(thread).to_have_count(2, timeout=15_000)
    expect(thread.first).to_have_class("turn not-answered")
    expect(thread.first.locator("h3")).to_have_text("No answer")
    expect(page.locator("#answer-state")).to_contain_text("Answer to “and just for 2023”", timeout=15_000)

    # The first answer's figures, drawn again from its own rows: every month, not the follow-up's 2023 only.
    first = thread.last
    first.locator("summary").click()
    first.locator("tessera-data-table tbody tr").first.wait_for(timeout=30_000)
    months = [row[0] for row in table_rows(first)]
    assert months[0] == "Jan 2021" and len(months) == 25, months
    first.locator("tessera-chart[data-drawn]").wait_for(timeout=15_000)
    # Its caption is its own, drawn once under it; the live answer's stays the follow-up's.
    expect(first.locator(".answer-caption [data-caption]")).to_have_count(1)
    assert "2023" not in first.locator(".answer-caption").inner_text()
    expect(page.locator("#answer-caption [data-caption]")).to_contain_text("2023")
    first.locator("tessera-data-table button[aria-label='Next page']").click()  # paged, under its revision
    expect(first.locator("tessera-data-table tbody tr td").first).to_have_text("Feb 2023", timeout=15_000)
    checked(page, "conversation-earlier-answer", 1280)
    page.set_viewport_size({"width": 390, "height": 900})
    checked(page, "conversation-earlier-answer", 390)
    assert not page.problems
