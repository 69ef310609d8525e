"""The inspector's defences (docs/inspector.md, "How the key is kept") proved in a real
headless Chromium against the API served by uvicorn, one browser session for the module:

- markup planted in a conversation (an episode's title and summary, a message) and in a
  search query is shown as text, and an inline script put into the page by hand (a script
  element, an ``onerror`` attribute, ``document.write``) does not run: the page's
  Content-Security-Policy refuses it, and the browser says so (``securitypolicyviolation``);
- a page of another origin (a throwaway server on another loopback port) cannot frame the
  inspector: ``frame-ancestors 'none'``, as Chromium's console names it;
- over login, a conversation, a search and logout, the key is in no URL the browser asked
  for or kept in its history (DevTools' Network and Page events, from chromedriver's
  performance log) and in no cookie, while it did go out as the Authorization header.

Each check fails when its defence is taken away (autoescaping, the CSP's script-src,
frame-ancestors, the key kept out of URLs)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

import pytest
from browser import chromium, heading, missing_browser, page_text, wait_for
from test_retrieval import axis, write_episode

NO_BROWSER = missing_browser()
pytestmark = [pytest.mark.integration, pytest.mark.skipif(NO_BROWSER is not None, reason=NO_BROWSER or "")]

CONVERSATION = "defences"
# Sets MARK if it ever runs: as an attribute breaking out of a value, a handler, a script.
MARK = "__memqPlanted"
PLANTED = f"\"><img src=x onerror=\"window.{MARK}='handler'\"><script>window.{MARK}='script'</script>"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

# What ran of the planted markup, and what of it became elements of the page.
PLANTED_STATE = f"return [typeof window.{MARK}, document.querySelectorAll('#page img, #page script').length]"

# The CSP refusals the page reports from now on (the event the browser fires at the document).
LISTEN = """
window.__refused = [];
document.addEventListener('securitypolicyviolation', (e) => window.__refused.push(e.effectiveDirective));
"""
# An inline script element and an inline event handler, put into the page by hand.
INSERT = """
const script = document.createElement('script');
script.textContent = "window.__memqInline = 'element'";
document.body.append(script);
const holder = document.createElement('div');
holder.innerHTML = '<img src="missing.png" onerror="window.__memqInline = \\'handler\\'">';
document.body.append(holder);
"""
# The document rewritten with an inline script (document.open drops the listeners: listen again).
WRITE = (
    "document.open();"
    + LISTEN
    + "document.write(\"<script>window.__memqInline = 'written'<\\/script><p id=written>written</p>\");"
    + "document.close();"
)
INLINE_STATE = "return [String(window.__memqInline), window.__refused]"


@pytest.fixture(scope="module")
def driver():
    with chromium(width=1280, height=800, logs={"browser": "ALL", "performance": "ALL"}) as session:
        yield session


def _plant(db, settings, tenant: str) -> str:
    """One episode whose title, summary and first message carry PLANTED: its id."""
    return write_episode(
        db,
        settings,
        tenant,
        CONVERSATION,
        title=f"window seat {PLANTED}",
        summary=f"summary {PLANTED}",
        vector=axis(0),
        messages=[
            ("user", f"a window seat please {PLANTED}", axis(0)),
            ("assistant", "Done: coach 5, window seat 21.", axis(1)),
        ],
        start=START,
    )


def _logged_in(driver, served: str, key: str) -> None:
    """A fresh inspector tab (no key kept, the logs read away), logged in with ``key``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.get(served + "/inspect")
    driver.execute_script("sessionStorage.clear()")
    driver.get_log("browser")
    driver.get_log("performance")
    driver.refresh()
    box = wait_for(driver, lambda d: d.find_element(By.ID, "key"), 15, "the login form")
    box.send_keys(key, Keys.ENTER)
    heading(driver, "Conversations", "the conversation list")


def _search(driver, query: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.find_element(By.CSS_SELECTOR, "nav a[data-page=search]").click()
    box = wait_for(driver, lambda d: d.find_element(By.ID, "search-q"), 15, "the search box")
    box.send_keys(query, Keys.ENTER)
    wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, "table.scores"), 60, "the search's scores")


def _log_out(driver) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.ID, "logout").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "key").is_displayed(), 15, "the login form again")


def _shown_as_text(driver, where: str) -> None:
    """PLANTED is on the page as text; nothing of it became an element or ran."""
    assert PLANTED in page_text(driver), where
    assert driver.execute_script(PLANTED_STATE) == ["undefined", 0], where


def _refused(driver, script: str, directives: set[str], what: str) -> None:
    """``script`` run in the page sets no global, and the page reports CSP refusals of
    ``directives`` (waited for: the browser fires the event after the fact)."""

    def settled(d) -> list | None:
        """The state once the script ran or every refusal was reported."""
        state = d.execute_script(INLINE_STATE)
        return state if state[0] != "undefined" or directives <= set(state[1]) else None

    driver.execute_script(script)
    ran, refused = wait_for(driver, settled, 15, what)
    assert ran == "undefined", f"{what}: the inline script ran ({ran})"
    assert directives <= set(refused), (what, refused)


