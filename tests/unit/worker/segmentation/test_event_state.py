import numpy as np

from memq.worker.segmentation.event_state import PREV_TEXT, EventState


def test_round_trip_keeps_vectors_and_fields():
    v = np.arange(384, dtype=np.float32) / 384
    s = EventState(
        event_model="planning a trip",
        event_model_embedding=v,
        last_embedding=-v,
        armed=False,
        overlap=[{"seq": 1}],
        extras={"n": 3},
    )
    back = EventState.from_json(s.to_json())
    assert (
        back.event_model == "planning a trip"
        and back.armed is False
        and back.overlap == [{"seq": 1}]
        and back.extras == {"n": 3}
    )
    np.testing.assert_array_equal(back.event_model_embedding, v)
    np.testing.assert_array_equal(back.last_embedding, -v)


def test_missing_state_is_a_fresh_event():
    assert EventState.from_json(None).last_embedding is None


def test_at_rest_drops_the_left_window_and_the_last_text_and_keeps_the_rest():
    v = np.ones(384, dtype=np.float32) / np.sqrt(384)
    s = EventState(
        event_model="planning a trip",
        event_model_embedding=v,
        last_embedding=v,
        armed=False,
        recent=[v, -v],
        event_size=3,
        overlap=[{"seq": 7, "content": "see you friday"}],
        extras={PREV_TEXT: "see you friday", "sims": [2.0, 0.4, 0.1]},
    )
    rest = s.at_rest()
    assert rest.recent == [] and rest.last_embedding is None and rest.event_model_embedding is None
    assert rest.event_model is None and rest.extras == {"sims": [2.0, 0.4, 0.1]}
    assert rest.overlap == s.overlap and rest.armed is False and rest.event_size == 3
    assert len(rest.to_json()) < 300
