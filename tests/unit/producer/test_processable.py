"""A message the producer accepts can be processed: property tests over what a real
caller can send (``tests/strategies.py``).

For every generated input, ``validate_message`` either refuses it with a
``ValidationError`` naming the field, or accepts it; an accepted message then goes
through everything a worker does, without servers: the inbox item enqueue.lua pushes,
decoding and numbering, the buffer item round trip, the record, token counting, engine
steps with the rules-only, hysteresis, learned (default) and dual-channel detectors
(fake deterministic embeddings: no model), closing the open event, tool extraction,
the LLM prompt rendering, the extractive title and summary, and the episode row.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import strategies as gen
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from memq.producer.validation import FIELDS, ValidMessage, validate_message
from memq.shared.errors import ValidationError
from memq.shared.mailbox.codec import to_micros
from memq.shared.settings import Settings
from memq.shared.tokens import message_tokens
from memq.worker.episodes.extractive import extractive_summary, extractive_title
from memq.worker.episodes.llm_summary import render_segment
from memq.worker.episodes.tools_used import tool_name, tools_used

S = Settings(_env_file=None).model_copy(update={"llm_model": None})  # extractive path, no network
NOW = gen.NOW
TITLE_LIMIT = 1_000  # characters; the extractive title is well under this
SUMMARY_LIMIT = 10_000
EXAMPLES = int(os.environ.get("MEMQ_PROPERTY_EXAMPLES", "200"))  # raise for a soak run
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,  # model-free code on 100,000-character strings is not instant
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


def validate(raw) -> ValidMessage | None:
    """The validator's verdict; a refusal must be a ``ValidationError`` saying where
    (any other exception type fails the test as it propagates)."""
    try:
        valid = validate_message(raw, S, NOW, index=0)
    except ValidationError as exc:
        assert exc.field or "unknown field" in str(exc), f"refusal without a field: {exc}"
        assert str(exc).startswith("message #0: ")
        event(f"refused: {(exc.field or 'unknown').split('.')[0].split('[')[0]}")
        return None
    event("accepted")
    if valid.metadata and "tool_calls" in valid.metadata:
        event("accepted with tool_calls")
    if len(valid.content) > 10_000:
        event("accepted, content > 10,000 characters")
    return valid


def check_worker_run(valid: ValidMessage, detector: str, gap_seconds: float) -> None:
    run = gen.run_worker(valid, S, detector_name=detector, gap_seconds=gap_seconds)
    message = run.message

    # The record round-trips what was accepted, exactly.
    record = message.to_record()
    assert json.loads(json.dumps(record, ensure_ascii=False, allow_nan=False)) == record
    assert json.loads(json.dumps(record)) == record  # ASCII-escaped, as EventState.to_json writes the overlap
    assert (record["id"], record["role"], record["content"]) == (
        valid.message_id or "generated-message-id",
        valid.role,
        valid.content,
    )
    assert gen.same_json(record.get("metadata"), valid.metadata)
    if valid.timestamp is not None and not message.clamped:
        assert message.timestamp == valid.timestamp
        assert to_micros(message.timestamp) == to_micros(valid.timestamp)
    assert [m.seq for m in run.messages] == [1, 2, 3, 4]
    assert all(a.timestamp <= b.timestamp for a, b in zip(run.messages, run.messages[1:]))

    # Every message ends up in exactly one episode, in order.
    covered = [m["seq"] for e in run.episodes for m in e.messages]
    assert covered == [1, 2, 3, 4]
    stored = next(m for e in run.episodes for m in e.messages if m["seq"] == 3)
    assert stored["content"] == valid.content and gen.same_json(stored.get("metadata"), valid.metadata)

    for row, segment in zip(run.episodes, run.segments):
        words = len(row.title.split())
        assert S.extractive_title_min_words <= words <= S.extractive_title_max_words, row.title
        assert row.summary.strip()
        # Bounded whatever the input: an embedding model must take the summary whole.
        assert len(row.title) <= TITLE_LIMIT and len(row.summary) <= SUMMARY_LIMIT
        assert isinstance(row.tools_used, list) and all(isinstance(t, str) and t.strip() for t in row.tools_used)
        assert row.embedding.shape == (S.embedding_dim,) and row.embedding.dtype == np.float32
        assert row.start_at <= row.end_at and row.first_seq <= row.last_seq
        assert 0.0 <= row.surprise <= 1.0 and math.isfinite(row.stability) and math.isfinite(row.difficulty)
        for value in (row.messages, row.fsrs_card, row.tools_used, row.overlap):  # jsonb refuses NaN
            json.dumps(value, allow_nan=False)
        # What build_episode does not call on the extractive path, called here.
        render_segment(segment.messages, segment.overlap)
        assert extractive_title(segment.messages, S.extractive_title_min_words, S.extractive_title_max_words)
        assert extractive_summary(segment.messages, S.summary_max_sentences, tools_used(segment.messages))
        if valid.role == "tool" and any(m["seq"] == 3 for m in row.messages):
            assert (
                tool_name((valid.metadata or {}).get("tool_name"))
                or tool_name((valid.metadata or {}).get("name"))
                or "unnamed_tool"
            ) in row.tools_used


@PROPERTY
@given(
    raw=gen.raw_messages(S.message_max_chars),
    detector=st.sampled_from(gen.DETECTORS),
    gap=st.sampled_from([30.0, -30.0, 3600.0]),
)
def test_every_input_is_refused_with_a_validation_error_or_processed(raw, detector, gap):
    valid = validate(raw)
    if valid is not None:
        check_worker_run(valid, detector, gap)


@PROPERTY
@given(
    raw=gen.accepted_raw_messages(S.message_max_chars),
    detector=st.sampled_from(gen.DETECTORS),
    gap=st.one_of(st.sampled_from([30.0, -30.0, 3600.0]), st.floats(-1e6, 1e6)),
)
# The minimal failing inputs hypothesis found in today's code, kept as regressions:
@example(
    raw={
        "conversation_id": "0",
        "role": "user",
        "content": "ok ",
        "metadata": {"tool_calls": [{"function": "web_search"}]},
    },
    detector="rules",
    gap=30.0,
)  # tools_used: AttributeError, every episode creation failed (now refused)
@example(
    raw={"conversation_id": "0", "role": "user", "content": "right", "metadata": {"": 10**4300}},
    detector="rules",
    gap=30.0,
)  # ValueError (not ValidationError) out of the validator (now refused)
@example(
    raw={"conversation_id": "0", "role": "tool", "content": "a" * 100_000, "metadata": {"tool_name": "\r"}},
    detector="default",
    gap=30.0,
)  # tools_used returned ["\r"] (now "unnamed_tool")
@example(
    raw={"conversation_id": "0", "role": "user", "content": "x", "timestamp": "9999-12-31T23:59:59-14:00"},
    detector="rules",
    gap=30.0,
)  # refused as "before 1900" (now: in the future)
def test_accepted_messages_are_processable(raw, detector, gap):
    valid = validate(raw)
    if valid is not None:
        check_worker_run(valid, detector, gap)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    texts=st.lists(st.one_of(gen.unicode_text(0, 300), gen.prose(80)), min_size=1, max_size=4),
    roles=st.lists(st.sampled_from(["user", "assistant", "system", "tool"]), min_size=4, max_size=4),
    bounds=st.tuples(st.integers(1, 20), st.integers(0, 20)).map(lambda b: (b[0], b[0] + b[1])),
)
def test_tokens_titles_and_summaries_of_any_text(texts, roles, bounds):
    """The pure text stages over text that did not pass the validator's content rules
    (blank, any characters), and any title bounds the settings allow: they must not
    raise, and the title has between ``extractive_title_min_words`` and ``..._max_words`` words."""
    lo, hi = bounds
    messages = [
        {"role": r, "content": t, "timestamp": "2026-05-01T12:00:00+00:00", "seq": i, "id": f"m{i}"}
        for i, (r, t) in enumerate(zip(roles, texts), start=1)
    ]
    for m in messages:
        assert message_tokens(m["role"], m["content"], tool_result_max_chars=S.tool_result_max_chars) >= 0
    title = extractive_title(messages, lo, hi)
    assert lo <= len(title.split()) <= hi, title
    assert len(title) <= TITLE_LIMIT
    summary = extractive_summary(messages, S.summary_max_sentences, ["t"])
    assert summary.strip() and len(summary) <= SUMMARY_LIMIT
    render_segment(messages, messages)


@settings(max_examples=EXAMPLES, deadline=None)
@given(meta=st.one_of(gen.metadatas(), gen.json_values()), role=st.sampled_from(["user", "assistant", "tool"]))
def test_tools_used_never_raises_on_any_metadata(meta, role):
    """Also for metadata the validator refuses: messages queued before it existed, or
    written by other producers, reach the worker too."""
    tools = tools_used([{"role": role, "content": "x", "metadata": meta}, {"role": "tool", "content": "y"}])
    assert isinstance(tools, list) and all(isinstance(t, str) and t.strip() for t in tools)
    assert "unnamed_tool" in tools


def test_every_field_is_exercised_by_the_strategies():
    """Guard against a strategy silently losing a field."""
    seen: set = set()

    @settings(max_examples=50, database=None)
    @given(raw=gen.raw_messages(1000))
    def collect(raw):
        seen.update(raw)

    collect()
    assert seen >= FIELDS
