"""The memory inspector in a real headless Chromium against the API served by uvicorn: two
tenants' conversations go through the producer and a real worker, and tenant A also gets
the demo's sample conversation (three days, a few dozen events); logged in with tenant
A's key, the browser walks the conversation list, the timeline (the demo's: chapters as
bands with their events inside, no two event bars overlapping, times on the axis), an
episode, a search with its scores and consecutive ranks and the status page, and never
sees tenant B's conversation. Screenshots in .memq/screenshots/ (the demo's timeline also
as docs/inspector-timeline.png)."""

from __future__ import annotations

import re
import shutil

import httpx
import pytest
from browser import ROOT, chromium, heading, missing_browser, page_text, screenshot, wait_for
from helpers import messages

NO_BROWSER = missing_browser()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(NO_BROWSER is not None, reason=NO_BROWSER or "")]

OURS, THEIRS, DEMO = "inspector-sample", "inspector-secret", "inspector-demo"


def _put_in(producer, conversation: str, prefix: str) -> None:
    results = producer.add_messages(messages(prefix), conversation_id=conversation)
    assert all(r.status == "accepted" for r in results), results
    assert producer.flush(conversation)
    producer.wait_idle(conversation, timeout=180)


def _put_in_the_demo(producer) -> None:
    """The sample conversation ``memq demo`` replays (312 messages over three days)."""
    from memq.cli.demo import SAMPLE
    from memq.producer.replay import batches

    for batch in batches(SAMPLE, 100, DEMO):
        results = producer.add_messages([item for _, item in batch])
        assert all(r.status in ("accepted", "clamped") for r in results), results
    assert producer.flush(DEMO)
    producer.wait_idle(DEMO, timeout=300)


# Where the timeline's parts are drawn on the page (CSS pixels), read in the browser.
GEOMETRY = """
const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.width, b.height]; };
const svg = document.querySelector('figure.timeline svg');
return {
  svg: box(svg),
  bands: [...svg.querySelectorAll('g.chapter')].map(g => ({
    chapter: g.dataset.chapter, events: g.dataset.events.split(' '), box: box(g.querySelector('rect.band')),
    labels: [...g.querySelectorAll('text')].map(t => [t.textContent, ...box(t)])})),
  bars: [...svg.querySelectorAll('a.block')].map(a => ({
    number: a.querySelector('title').textContent.split('.')[0], chapter: a.dataset.chapter || null,
    box: box(a.querySelector('rect.body'))})),
  ticks: [...svg.querySelectorAll('text.tick-label')].map(t => [t.textContent, ...box(t)]),
  days: [...svg.querySelectorAll('text.tick-day')].map(t => t.textContent),
  cuts: [...svg.querySelectorAll('g.cut text')].map(t => t.textContent),
};
"""


def _overlaps(a: list[float], b: list[float]) -> bool:
    """Whether two boxes (left, top, width, height) share more than an edge."""
    return (
        a[0] < b[0] + b[2] - 0.01
        and b[0] < a[0] + a[2] - 0.01
        and a[1] < b[1] + b[3] - 0.01
        and b[1] < a[1] + a[3] - 0.01
    )


def _inside(inner: list[float], outer: list[float]) -> bool:
    return (
        outer[0] - 0.5 <= inner[0]
        and inner[0] + inner[2] <= outer[0] + outer[2] + 0.5
        and outer[1] - 0.5 <= inner[1]
        and inner[1] + inner[3] <= outer[1] + outer[3] + 0.5
    )


def _check_the_demos_timeline(driver) -> None:
    """Chapters as bands with their events inside, no two bars overlapping, the axis' times
    and days, the cuts of idle time, and band labels that do not overlap."""
    g = driver.execute_script(GEOMETRY)
    bars, bands = g["bars"], g["bands"]
    assert len(bars) >= 20 and len(bands) >= 5, (len(bars), len(bands))
    clash = [
        (a["number"], b["number"]) for i, a in enumerate(bars) for b in bars[i + 1 :] if _overlaps(a["box"], b["box"])
    ]
    assert clash == [], clash
    assert all(b["box"][2] >= 4 for b in bars)  # every event wide enough to see and click
    by_number = {b["number"]: b for b in bars}
    for band in bands:
        for number in band["events"]:
            bar = by_number[number]
            assert bar["chapter"] == band["chapter"] and _inside(bar["box"], band["box"]), (band, bar)
    assert sum(len(band["events"]) for band in bands) == len(bars)  # every event in a chapter
    labels = [label for band in bands for label in band["labels"]]
    assert all(text for text, *_ in labels)
    clash = [(a[0], b[0]) for i, a in enumerate(labels) for b in labels[i + 1 :] if _overlaps(a[1:], b[1:])]
    assert clash == [], clash
    svg = g["svg"]
    assert all(svg[0] - 1 <= x and x + w <= svg[0] + svg[2] + 1 for _, x, _, w, _ in labels), labels
    ticks = [text for text, *_ in g["ticks"]]
    assert ticks and all(re.fullmatch(r"\d\d:\d\d", t) for t in ticks), ticks
    clash = [(a[0], b[0]) for a, b in zip(g["ticks"], g["ticks"][1:], strict=False) if a[1] + a[3] > b[1]]
    assert clash == [], clash
    assert g["days"] == ["Fri 14 Mar", "Sat 15 Mar", "Sun 16 Mar"], g["days"]
    assert len(g["cuts"]) >= 3 and all(re.fullmatch(r"\d+[mhd]", c) for c in g["cuts"]), g["cuts"]


