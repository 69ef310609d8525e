"""Semantic consolidation on real PostgreSQL through litellm against the scripted LLM:
new, reinforced, updated and invalidated facts with both timelines and a history; bad
answers (malformed, unknown numbers, contradictory, a fact ending before it began)
refused whole and never applied half; duplicates reinforced; facts not shown untouched;
a second run adds nothing; with no LLM the episodes wait until `memq consolidate`."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from test_retrieval import axis, write_episode

from memq.cli import main
from memq.shared.db.facts import add_fact, fact_history, list_facts
from memq.worker.consolidation.job import consolidate
from memq_lab.testing.scripted_llm import Reply

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
CONV = "life"


@pytest.fixture
def embedder(settings):
    from memq.shared.embeddings import get_embedder

    return get_embedder(settings)


def seed_fact(
    db,
    embedder,
    tenant,
    content: str,
    category: str,
    valid: datetime | None = None,
    conv: str = CONV,
    episode_ids: tuple[str, ...] = (),
) -> str:
    run = str(uuid.uuid4())
    return add_fact(
        db,
        tenant=tenant,
        conversation_id=conv,
        category=category,
        content=content,
        embedding=embedder.embed([content])[0],
        valid_at=valid,
        episode_ids=list(episode_ids),
        at=T0 - timedelta(days=60),
        run_id=run,
        model="seed",
    )


def episodes(db, settings, tenant, texts: list[tuple[str, str]], conv: str = CONV) -> list[str]:
    ids = []
    for i, (title, said) in enumerate(texts):
        v = axis(200 + i)
        ids.append(
            write_episode(
                db,
                settings,
                tenant,
                conv,
                title=title,
                summary=said,
                vector=v,
                start=T0 + timedelta(days=7 * i),
                messages=[("user", said, v, "Ana")],
            )
        )
    return ids


def numbers(request: dict) -> dict[str, int]:
    """Known fact text -> its local number in the prompt the LLM was given."""
    text = request["messages"][1]["content"]
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"^F(\d+) \[[^\]]*\] (.+)$", text, flags=re.M)}


def pending(db, tenant, conv=CONV) -> int:
    return db.execute(
        "SELECT count(*) FROM episodic_memory WHERE tenant_id = %s AND conversation_id = %s "
        "AND consolidated_at IS NULL",
        (tenant, conv),
    ).fetchone()[0]


@pytest.fixture
def life(db, settings, tenant, embedder):
    facts = {
        "lisbon": seed_fact(db, embedder, tenant, "Ana lives in Lisbon.", "identity", datetime(2024, 5, 1, tzinfo=UTC)),
        "cello": seed_fact(db, embedder, tenant, "Ana plays the cello in an amateur orchestra.", "interest"),
        "vegetarian": seed_fact(
            db, embedder, tenant, "Ana is vegetarian.", "preference", datetime(2020, 1, 1, tzinfo=UTC)
        ),
    }
    eps = episodes(
        db,
        settings,
        tenant,
        [
            (
                "Ana moved from Lisbon to Porto",
                "Ana moved from Lisbon to Porto last week and adopted a dog named Pico.",
            ),
            ("Orchestra rehearsal with the cello", "Ana rehearsed the cello part with her amateur orchestra."),
            ("Ana eats fish again", "Ana said she is no longer vegetarian: she eats fish again."),
        ],
    )
    return facts, eps


def test_new_reinforce_update_invalidate_with_both_timelines_and_history(
    db, settings, tenant, embedder, scripted_llm, life
):
    _facts, eps = life

    def answer(request):
        assert request["response_format"]["json_schema"]["name"] == "Consolidation"
        n = numbers(request)
        return {
            "actions": [
                {"action": "new", "episode": 1, "fact": "Ana has a dog named Pico.", "category": "relationship"},
                {
                    "action": "update",
                    "episode": 1,
                    "target": n["Ana lives in Lisbon."],
                    "fact": "Ana lives in Porto.",
                    "category": "identity",
                    "valid_from": "2026-02-22",
                },
                {"action": "reinforce", "episode": 2, "target": n["Ana plays the cello in an amateur orchestra."]},
                {"action": "invalidate", "episode": 3, "target": n["Ana is vegetarian."]},
            ]
        }

    scripted_llm.push(answer)
    before = datetime.now(UTC)
    outcome = consolidate(db, settings, embedder, tenant, CONV)
    assert outcome.status == "done" and outcome.episodes == 3
    assert outcome.counts == {"new": 1, "updated": 1, "reinforced": 1, "invalidated": 1}
    prompt = scripted_llm.requests[0]["messages"][1]["content"]
    assert "E1 (2026-03-01 10:00" in prompt and "Ana moved from Lisbon to Porto" in prompt and "F3 [" in prompt

    everything = {f.content: f for f in list_facts(db, tenant, CONV, include_retired=True)}
    porto, lisbon = everything["Ana lives in Porto."], everything["Ana lives in Lisbon."]
    assert porto.active and porto.valid_at == datetime(2026, 2, 22, tzinfo=UTC) and porto.created_at >= before
    assert not lisbon.active and lisbon.superseded_by == porto.id
    assert lisbon.invalid_at == datetime(2026, 2, 22, tzinfo=UTC)  # two timelines
    assert lisbon.expired_at is not None and lisbon.expired_at >= before
    assert lisbon.valid_at == datetime(2024, 5, 1, tzinfo=UTC)
    vegetarian = everything["Ana is vegetarian."]
    assert (
        not vegetarian.active and vegetarian.invalid_at == T0 + timedelta(days=14) and vegetarian.superseded_by is None
    )
    cello = everything["Ana plays the cello in an amateur orchestra."]
    assert cello.active and cello.reinforcements == 1 and eps[1] in cello.source_episode_ids
    dog = everything["Ana has a dog named Pico."]
    assert dog.category == "relationship" and dog.valid_at == T0 and dog.source_episode_ids == [eps[0]]
    assert [h["action"] for h in fact_history(db, tenant, lisbon.id)] == ["created", "superseded"]
    assert [h["action"] for h in fact_history(db, tenant, vegetarian.id)] == ["created", "invalidated"]
    assert pending(db, tenant) == 0

    assert consolidate(db, settings, embedder, tenant, CONV).status == "nothing"  # a second run adds nothing
    assert len(list_facts(db, tenant, CONV, include_retired=True)) == 5 and scripted_llm.request_count == 1


@pytest.mark.parametrize(
    "bad",
    [
        Reply(body="{not json at all"),
        {"actions": [{"action": "reinforce", "episode": 1, "target": 42}]},  # a number that was not shown
        {"actions": [{"action": "new", "episode": 9, "fact": "x", "category": "goal"}]},
        {
            "actions": [
                {"action": "reinforce", "episode": 1, "target": 1},
                {"action": "invalidate", "episode": 2, "target": 1},
            ]
        },
        {
            "actions": [
                {
                    "action": "update",
                    "episode": 1,
                    "target": 1,
                    "fact": "Ana lives in Faro.",
                    "category": "identity",
                    "valid_from": "1999-01-01",
                }
            ]
        },  # would end the fact before it began
        {"actions": [{"action": "new", "episode": 1, "fact": "Ana has a dog.", "category": "pets"}]},
    ],
    ids=["malformed", "unknown-fact", "unknown-episode", "contradictory", "ends-before-it-began", "bad-category"],
)
def test_a_bad_answer_is_refused_whole_and_nothing_is_applied(db, settings, tenant, embedder, scripted_llm, life, bad):
    scripted_llm.push(bad, bad)  # MEMQ_LLM_MAX_RETRIES=1 in tests: two attempts
    before = [f.to_json() for f in list_facts(db, tenant, CONV, include_retired=True)]
    outcome = consolidate(db, settings, embedder, tenant, CONV)
    assert outcome.status == "failed" and outcome.error is not None and "semantic_consolidation" in outcome.error
    assert [f.to_json() for f in list_facts(db, tenant, CONV, include_retired=True)] == before
    assert pending(db, tenant) == 3  # still waiting for a later run

    scripted_llm.push(Reply(status=429, content="slow", headers={"retry-after-ms": "1"}), {"actions": []})
    assert consolidate(db, settings, embedder, tenant, CONV).status == "done" and pending(db, tenant) == 0


def test_a_timeout_is_retried(db, settings, tenant, embedder, scripted_llm, life):
    scripted_llm.push(Reply(delay=5, content='{"actions": []}'), {"actions": []})
    assert consolidate(db, settings, embedder, tenant, CONV).status == "done" and scripted_llm.request_count == 2


def test_a_new_fact_that_is_already_known_reinforces_it(db, settings, tenant, embedder, scripted_llm, life):
    _facts, _eps = life
    scripted_llm.push(
        {
            "actions": [
                {
                    "action": "new",
                    "episode": 2,
                    "fact": "Ana plays the cello in an amateur orchestra.",
                    "category": "interest",
                }
            ]
        }
    )
    outcome = consolidate(db, settings, embedder, tenant, CONV)
    assert outcome.counts == {"reinforced": 1}
    cello = [f for f in list_facts(db, tenant, CONV) if "cello" in f.content]
    assert len(cello) == 1 and cello[0].reinforcements == 1
    assert fact_history(db, tenant, cello[0].id)[-1]["detail"]["as"] == "new"


def test_only_the_related_facts_shown_can_be_touched(db, settings, tenant, embedder, scripted_llm, life):
    _facts, _eps = life
    unrelated = [
        seed_fact(db, embedder, tenant, text, "interest")
        for text in (
            "Ana collects vintage fountain pens.",
            "Ana's favourite colour is green.",
            "Ana reads science fiction novels.",
        )
    ]
    elsewhere = seed_fact(db, embedder, tenant, "Ana lives in Lisbon.", "identity", conv="other-conversation")
    narrow = settings.model_copy(update={"consolidation_candidates": 3})
    scripted_llm.push(
        lambda request: {"actions": [{"action": "invalidate", "episode": 1, "target": len(numbers(request)) + 1}]},
        lambda request: {"actions": [{"action": "invalidate", "episode": 1, "target": 4}]},
    )
    assert consolidate(db, narrow, embedder, tenant, CONV).status == "failed"
    shown = numbers(scripted_llm.requests[0])
    assert len(shown) == 3 and "Ana lives in Lisbon." in shown
    assert all(f.active for f in list_facts(db, tenant, CONV)) and len(list_facts(db, tenant, CONV)) == 6
    assert [f.id for f in list_facts(db, tenant, "other-conversation")] == [
        elsewhere
    ]  # another conversation: never shown
    assert set(unrelated) <= {f.id for f in list_facts(db, tenant, CONV)}


def test_without_an_llm_episodes_wait_until_memq_consolidate(db, settings, tenant, embedder, scripted_llm, life):
    saved = settings.llm_model
    settings.llm_model = None
    try:
        assert consolidate(db, settings, embedder, tenant, CONV).status == "waiting"
        status = CliRunner().invoke(main, ["status", CONV, "--tenant", tenant])
        assert "episodes_unconsolidated=3" in status.output
        refused = CliRunner().invoke(main, ["consolidate", CONV, "--tenant", tenant])
        assert refused.exit_code == 1 and "needs an LLM" in refused.output
    finally:
        settings.llm_model = saved
    scripted_llm.push(
        {"actions": [{"action": "new", "episode": 1, "fact": "Ana has a dog named Pico.", "category": "relationship"}]}
    )
    drained = CliRunner().invoke(main, ["consolidate", CONV, "--tenant", tenant])
    assert drained.exit_code == 0, drained.output
    assert "consolidated 3 of 3 episodes: 1 new" in drained.output
    assert "episodes_unconsolidated=0" in CliRunner().invoke(main, ["status", CONV, "--tenant", tenant]).output
    listed = CliRunner().invoke(main, ["facts", CONV, "--tenant", tenant])
    assert "Ana has a dog named Pico. (relationship, since 1 Mar 2026)" in listed.output


def test_a_consolidation_is_due_at_the_threshold_or_for_a_flashbulb(db, settings, tenant):
    from memq.worker.tasks.memory import _due

    v = axis(240)
    write_episode(
        db,
        settings,
        tenant,
        "quiet",
        title="Small talk",
        summary="Weather.",
        vector=v,
        start=T0,
        messages=[("user", "Nice weather today.", v)],
    )
    assert not _due(db, settings, tenant, "quiet")  # one ordinary episode waits for more
    write_episode(
        db,
        settings,
        tenant,
        "quiet",
        title="The accident",
        summary="Ana was in a car accident.",
        vector=v,
        start=T0 + timedelta(days=1),
        surprise=0.9,
        messages=[("user", "I was in a car accident!", v)],
    )
    assert _due(db, settings, tenant, "quiet")  # a flashbulb does not wait
    for i in range(3):
        write_episode(
            db,
            settings,
            tenant,
            "busy",
            title=f"Chat {i}",
            summary="Talk.",
            vector=v,
            start=T0 + timedelta(days=i),
            messages=[("user", f"message {i}", v)],
        )
        assert _due(db, settings, tenant, "busy") is (i + 1 >= settings.consolidation_threshold)


def test_retrieval_shows_the_relevant_facts_first_and_keeps_the_budget(db, settings, tenant, embedder, life):
    from memq.memory.retrieval.service import retrieve_memory
    from memq.shared.tokens import count_tokens

    for budget in (50, 80, 150, 400, 1500):
        r = retrieve_memory(
            "Does Ana play an instrument?",
            tenant=tenant,
            conversation_id=CONV,
            max_tokens=budget,
            settings=settings,
            conn=db,
            record=False,
        )
        assert r.tokens == count_tokens(r.text) <= budget, budget
        if budget >= 150:
            assert r.text.startswith("## Known facts\n- Ana plays the cello in an amateur orchestra. (interest)")
            assert r.to_json()["facts"][0]["content"] == "Ana plays the cello in an amateur orchestra."
    other = retrieve_memory(
        "Does Ana play an instrument?",
        tenant=tenant,
        conversation_id="someone-else",
        settings=settings,
        conn=db,
        record=False,
    )
    assert other.facts == [] and "Known facts" not in other.text  # facts of another conversation are not shown
    whole = retrieve_memory("Does Ana play an instrument?", tenant=tenant, settings=settings, conn=db, record=False)
    assert whole.facts[0]["content"] == "Ana plays the cello in an amateur orchestra."  # the whole tenant's facts
    stranger = retrieve_memory(
        "Does Ana play an instrument?", tenant=f"{tenant}-x", settings=settings, conn=db, record=False
    )
    assert stranger.facts == []  # never another tenant's


def forget(db, settings, tenant: str, conv: str) -> None:
    from memq.shared.connections import mailbox_client
    from memq.shared.forget import forget_conversation
    from memq.shared.mailbox.keys import conversation_keys

    forget_conversation(mailbox_client(settings), db, conversation_keys(settings, tenant, conv))


def _owned(db, tenant: str, user: str | None, *convs: str) -> None:
    for conv in convs:
        db.execute(
            "INSERT INTO conversation (tenant_id, conversation_id, user_id) VALUES (%s, %s, %s) "
            "ON CONFLICT (tenant_id, conversation_id) DO UPDATE SET user_id = excluded.user_id",
            (tenant, conv, user),
        )


def test_a_users_facts_span_their_conversations_and_forgetting_one_takes_out_only_its_part(
    db, settings, tenant, embedder, scripted_llm
):
    """Ana's facts learnt in one conversation are shown, reinforced and updated when another
    of her conversations is consolidated; a conversation of no user sees only its own.
    Forgetting the second conversation takes out what it taught and the support it gave;
    forgetting the first keeps a fact the second also supports, moved to it."""
    _owned(db, tenant, "ana", "home", "work")
    _owned(db, tenant, None, "alone")
    (home_ep,) = episodes(db, settings, tenant, [("Ana at home", "Ana lives in Lisbon and plays the cello.")], "home")
    lisbon = seed_fact(db, embedder, tenant, "Ana lives in Lisbon.", "identity", conv="home", episode_ids=(home_ep,))
    cello = seed_fact(
        db,
        embedder,
        tenant,
        "Ana plays the cello in an amateur orchestra.",
        "interest",
        conv="home",
        episode_ids=(home_ep,),
    )
    (work_ep,) = episodes(
        db, settings, tenant, [("Ana moved", "Ana moved from Lisbon to Porto; still plays cello.")], "work"
    )

    def answer(request):
        n = numbers(request)
        return {
            "actions": [
                {
                    "action": "update",
                    "episode": 1,
                    "target": n["Ana lives in Lisbon."],
                    "fact": "Ana lives in Porto.",
                    "category": "identity",
                },
                {"action": "reinforce", "episode": 1, "target": n["Ana plays the cello in an amateur orchestra."]},
            ]
        }

    scripted_llm.push(answer)
    assert consolidate(db, settings, embedder, tenant, "work").counts == {"updated": 1, "reinforced": 1}
    facts = {f.content: f for f in list_facts(db, tenant, "home", include_retired=True)}
    porto = {f.content: f for f in list_facts(db, tenant, "work")}["Ana lives in Porto."]
    assert not facts["Ana lives in Lisbon."].active and facts["Ana lives in Lisbon."].superseded_by == porto.id
    assert set(facts["Ana plays the cello in an amateur orchestra."].source_episode_ids) == {home_ep, work_ep}

    # a conversation of no user is shown no fact of Ana's
    episodes(db, settings, tenant, [("Someone in Lisbon", "Someone lives in Lisbon too.")], "alone")
    scripted_llm.push({"actions": []})
    assert consolidate(db, settings, embedder, tenant, "alone").status == "done"
    assert "KNOWN FACTS: none" in scripted_llm.requests[-1]["messages"][1]["content"]

    # forget "work": Porto goes, Lisbon is true again, the cello loses work's support
    forget(db, settings, tenant, "work")
    after = {f.id: f for f in list_facts(db, tenant, "home", include_retired=True)}
    assert after[lisbon].active and after[lisbon].superseded_by is None and after[lisbon].invalid_at is None
    assert after[cello].source_episode_ids == [home_ep] and after[cello].reinforcements == 0
    assert list_facts(db, tenant, "work", include_retired=True) == []
    assert [h["action"] for h in fact_history(db, tenant, cello)] == ["created"]


def test_forgetting_the_conversation_a_fact_was_learnt_in_keeps_it_where_it_is_also_supported(
    db, settings, tenant, embedder, scripted_llm
):
    _owned(db, tenant, "ana", "first", "second")
    (first_ep,) = episodes(db, settings, tenant, [("Dog", "Ana adopted a dog named Pico.")], "first")
    pico = seed_fact(
        db, embedder, tenant, "Ana has a dog named Pico.", "relationship", conv="first", episode_ids=(first_ep,)
    )
    (second_ep,) = episodes(db, settings, tenant, [("Walk", "Ana walked Pico, her dog, in the park.")], "second")
    scripted_llm.push(
        lambda request: {
            "actions": [{"action": "reinforce", "episode": 1, "target": numbers(request)["Ana has a dog named Pico."]}]
        }
    )
    assert consolidate(db, settings, embedder, tenant, "second").counts == {"reinforced": 1}
    forget(db, settings, tenant, "first")
    (kept,) = list_facts(db, tenant, "second")
    assert kept.id == pico and kept.source_episode_ids == [second_ep] and kept.reinforcements == 1
    assert list_facts(db, tenant, "first", include_retired=True) == []
