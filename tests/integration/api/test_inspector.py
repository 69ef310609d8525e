"""The memory inspector's routes without a browser (the browser test is
test_inspector_browser.py): the shell page and its local assets, the fragments behind the
API's bearer keys and scoped to the key's tenant, every value HTML-escaped, the timeline's
chapters, cuts and times, and a conversation of 1,000 messages rendered by the server in
under 100 ms (once its chapters are drawn)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from test_retrieval import axis, write_episode

pytestmark = pytest.mark.integration

PLANTED = "<script>alert('planted')</script>"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PAGES = ("conversations", "facts", "search?q=seat", "status")


def _store(db, settings, tenant: str, conversation: str, episodes: int, per_episode: int) -> list[str]:
    """``episodes`` episodes of ``per_episode`` messages, an hour apart; the first message
    of the first episode carries a script tag, so does its title."""
    ids = []
    for n in range(episodes):
        said = [
            ("user" if i % 2 == 0 else "assistant", f"message {n}.{i} about the train seat", axis(n % 300))
            for i in range(per_episode)
        ]
        if n == 0:
            said[0] = ("user", f"hello {PLANTED} and a window seat", axis(0))
        ids.append(
            write_episode(
                db,
                settings,
                tenant,
                conversation,
                title=f"episode {n}" + (f" {PLANTED}" if n == 0 else ""),
                summary=f"summary {n} {PLANTED}",
                vector=axis(n % 300),
                messages=said,
                start=START + timedelta(hours=n),
                step=timedelta(seconds=30),
                surprise=0.9 if n == 1 else 0.1,
            )
        )
    return ids


def test_the_shell_page_and_its_assets_are_served_locally_without_a_key(client):
    page = client.get("/inspect")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert '<label for="key">API key</label>' in html and 'type="password"' in html
    assert all(tag in html for tag in ("<header", "<nav", "<main"))
    assert not re.search(r'(src|href)="(https?:)?//', html), "everything is served by the API itself"
    for name, kind in (("inspect.js", "text/javascript"), ("inspect.css", "text/css")):
        asset = client.get(f"/inspect/static/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind), name
    script = client.get("/inspect/static/inspect.js").text
    assert "sessionStorage.setItem" in script and "localStorage." not in script and "document.cookie" not in script
    assert client.get("/inspect/static/..%2Fqueries.py").status_code == 404
    assert client.get("/inspect/static/queries.py").status_code == 404


def test_the_inspector_is_not_in_the_openapi_document(app):
    assert not [path for path in app.openapi()["paths"] if path.startswith("/inspect")]


def test_every_fragment_needs_a_key(client, auth):
    for page in (*PAGES, "conversation/anything", "episode/00000000-0000-0000-0000-000000000000"):
        for headers in ({}, {"Authorization": "Bearer memq_not-a-key"}):
            answer = client.get(f"/inspect/fragments/{page}", headers=headers)
            assert answer.status_code == 401, (page, answer.text)
            assert answer.json()["error"]["type"] == "unauthorized"
    assert client.post("/inspect/fragments/quarantine/retry?conversation_id=c&item=m:x").status_code == 401
    for page in PAGES:
        assert client.get(f"/inspect/fragments/{page}", headers=auth).status_code == 200, page


def test_message_content_is_escaped_and_other_tenants_see_nothing(client, db, settings, tenant, auth, stranger):
    conv = "escaping"
    first, key_moment = _store(db, settings, tenant, conv, episodes=2, per_episode=4)
    pages = {
        "list": client.get("/inspect/fragments/conversations", headers=auth),
        "timeline": client.get(f"/inspect/fragments/conversation/{conv}", headers=auth),
        "episode": client.get(f"/inspect/fragments/episode/{first}", headers=auth),
        "search": client.get(
            "/inspect/fragments/search", params={"q": "window seat", "conversation_id": conv}, headers=auth
        ),
    }
    for name, page in pages.items():
        assert page.status_code == 200, (name, page.text)
        assert "<script" not in page.text, name
        assert page.headers["cache-control"] == "no-store"
    assert conv in pages["list"].text
    timeline = pages["timeline"].text
    assert "&lt;script&gt;alert(&#39;planted&#39;)&lt;/script&gt;" in timeline
    assert f'href="#/episode/{first}"' in timeline and f'href="#/episode/{key_moment}"' in timeline
    assert timeline.count('class="key-moment-mark"') == 1  # surprise 0.9 >= MEMQ_KEY_MOMENT_SURPRISE
    assert "Retrievability now" in timeline and "Every accepted message is in an episode." in timeline
    assert "hello &lt;script&gt;" in pages["episode"].text and "No review yet." in pages["episode"].text
    search = pages["search"].text
    assert "Why each memory ranked where it did" in search and f'href="#/episode/{first}"' in search
    assert "Episode lexical rank" in search and "Final" in search

    _, theirs = stranger
    assert client.get(f"/inspect/fragments/episode/{first}", headers=theirs).status_code == 404
    assert client.get(f"/inspect/fragments/conversation/{conv}", headers=theirs).status_code == 404
    assert conv not in client.get("/inspect/fragments/conversations", headers=theirs).text
    found = client.get("/inspect/fragments/search", params={"q": "window seat"}, headers=theirs).text
    assert first not in found and "planted" not in found
    assert client.get("/inspect/fragments/episode/not-a-uuid", headers=auth).status_code == 404
    assert client.get("/inspect/fragments/conversation/bad%20id", headers=auth).status_code == 400


def test_retrying_what_is_not_quarantined_is_a_404(client, auth):
    answer = client.post("/inspect/fragments/quarantine/retry?conversation_id=c1&item=m:nothing", headers=auth)
    assert answer.status_code == 404 and answer.json()["error"]["message"] == "nothing in the quarantine matches"


def test_a_conversation_of_1000_messages_renders_on_the_server_in_under_100_ms(client, db, settings, tenant, auth):
    conv = "thousand"
    _store(db, settings, tenant, conv, episodes=20, per_episode=50)
    url = f"/inspect/fragments/conversation/{conv}"
    times = []
    began = time.perf_counter()
    assert (
        client.get(url, headers=auth).status_code == 200
    )  # draws the chapters (then kept, memq/api/inspect/chapters.py)
    first = time.perf_counter() - began
    for _ in range(5):  # in-process (no network); the best of five, as the machine may be busy
        began = time.perf_counter()
        page = client.get(url, headers=auth)
        times.append(time.perf_counter() - began)
        assert page.status_code == 200
    assert page.text.count('class="message-item') == 1000 and page.text.count('class="block"') == 20
    assert 'class="chapter ' in page.text and "could not be drawn" not in page.text
    best = min(times)
    print(
        f"\nconversation of 1,000 messages: first view {first * 1000:.0f} ms (chapters drawn), then best "
        f"{best * 1000:.1f} ms of {[round(t * 1000, 1) for t in times]}"
    )
    assert best < 0.100, f"best of five was {best * 1000:.0f} ms"


def test_the_timeline_draws_chapters_cuts_idle_time_and_shows_times(client, db, settings, tenant, auth):
    """Six events an hour apart: a chapter each (a pause of 30 minutes starts a chapter),
    each event inside its chapter's band, the hours between them cut from the axis, the
    axis' labels times with the day once; no inline style or script in the fragment."""
    conv = "chaptered"
    ids = _store(db, settings, tenant, conv, episodes=6, per_episode=4)
    page = client.get(f"/inspect/fragments/conversation/{conv}", headers=auth)
    assert page.status_code == 200, page.text
    assert "style-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert " style=" not in html and "<script" not in html and "onclick=" not in html
    bands = re.findall(r'<g class="chapter tint-\d" data-chapter="(\d+)" data-events="([\d ]+)">', html)
    assert [events for _, events in bands] == ["1", "2", "3", "4", "5", "6"], bands
    for number, _ in bands:  # every event inside its chapter's band: a link with its chapter's number
        assert f'data-chapter="{number}" aria-label="Episode {number}: episode' in html
    assert all(f'href="#/episode/{i}"' in html for i in ids)
    assert html.count('<g class="cut">') == 5 and "without a message, cut from the axis" in html
    ticks = re.findall(r'<text class="tick-label"[^>]*>([^<]+)</text>', html)
    assert all(re.fullmatch(r"\d\d:\d\d", t) for t in ticks), ticks
    assert [t for t in ticks if t.endswith(":00")] == [f"{h:02}:00" for h in range(9, 15)], ticks  # each run's start
    assert re.findall(r'<text class="tick-day"[^>]*>([^<]+)</text>', html) == ["Mon 2 Mar"]
    assert "<caption>Runs of consecutive events on one topic" in html  # the chapters' table


