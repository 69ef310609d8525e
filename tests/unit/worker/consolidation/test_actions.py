"""What a consolidation answer may say (local numbers only, each known fact acted on
once, no fact ending before it began), and how it becomes a plan."""

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memq.worker.consolidation.actions import Shown, answer_model, plan

E1, E2 = datetime(2026, 3, 1, 9, tzinfo=UTC), datetime(2026, 3, 8, 9, tzinfo=UTC)
SHOWN = Shown((("ep-1", E1), ("ep-2", E2)), (("fact-a", datetime(2025, 1, 1, tzinfo=UTC)), ("fact-b", None)))


def parse(actions):
    return answer_model(SHOWN).model_validate({"actions": actions})


def test_a_valid_answer_becomes_a_plan_with_ids():
    answer = parse(
        [
            {"action": "new", "episode": 1, "fact": "Ana  has a cat named Miso.", "category": "relationship"},
            {
                "action": "update",
                "episode": 2,
                "target": 1,
                "fact": "Ana lives in Porto.",
                "category": "identity",
                "valid_from": "2026-03-05",
            },
            {"action": "reinforce", "episode": 2, "target": 2},
        ]
    )
    steps = plan(answer, SHOWN).steps
    assert [(s.kind, s.episode_id, s.target_id) for s in steps] == [
        ("new", "ep-1", None),
        ("update", "ep-2", "fact-a"),
        ("reinforce", "ep-2", "fact-b"),
    ]
    assert steps[0].fact == "Ana has a cat named Miso." and steps[0].at == E1  # the episode's time when none is said
    assert steps[1].at == datetime(2026, 3, 5, tzinfo=UTC)
    assert parse([]).actions == []


@pytest.mark.parametrize(
    "actions, says",
    [
        ([{"action": "new", "episode": 3, "fact": "x", "category": "goal"}], "E3 was not shown"),
        ([{"action": "reinforce", "episode": 1, "target": 9}], "F9 was not shown"),
        ([{"action": "reinforce", "episode": 1}], "was not shown"),
        ([{"action": "new", "episode": 1, "fact": "x"}], "category is missing"),
        ([{"action": "update", "episode": 1, "target": 1, "category": "goal"}], "text is missing"),
        ([{"action": "new", "episode": 1, "fact": "x", "category": "goal", "target": 1}], "a new fact has no target"),
        (
            [{"action": "reinforce", "episode": 1, "target": 2}, {"action": "invalidate", "episode": 2, "target": 2}],
            "contradictory",
        ),
        (
            [{"action": "invalidate", "episode": 1, "target": 1}, {"action": "invalidate", "episode": 1, "target": 1}],
            "contradictory",
        ),
        (
            [
                {
                    "action": "update",
                    "episode": 1,
                    "target": 1,
                    "fact": "x",
                    "category": "goal",
                    "valid_from": "2024-06-01",
                }
            ],
            "would end",
        ),
        ([{"action": "new", "episode": 1, "fact": "x", "category": "goal", "valid_from": "soon"}], "not an ISO date"),
        ([{"action": "new", "episode": 1, "fact": "x", "category": "mood"}], "category"),
        ([{"action": "forget", "episode": 1}], "action"),
    ],
)
def test_answers_that_are_refused_whole(actions, says):
    with pytest.raises(ValidationError, match=says):
        parse(actions)


def test_with_no_known_facts_only_new_facts_are_possible():
    bare = Shown((("ep-1", E1),), ())
    with pytest.raises(ValidationError, match="only new facts"):
        answer_model(bare).model_validate({"actions": [{"action": "invalidate", "episode": 1, "target": 1}]})
