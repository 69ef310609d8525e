"""The whole chain through real Redis, PostgreSQL and a Celery worker, with the scripted
LLM answering through litellm: messages -> segmentation -> episodes -> memory review of
what was retrieved -> semantic consolidation -> facts in retrieval, in the session
context and over the API, scoped to the tenant."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from waiting import wait_until

pytestmark = pytest.mark.integration

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
TOPICS = [
    [
        "I just moved from Lisbon to Porto, the new flat is near the river.",
        "Congratulations on the move to Porto! How is the flat?",
        "Bright and quiet, and my dog Pico loves the riverside walks.",
    ],
    [
        "My orchestra rehearses Brahms on Thursday, I play the cello part.",
        "Brahms is a lovely programme for the cello section.",
        "The second movement is hard, I practise it every evening.",
    ],
    [
        "Can you suggest a vegetarian dinner for friends on Saturday?",
        "A mushroom risotto with a green salad works well for six people.",
        "Perfect, I will make the risotto and a lemon tart.",
    ],
]


def route(request: dict):
    name = request["response_format"]["json_schema"]["name"]
    text = request["messages"][-1]["content"]
    if name == "EpisodeTitleAndSummary":
        said = re.search(r"\] \w+: (.+)", text)
        assert said is not None, text
        first = said.group(1)
        return {"title": "Ana talks with the assistant about her week", "summary": f"Ana said: {first}"}
    if name == "MemoryRatings":
        shown = re.findall(r"^\[(\d+)\]", text, flags=re.M)
        return {"ratings": [{"memory": int(n), "rating": "good", "reason": "used"} for n in shown]}
    if name == "Consolidation":
        return {
            "actions": [
                {"action": "new", "episode": 1, "fact": "Ana lives in Porto, near the river.", "category": "identity"},
                {"action": "new", "episode": 1, "fact": "Ana has a dog named Pico.", "category": "relationship"},
                {"action": "new", "episode": 2, "fact": "Ana plays the cello in an orchestra.", "category": "interest"},
            ]
        }
    raise AssertionError(f"unexpected request {name}")


def shape(value):
    """The JSON types at every node (an int that became a float changes the bytes)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def as_sent(answer) -> str:
    return json.dumps(answer.json(), sort_keys=True)


def as_library(value) -> str:
    return json.dumps(json.loads(json.dumps(value)), sort_keys=True)


def same_json_as_the_library(client, auth, db, settings, tenant, conv, fact_id):
    """The typed answers (response models) are the library's JSON, key for key and type for
    type: what the routes returned before they had models."""
    from memq.memory.context.service import manifest, session_context
    from memq.memory.retrieval.facts import find_facts
    from memq.memory.retrieval.facts_section import fact_record
    from memq.memory.retrieval.service import recent_memory, retrieve_memory
    from memq.shared.db.facts import fact_history, get_fact, list_facts

    now = (T0 + timedelta(days=1)).isoformat()
    ask = {"query": "Ana's dog and the cello", "conversation_id": conv, "detail": "high", "now": now, "record": False}
    for path in ("/v1/memory/retrieve?format=json", "/v1/memory/retrieve/raw"):
        answer = client.post(path, headers=auth, json=ask)
        library = retrieve_memory(
            ask["query"],
            tenant=tenant,
            conversation_id=conv,
            detail="high",
            now=now,
            settings=settings,
            conn=db,
            record=False,
        ).to_json()
        assert library["facts"] and library["memories"] and library["memories"][0]["messages"], library
        del library["timings_ms"]  # measured per call (and whether the model loaded): only the types compare
        assert as_sent(answer) == as_library({**library, "timings_ms": answer.json()["timings_ms"]})
        assert answer.json()["timings_ms"] and {shape(v) for v in answer.json()["timings_ms"].values()} == {"float"}

    recent = recent_memory(conv, tenant=tenant, days=30, now=now, settings=settings, conn=db)
    expected = {"conversation_id": conv, "tokens": recent.tokens, "text": recent.text, "memories": recent.records}
    for path in ("/v1/memory/recent?format=json", "/v1/memory/recent/raw"):
        answer = client.post(path, headers=auth, json={"conversation_id": conv, "days": 30, "now": now})
        assert as_sent(answer) == as_library(expected)

    url = f"/v1/conversations/{conv}"
    assert shape(client.get(f"{url}/manifest", headers=auth).json()) == shape(
        manifest(conv, tenant=tenant, settings=settings, conn=db).to_json()
    )
    assert shape(client.get(f"{url}/context", headers=auth).json()) == shape(
        session_context(conv, tenant=tenant, settings=settings, conn=db).to_json()
    )
    assert as_sent(client.get(f"{url}/facts", headers=auth)) == as_library(
        {"conversation_id": conv, "facts": [f.to_json() for f in list_facts(db, tenant, conv)]}
    )
    query, found = find_facts("musical instrument", tenant=tenant, settings=settings, conn=db, conversation_id=conv)
    searched = client.post(
        "/v1/facts/search", headers=auth, json={"query": "musical instrument", "conversation_id": conv}
    )
    assert as_sent(searched) == as_library({"query": query, "facts": [fact_record(f, s, r) for f, s, r in found]})
    fact = get_fact(db, tenant, fact_id)
    assert fact is not None
    assert as_sent(client.get(f"/v1/facts/{fact_id}/history", headers=auth)) == as_library(
        {"fact": fact.to_json(), "history": fact_history(db, tenant, fact_id)}
    )