def test_the_facts_page_shows_both_timelines_and_each_facts_history(client, db, settings, tenant, auth, stranger):
    """Facts as consolidation writes them (memq.shared.db.facts): one superseded by another
    and one still active; the page draws valid and recorded time for each and lists every
    change, and another tenant sees none of them."""
    import uuid
    from datetime import UTC, datetime

    import numpy as np

    from memq.shared.db.facts import add_fact, retire_fact

    conv, run = "facts-page", str(uuid.uuid4())
    episode = _store(db, settings, tenant, conv, episodes=1, per_episode=2)[0]
    vector = np.ones(settings.embedding_dim, dtype=np.float32) / np.sqrt(settings.embedding_dim)
    lived = datetime(2024, 5, 1, tzinfo=UTC)
    moved, recorded = datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 2, 3, tzinfo=UTC)
    common = {"tenant": tenant, "conversation_id": conv, "run_id": run, "model": "test", "episode_ids": [episode]}
    with db.transaction():
        old = add_fact(
            db, category="identity", content="Ana lives in <b>Lisbon</b>.", embedding=vector, valid_at=lived,
            at=datetime(2026, 1, 5, tzinfo=UTC), **common,
        )  # fmt: skip
        new = add_fact(
            db, category="identity", content="Ana lives in Porto.", embedding=vector, valid_at=moved, at=recorded,
            **common,
        )  # fmt: skip
        retire_fact(
            db, old, tenant=tenant, conversation_id=conv, invalid_at=moved, at=recorded, run_id=run,
            episode_ids=[episode], superseded_by=new,
        )  # fmt: skip

    page = client.get("/inspect/fragments/facts", params={"conversation_id": conv}, headers=auth)
    assert page.status_code == 200, page.text
    html = page.text
    assert "2 fact(s)" in html and "Ana lives in Porto." in html
    assert "&lt;b&gt;Lisbon&lt;/b&gt;" in html and "<b>Lisbon" not in html  # content escaped
    assert html.count('class="fact active"') == 1 and html.count('class="fact retired"') == 1
    assert f"superseded by {new}" in html
    assert html.count('class="fact-lines"') == 2 and html.count('class="recorded"') == 2  # both timelines each
    assert "History (2 change(s))" in html and "History (1 change(s))" in html  # created + superseded; created
    assert "<strong>superseded</strong>" in html and html.count("<strong>created</strong>") == 2
    assert f'href="#/episode/{episode}"' in html
    _, theirs = stranger
    assert "Ana lives" not in client.get("/inspect/fragments/facts", headers=theirs).text