def test_planted_markup_is_text_and_no_inline_script_runs(driver, served, db, settings, tenant, auth):
    from selenium.webdriver.common.by import By

    episode = _plant(db, settings, tenant)
    _logged_in(driver, served, auth["Authorization"].removeprefix("Bearer "))

    # Markup in a conversation's episode title, summary and message: text, on every page showing it.
    driver.find_element(By.LINK_TEXT, CONVERSATION).click()
    heading(driver, f"Conversation {CONVERSATION}", "the conversation page")
    _shown_as_text(driver, "the conversation page")
    driver.get(f"{served}/inspect#/episode/{episode}")
    heading(driver, "Episode:", "the episode page")
    _shown_as_text(driver, "the episode page")

    # Markup in the query string: the search box holds it as its value, the results as text.
    query = f"window seat {PLANTED}"
    _search(driver, query)
    assert driver.find_element(By.ID, "search-q").get_attribute("value") == query
    _shown_as_text(driver, "the search page")

    # Inline script put into the page by hand: refused by the CSP, and reported.
    driver.execute_script(LISTEN)
    _refused(driver, INSERT, {"script-src-elem", "script-src-attr"}, "a script element and an onerror handler")
    _refused(driver, WRITE, {"script-src-elem"}, "document.write of a script")
    assert driver.find_element(By.ID, "written").text == "written"  # the write itself happened
    refusals = [e["message"] for e in driver.get_log("browser") if e["source"] == "security"]
    assert refusals and all("Content Security Policy directive 'script-src 'self''" in m for m in refusals), refusals


@contextlib.contextmanager
def _page_elsewhere(html: str) -> Iterator[str]:
    """``html`` served at / by a throwaway server on another loopback port (so another
    origin than the API's), for as long as the block runs: its URL."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_another_origin_cannot_frame_the_inspector(driver, served):
    from selenium.webdriver.common.by import By

    inspector = served + "/inspect"
    page = (
        f"<!doctype html><title>elsewhere</title><iframe src='{inspector}' onload=\"document.title='loaded'\"></iframe>"
    )
    driver.get_log("browser")
    with _page_elsewhere(page) as elsewhere:
        assert elsewhere.split(":")[2] != served.split(":")[2]  # another port: another origin
        driver.get(elsewhere)
        wait_for(driver, lambda d: d.title == "loaded", 30, "the frame loaded (or its refusal shown)")
        driver.switch_to.frame(driver.find_element(By.TAG_NAME, "iframe"))
        try:
            where, login = driver.execute_script("return [location.href, !!document.getElementById('login-form')]")
        finally:
            driver.switch_to.default_content()
    assert not login and not where.startswith(served), f"the inspector rendered in a frame at {where}"
    console = [e["message"] for e in driver.get_log("browser")]
    assert any(f"{served}/" in m and "frame-ancestors 'none'" in m for m in console), console


def _events(driver) -> list[dict[str, Any]]:
    """The DevTools events chromedriver logged since the last read (its performance log)."""
    return [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]


def _urls(events: list[dict[str, Any]]) -> list[str]:
    """Every URL the browser requested or navigated to (the hash changes too)."""
    out = []
    for e in events:
        params = e.get("params", {})
        if e["method"] == "Network.requestWillBeSent":
            out += [params["request"]["url"] + params["request"].get("urlFragment", ""), params.get("documentURL", "")]
        elif e["method"] == "Page.frameNavigated":
            out.append(params["frame"]["url"] + params["frame"].get("urlFragment", ""))
        elif e["method"] == "Page.navigatedWithinDocument":
            out.append(params["url"])
    return out


# Where each event keeps its headers.
HEADERS_OF = {
    "Network.requestWillBeSent": ("request", "headers"),
    "Network.requestWillBeSentExtraInfo": ("headers",),
    "Network.responseReceived": ("response", "headers"),
    "Network.responseReceivedExtraInfo": ("headers",),
}


def _headers(events: list[dict[str, Any]], *methods: str) -> list[dict[str, str]]:
    """The headers of the events of these methods, their names in lower case."""
    out = []
    for e in events:
        if e["method"] in methods:
            found = e["params"]
            for step in HEADERS_OF[e["method"]]:
                found = found.get(step, {})
            out.append({name.lower(): value for name, value in found.items()})
    return out


def test_the_key_is_in_no_url_and_no_cookie(driver, served, db, settings, tenant, auth):
    from selenium.webdriver.common.by import By

    key = auth["Authorization"].removeprefix("Bearer ")
    episode = _plant(db, settings, tenant)
    _logged_in(driver, served, key)
    events = _events(driver)
    driver.find_element(By.LINK_TEXT, CONVERSATION).click()
    heading(driver, f"Conversation {CONVERSATION}", "the conversation page")
    driver.find_element(By.CSS_SELECTOR, f"th a[href='#/episode/{episode}']").click()
    heading(driver, "Episode:", "the episode page")
    _search(driver, "window seat")
    seen = [driver.current_url]
    _log_out(driver)
    seen.append(driver.current_url)
    events += _events(driver)
    history = [entry["url"] for entry in driver.execute_cdp_cmd("Page.getNavigationHistory", {})["entries"]]
    cookies = driver.get_cookies()

    urls = _urls(events) + seen + history
    # What was seen: the fragments fetched and the pages walked through (so the log is read).
    assert any("/inspect/fragments/search?q=window" in u for u in urls), urls
    assert any(u.endswith(f"#/episode/{episode}") for u in history), history
    in_url = [u for u in urls if key in u or quote(key, safe="") in u]
    assert in_url == [], in_url

    # The key went out as a header only, and no response nor script set a cookie with it.
    sent = _headers(events, "Network.requestWillBeSent", "Network.requestWillBeSentExtraInfo")
    assert any(h.get("authorization") == f"Bearer {key}" for h in sent)
    answered = _headers(events, "Network.responseReceived", "Network.responseReceivedExtraInfo")
    assert answered and [h["set-cookie"] for h in answered if key in h.get("set-cookie", "")] == []
    assert [c for c in cookies if key in c["value"] or key in c["name"]] == []
    assert driver.execute_script("return [document.cookie, localStorage.length, sessionStorage.length]") == ["", 0, 0]
