"""Memory review on real PostgreSQL: what retrieval recorded is rated by how the
conversation's next segment used it (the usage signal without an LLM, the scripted LLM
through litellm with one) and applied to the memory's FSRS card exactly once, at most
once per memory per day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fsrs import Card, Rating, Scheduler
from stored import open_reviews, reviews_of
from test_retrieval import axis, blend, write_episode

from memq.memory.retrieval.service import retrieve_memory
from memq.shared.review_notes import flush_review_notes
from memq.worker.review.job import review_segment
from memq_lab.testing.scripted_llm import Reply

pytestmark = pytest.mark.integration

NOW = datetime(2026, 4, 10, 9, 0, tzinfo=UTC)


@pytest.fixture
def memories(db, settings, tenant):
    """Two memories in conversation "past", and the conversation "chat" that asks."""
    lisbon, bike = axis(100), axis(101)
    used = write_episode(
        db,
        settings,
        tenant,
        "past",
        title="Planning the Lisbon trip with Marta",
        summary="They booked an apartment in Alfama with blue azulejo tiles for June.",
        vector=lisbon,
        start=NOW - timedelta(days=30),
        messages=[
            ("user", "Book the Alfama apartment with the azulejo tiles.", lisbon),
            ("assistant", "Booked for June 3 to 10.", lisbon),
        ],
    )
    unused = write_episode(
        db,
        settings,
        tenant,
        "past",
        title="Fixing the bike's rear derailleur",
        summary="The user adjusted the limit screws of the rear derailleur.",
        vector=bike,
        start=NOW - timedelta(days=20),
        messages=[("user", "The chain skips on the big cog.", bike), ("assistant", "Turn the low limit screw.", bike)],
    )
    return {"used": used, "unused": unused, "lisbon": lisbon, "bike": bike}


def ask(db, settings, tenant, query: str, vector: np.ndarray, at: datetime):
    result = retrieve_memory(
        query,
        tenant=tenant,
        conversation_ids=["past"],
        asked_in="chat",
        embed=lambda _: vector,
        settings=settings,
        conn=db,
        now=at,
        detail="none",
        limit=5,
    )
    assert flush_review_notes()  # the notes are written off the request path
    return result


def next_segment(db, settings, tenant, start: datetime, lines: list[tuple[str, str, np.ndarray]]) -> str:
    return write_episode(
        db,
        settings,
        tenant,
        "chat",
        title="Talking about the trip",
        summary="They talked.",
        vector=lines[0][2],
        start=start,
        messages=lines,
    )


def test_the_usage_signal_rates_what_was_used_and_fsrs_applies_it_once(db, settings, tenant, memories):
    found = ask(
        db, settings, tenant, "the apartment in Lisbon", blend((memories["lisbon"], 1), (memories["bike"], 0.9)), NOW
    )
    assert {h.id for h in found.hits} == {memories["used"], memories["unused"]}
    assert len(open_reviews(db, tenant, "chat")) == 2 and open_reviews(db, tenant, "past") == []
    cards = {
        m: db.execute("SELECT fsrs_card FROM episodic_memory WHERE id = %s", (m,)).fetchone()[0]
        for m in (memories["used"], memories["unused"])
    }
    segment = next_segment(
        db,
        settings,
        tenant,
        NOW + timedelta(minutes=5),
        [
            ("user", "So the Alfama apartment has those azulejo tiles, right? June works.", memories["lisbon"]),
            ("assistant", "Yes, blue azulejo tiles, June 3 to 10.", memories["lisbon"]),
        ],
    )

    outcome = review_segment(db, settings, tenant, "chat", segment)
    assert outcome.source == "usage" and outcome.consumed == 2
    assert outcome.ratings == {memories["used"]: "easy", memories["unused"]: "again"}
    at = db.execute("SELECT end_at FROM episodic_memory WHERE id = %s", (segment,)).fetchone()[0].astimezone(UTC)
    scheduler = Scheduler(desired_retention=settings.desired_retention, learning_steps=(), enable_fuzzing=False)
    for memory, rating in ((memories["used"], Rating.Easy), (memories["unused"], Rating.Again)):
        expected, _ = scheduler.review_card(Card.from_dict(cards[memory]), rating, review_datetime=at)
        card, stability, last = db.execute(
            "SELECT fsrs_card, stability, last_reviewed_at FROM episodic_memory WHERE id = %s", (memory,)
        ).fetchone()
        assert card == expected.to_dict() and stability == pytest.approx(expected.stability) and last == at
    (review,) = reviews_of(db, memories["used"])
    assert review[2] == "usage" and review[4]["queries"] == ["the apartment in Lisbon"]
    assert "azulejo" in review[4]["taken_up"] and review[4]["closeness"] >= settings.review_easy_similarity
    assert open_reviews(db, tenant, "chat") == []

    again = review_segment(db, settings, tenant, "chat", segment)  # a redelivered task
    assert again.reviewed == 0
    assert db.execute("SELECT fsrs_card FROM episodic_memory WHERE id = %s", (memories["used"],)).fetchone()[
        0
    ] == card_of(db, memories["used"])


def card_of(db, memory: str) -> dict:
    return db.execute("SELECT card_after FROM memory_review WHERE memory_id = %s", (memory,)).fetchone()[0]


def test_two_reviews_of_a_memory_on_one_day_are_one_review(db, settings, tenant, memories):
    before = db.execute("SELECT fsrs_card FROM episodic_memory WHERE id = %s", (memories["unused"],)).fetchone()[0]
    ask(db, settings, tenant, "derailleur", memories["bike"], NOW)
    first = next_segment(
        db, settings, tenant, NOW + timedelta(minutes=2), [("user", "unrelated chatter here", axis(150))]
    )
    assert review_segment(db, settings, tenant, "chat", first).ratings[memories["unused"]] == "again"
    ask(db, settings, tenant, "derailleur", memories["bike"], NOW + timedelta(hours=2))
    second = next_segment(
        db,
        settings,
        tenant,
        NOW + timedelta(hours=2, minutes=2),
        [("user", "The derailleur limit screws fixed the skipping chain!", memories["bike"])],
    )
    assert review_segment(db, settings, tenant, "chat", second).ratings[memories["unused"]] == "easy"
    rows = db.execute(
        "SELECT rating, reviews_merged, card_before FROM memory_review WHERE memory_id = %s", (memories["unused"],)
    ).fetchall()
    assert len(rows) == 1 and rows[0][0] == 4 and rows[0][1] == 2 and rows[0][2] == before
    end = db.execute("SELECT end_at FROM episodic_memory WHERE id = %s", (second,)).fetchone()[0].astimezone(UTC)
    scheduler = Scheduler(desired_retention=settings.desired_retention, learning_steps=(), enable_fuzzing=False)
    expected, _ = scheduler.review_card(Card.from_dict(before), Rating.Easy, review_datetime=end)
    assert (
        db.execute("SELECT fsrs_card FROM episodic_memory WHERE id = %s", (memories["unused"],)).fetchone()[0]
        == expected.to_dict()
    )


def test_an_llm_rates_when_configured_and_the_usage_signal_when_it_fails(db, settings, tenant, memories, scripted_llm):
    def route(request):
        assert request["response_format"]["json_schema"]["name"] == "MemoryRatings"
        text = request["messages"][1]["content"]
        assert "WHAT THE CONVERSATION SAID AFTERWARDS" in text and '"the trip"' in text
        return {
            "ratings": [
                {"memory": 1, "rating": "good", "reason": "used"},
                {"memory": 2, "rating": "hard", "reason": "x"},
            ]
        }

    scripted_llm.push(route)
    ask(db, settings, tenant, "the trip", blend((memories["lisbon"], 1), (memories["bike"], 1)), NOW)
    segment = next_segment(
        db, settings, tenant, NOW + timedelta(minutes=1), [("user", "Let's pack for June.", axis(151))]
    )
    outcome = review_segment(db, settings, tenant, "chat", segment)
    order = sorted([memories["used"], memories["unused"]])
    assert outcome.source == "llm" and outcome.ratings == {order[0]: "good", order[1]: "hard"}
    assert reviews_of(db, order[0])[0][4]["model"] == "openai/scripted"

    # malformed, then a rating for a memory that was not shown: retries run out, the usage signal rates
    scripted_llm.push(
        Reply(body="{not json"), {"ratings": [{"memory": 1, "rating": "good"}, {"memory": 7, "rating": "easy"}]}
    )
    ask(
        db, settings, tenant, "the trip", blend((memories["lisbon"], 1), (memories["bike"], 1)), NOW + timedelta(days=1)
    )
    later = next_segment(
        db, settings, tenant, NOW + timedelta(days=1, minutes=1), [("user", "Packing now.", axis(152))]
    )
    fallback = review_segment(db, settings, tenant, "chat", later)
    assert fallback.source == "usage" and fallback.consumed == 2
    detail = reviews_of(db, order[0])[-1][4]
    assert "memory_review" in detail["llm_error"]


@pytest.mark.parametrize(
    "first",
    [Reply(status=429, content="slow", headers={"retry-after-ms": "1"}), Reply(delay=5, content='{"ratings": []}')],
    ids=["429", "timeout"],
)
def test_rate_limits_and_timeouts_are_retried(db, settings, tenant, memories, scripted_llm, first):
    both = {"ratings": [{"memory": 1, "rating": "easy"}, {"memory": 2, "rating": "again"}]}
    scripted_llm.push(first, both)
    ask(db, settings, tenant, "derailleur", blend((memories["bike"], 1), (memories["lisbon"], 1)), NOW)
    segment = next_segment(db, settings, tenant, NOW + timedelta(minutes=1), [("user", "chain", axis(153))])
    outcome = review_segment(db, settings, tenant, "chat", segment)
    assert outcome.source == "llm" and sorted(outcome.ratings.values()) == ["again", "easy"]
    assert scripted_llm.request_count == 2
