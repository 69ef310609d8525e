import numpy as np

from memq.worker.segmentation.event_state import EventState


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
