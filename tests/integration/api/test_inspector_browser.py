"""The memory inspector in a real headless Chromium against the API served by uvicorn: two
tenants' conversations go through the producer and a real worker; logged in with tenant
A's key, the browser walks the conversation list, the timeline, an episode, a search with
its scores and the status page, and never sees tenant B's conversation. Screenshots in
.memq/screenshots/ (the timeline's also as docs/inspector-timeline.png)."""

from __future__ import annotations

import shutil

import httpx
import pytest
from browser import ROOT, chromium, missing_browser, screenshot, wait_for
from helpers import messages

NO_BROWSER = missing_browser()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(NO_BROWSER is not None, reason=NO_BROWSER or "")]

OURS, THEIRS = "inspector-sample", "inspector-secret"


def _put_in(producer, conversation: str, prefix: str) -> None:
    results = producer.add_messages(messages(prefix), conversation_id=conversation)
    assert all(r.status == "accepted" for r in results), results
    assert producer.flush(conversation)
    producer.wait_idle(conversation, timeout=180)


def _text(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def _heading(driver, starts: str, what: str):
    """The page's h2 once it reads ``starts``."""
    from selenium.webdriver.common.by import By

    return wait_for(
        driver,
        lambda d: next((h for h in d.find_elements(By.CSS_SELECTOR, "#page h2") if h.text.startswith(starts)), False),
        30,
        what,
    )


def test_the_inspector_in_a_browser_shows_one_tenants_memory_and_only_its_own(
    served, worker, producer, settings, db, tenant, auth, stranger
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    other, their_auth = stranger
    _put_in(producer, OURS, "a")
    _put_in(producer.__class__(settings.model_copy(update={"tenant": other})), THEIRS, "b")
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
        _heading(driver, "Conversations", "the conversation list")
        link = wait_for(driver, lambda d: d.find_element(By.LINK_TEXT, OURS), 15, "our conversation listed")
        assert THEIRS not in _text(driver)
        assert driver.execute_script("return document.cookie") == ""
        assert driver.execute_script("return localStorage.length") == 0
        assert driver.execute_script("return sessionStorage.getItem('memq.inspect.key')") == key
        screenshot(driver, "inspector-conversations")

        # The timeline: a block per episode, each a link with an aria-label.
        link.click()
        _heading(driver, "Conversation", "the conversation page")
        blocks = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "svg a.block"), 15, "timeline blocks")
        assert len(blocks) >= 2, _text(driver)
        labels = [b.get_attribute("aria-label") for b in blocks]
        assert all(label.startswith("Episode ") and "retrievability now" in label for label in labels), labels
        assert "Every accepted message is in an episode." in _text(driver)
        path = screenshot(driver, "inspector-timeline")
        shutil.copyfile(path, ROOT / "docs" / "inspector-timeline.png")

        # An episode, opened from the keyboard: its summary, messages and reviews.
        driver.execute_script("arguments[0].focus()", blocks[-1])
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        _heading(driver, "Episode:", "the episode page")
        text = _text(driver)
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
        assert rows, _text(driver)
        header = table.find_element(By.TAG_NAME, "thead").text
        assert all(name in header for name in ("RRF", "Retrievability", "Final", "Episode vector rank")), header
        assert THEIRS not in _text(driver)
        screenshot(driver, "inspector-search")

        # Status: workers, backlog, quarantine.
        driver.find_element(By.CSS_SELECTOR, "nav a[data-page=status]").click()
        _heading(driver, "Status", "the status page")
        text = _text(driver)
        assert "Workers" in text and "Backlog" in text and "Nothing of your tenant is in the quarantine." in text
        screenshot(driver, "inspector-status")

        # Tenant B's episode by its address: not found for tenant A.
        driver.get(f"{served}/inspect#/episode/{their_episode}")
        wait_for(driver, lambda d: "404: no such episode" in _text(d), 15, "another tenant's episode refused")

        # Logging out forgets the key.
        driver.find_element(By.ID, "logout").click()
        wait_for(driver, lambda d: d.find_element(By.ID, "key").is_displayed(), 15, "the login form again")
        assert driver.execute_script("return sessionStorage.length") == 0
