import numpy as np
import pytest

from memq.worker.segmentation.signals import centroid_update, cosine, discourse_marker, normalise, rolling


def test_rolling_average_weighs_the_new_message_alpha():
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    np.testing.assert_allclose(rolling(a, b, 0.2), normalise(np.array([0.8, 0.2])))


def test_centroid_update_is_the_running_mean_direction():
    c = centroid_update(None, 0, np.array([1.0, 0.0]))
    c = centroid_update(c, 1, np.array([0.0, 1.0]))
    assert cosine(c, np.array([1.0, 1.0])) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text, value",
    [
        ("By the way, did you book the train?", 1.0),
        ("anyway, switching gears", 1.0),
        ("Totally unrelated, but", 1.0),
        ("I was thinking, by the way, of pizza", 0.5),
        ("The way to the station is long", 0.0),
    ],
)
def test_discourse_markers(text, value):
    assert discourse_marker(text) == value


def test_cosine_of_zero_vector_is_zero():
    assert cosine(np.zeros(3), np.ones(3)) == 0.0