def test_a_conversation_still_open_in_redis_is_listed(client, producer, tenant, auth, stranger):
    """Messages accepted, no episode yet (no flush: the event stays open): the conversation
    is listed with its last accepted message, for its tenant only.

    Before a worker drains it, only Redis knows it (the second table); once the session's
    worker (started by an earlier test, if any) has synced it, PostgreSQL holds its row with
    no episode and the open-event column says so. Either way the page shows it open."""
    conv = "still-open"
    producer.add_messages([{"role": "user", "content": "Just one thought for now."}], conversation_id=conv)
    html = client.get("/inspect/fragments/conversations", headers=auth).text
    link = f'<a href="#/conversation/{conv}">{conv}</a>'
    row = re.search(rf"<tr>\s*<th scope=\"row\">{re.escape(link)}</th>(.*?)</tr>", html, re.S)
    assert row is not None, html
    only_in_redis = "not yet in any episode" in html.split(link)[0]
    stored_and_open = re.search(r'<td class="num">0</td>.*<td>yes, last message', row.group(1), re.S)
    assert only_in_redis or stored_and_open, row.group(0)
    page = client.get(f"/inspect/fragments/conversation/{conv}", headers=auth)  # no episode: the open event alone
    assert page.status_code == 200 and '<g class="open-event">' in page.text, page.text
    _, theirs = stranger
    assert conv not in client.get("/inspect/fragments/conversations", headers=theirs).text