@pytest.fixture
def rules(settings):
    saved = settings.detector
    settings.detector = "rules"  # time gaps decide: three topics, three episodes
    yield
    settings.detector = saved


def episode_count(db, tenant: str) -> int:
    return db.execute("SELECT count(*) FROM episodic_memory WHERE tenant_id = %s", (tenant,)).fetchone()[0]


def test_messages_to_facts_through_the_worker(
    client, auth, stranger, worker, producer, db, tenant, settings, scripted_llm, rules
):
    scripted_llm.default = route
    conv = "ana"
    url = f"/v1/conversations/{conv}"
    for t, lines in enumerate(TOPICS):
        start = T0 + timedelta(hours=t)  # an hour apart: a time boundary before each topic
        batch = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": text,
                "timestamp": (start + timedelta(minutes=i)).isoformat(),
                "metadata": {"name": "Ana" if i % 2 == 0 else "Bo"},
            }
            for i, text in enumerate(lines)
        ]
        assert client.post(f"{url}/messages", json={"messages": batch}, headers=auth).status_code == 202
        if t == 1:  # the agent looks something up during the second topic: reviewed when that segment ends
            wait_until(lambda: episode_count(db, tenant), 90, interval=0.3)
            r = client.post(
                "/v1/memory/retrieve",
                headers=auth,
                json={
                    "query": "where does Ana live now?",
                    "conversation_id": conv,
                    "now": (start + timedelta(minutes=1)).isoformat(),
                },
            )
            assert "Porto" in r.text
    client.post(f"{url}/flush", headers=auth)
    producer.wait_idle(conv, tenant=tenant, timeout=120)

    facts = wait_until(lambda: client.get(f"{url}/facts", headers=auth).json()["facts"], 90, interval=0.3)
    assert {f["content"] for f in facts} == {
        "Ana lives in Porto, near the river.",
        "Ana has a dog named Pico.",
        "Ana plays the cello in an orchestra.",
    }
    assert all(len(f["source_episode_ids"]) == 1 for f in facts)
    reviewed = db.execute("SELECT source, rating FROM memory_review WHERE tenant_id = %s", (tenant,)).fetchall()
    assert reviewed and all(source == "llm" and rating == 3 for source, rating in reviewed)
    assert (
        db.execute(
            "SELECT count(*) FROM episodic_memory WHERE tenant_id = %s AND consolidated_at IS NULL", (tenant,)
        ).fetchone()[0]
        == 0
    )

    raw = client.post(
        "/v1/memory/retrieve/raw", headers=auth, json={"query": "Ana's dog", "conversation_id": conv}
    ).json()
    assert raw["facts"] and raw["facts"][0]["content"] == "Ana has a dog named Pico."
    assert raw["text"].startswith("## Known facts\n- Ana has a dog named Pico. (relationship")
    context = client.get(f"{url}/context", headers=auth).json()
    assert "## Known facts" in context["text"] and context["facts"]
    found = client.post(
        "/v1/facts/search", headers=auth, json={"query": "musical instrument", "conversation_id": conv}
    ).json()
    assert found["facts"][0]["content"] == "Ana plays the cello in an orchestra."
    history = client.get(f"/v1/facts/{facts[0]['id']}/history", headers=auth).json()
    assert history["history"][0]["action"] == "created"
    same_json_as_the_library(client, auth, db, settings, tenant, conv, facts[0]["id"])

    _, theirs = stranger  # another tenant sees none of it
    assert client.get(f"{url}/facts", headers=theirs).status_code == 404  # as if it never existed
    assert client.post("/v1/facts/search", headers=theirs, json={"query": "Ana's dog"}).json()["facts"] == []
    assert client.get(f"/v1/facts/{facts[0]['id']}/history", headers=theirs).status_code == 404
    assert client.post("/v1/memory/retrieve/raw", headers=theirs, json={"query": "Ana's dog"}).json()["facts"] == []

    assert client.delete(url, headers=auth).json()["forgotten"] is True  # forget takes the facts too
    from invariants import traces

    assert traces(db, producer.redis, tenant, conv) == []