def test_the_inspector_in_a_browser_shows_one_tenants_memory_and_only_its_own(
    served, worker, producer, settings, db, tenant, auth, stranger
):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    other, their_auth = stranger
    _put_in(producer, OURS, "a")
    _put_in(producer.__class__(settings.model_copy(update={"tenant": other})), THEIRS, "b")
    _put_in_the_demo(producer)
    (their_episode,) = db.execute(
        "SELECT id::text FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s ORDER BY first_seq LIMIT 1",
        (other, THEIRS),
    ).fetchone()
    with httpx.Client(base_url=served, timeout=30) as http:  # the fragment itself, asked for directly
        assert http.get(f"/inspect/fragments/episode/{their_episode}", headers=auth).status_code == 404
        assert http.get(f"/inspect/fragments/episode/{their_episode}", headers=their_auth).status_code == 200

    key = auth["Authorization"].removeprefix("Bearer ")
    with chromium(width=1280, height=800) as driver:
        driver.get(served + "/inspect")
        box = wait_for(driver, lambda d: d.find_element(By.ID, "key"), 15, "the login form")
        assert driver.find_element(By.CSS_SELECTOR, "label[for=key]").text == "API key"
        screenshot(driver, "inspector-login")

        # A wrong key: the login form again, saying why.
        box.send_keys("memq_wrong", Keys.ENTER)
        wait_for(driver, lambda d: "refused the key" in d.find_element(By.ID, "login-message").text, 15, "401 said")
        assert driver.execute_script("return sessionStorage.length") == 0

        # Tenant A's key: the conversation list, without tenant B's conversation.
        driver.find_element(By.ID, "key").send_keys(key, Keys.ENTER)
        heading(driver, "Conversations", "the conversation list")
        link = wait_for(driver, lambda d: d.find_element(By.LINK_TEXT, OURS), 15, "our conversation listed")
        assert THEIRS not in page_text(driver)
        assert driver.execute_script("return document.cookie") == ""
        assert driver.execute_script("return localStorage.length") == 0
        assert driver.execute_script("return sessionStorage.getItem('memq.inspect.key')") == key
        screenshot(driver, "inspector-conversations")

        # The timeline: a block per episode, each a link with an aria-label.
        link.click()
        heading(driver, "Conversation", "the conversation page")
        blocks = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "svg a.block"), 15, "timeline blocks")
        assert len(blocks) >= 2, page_text(driver)
        labels = [b.get_attribute("aria-label") for b in blocks]
        assert all(label.startswith("Episode ") and "retrievability now" in label for label in labels), labels
        assert "Every accepted message is in an episode." in page_text(driver)
        assert driver.find_elements(By.CSS_SELECTOR, "svg g.chapter rect.band")  # its chapters
        screenshot(driver, "inspector-timeline-small")

        # The demo's three days: chapters, their events, the axis.
        driver.get(f"{served}/inspect#/conversation/{DEMO}")
        heading(driver, f"Conversation {DEMO}", "the demo's conversation page")
        wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg a.block")) >= 20, 30, "the demo's events")
        _check_the_demos_timeline(driver)
        assert "Chapters" in page_text(driver) and "could not be drawn" not in page_text(driver)
        title = driver.find_element(By.ID, "timeline-title")
        driver.execute_script("arguments[0].scrollIntoView()", title)
        ActionChains(driver).move_to_element(title).perform()  # no event under the pointer (hovered)
        path = screenshot(driver, "inspector-timeline")
        shutil.copyfile(path, ROOT / "docs" / "inspector-timeline.png")
        driver.get(f"{served}/inspect#/conversation/{OURS}")
        heading(driver, f"Conversation {OURS}", "our conversation page again")
        blocks = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "svg a.block"), 15, "timeline blocks")

        # An episode, opened from the keyboard: its summary, messages and reviews.
        driver.execute_script("arguments[0].focus()", blocks[-1])
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        heading(driver, "Episode:", "the episode page")
        text = page_text(driver)
        assert "Summary" in text and "Reviews" in text and "Retrievability now" in text, text
        assert "seat" in text or "compost" in text, text
        screenshot(driver, "inspector-episode")

        # A search, with every score of every memory it returns.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=search]").click()
        query = wait_for(driver, lambda d: d.find_element(By.ID, "search-q"), 15, "the search box")
        assert driver.find_element(By.CSS_SELECTOR, "label[for=search-q]").text == "Query"
        query.send_keys("which seat on the train to Hamburg?", Keys.ENTER)
        table = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, "table.scores"), 60, "search scores")
        rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
        assert rows, page_text(driver)
        ranks = [row.find_element(By.CSS_SELECTOR, "td").text for row in rows]
        assert ranks == [str(n) for n in range(1, len(rows) + 1)], ranks  # no rank skipped
        header = table.find_element(By.TAG_NAME, "thead").text
        assert all(name in header for name in ("RRF", "Retrievability", "Final", "Episode vector rank")), header
        assert THEIRS not in page_text(driver)
        screenshot(driver, "inspector-search")

        # Status: workers, backlog, quarantine.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=status]").click()
        heading(driver, "Status", "the status page")
        text = page_text(driver)
        assert "Workers" in text and "Backlog" in text and "Nothing of your tenant is in the quarantine." in text
        screenshot(driver, "inspector-status")

        # Tenant B's episode by its address: not found for tenant A.
        driver.get(f"{served}/inspect#/episode/{their_episode}")
        wait_for(driver, lambda d: "404: no such episode" in page_text(d), 15, "another tenant's episode refused")

        # Logging out forgets the key.
        driver.find_element(By.ID, "logout").click()
        wait_for(driver, lambda d: d.find_element(By.ID, "key").is_displayed(), 15, "the login form again")
        assert driver.execute_script("return sessionStorage.length") == 0
