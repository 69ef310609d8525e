"""The soak's power-loss cut (``LossMarker.cut_after``) on an AOF file written here: what
it truncates, and the moment from which writes count as lost, also when Redis had
postponed its AOF write so that the marker asked for never reached the file."""

from __future__ import annotations

from memq_lab.soak.services import LossMarker


def _marker(tmp_path, sent: list[tuple[float, str]], in_file: list[str]) -> LossMarker:
    aof = tmp_path / "appendonly.aof"
    aof.write_bytes(b"".join(b"*1\r\n$4\r\nPING\r\n" + LossMarker._needle(v) for v in in_file) + b"tail-of-writes")
    marker = LossMarker("redis://unused", aof, run="r")
    marker.sent = sent
    return marker


def test_the_file_is_cut_just_after_the_first_marker_sent_at_the_moment(tmp_path):
    sent = [(10.0, "r-1"), (10.5, "r-2"), (11.0, "r-3")]
    marker = _marker(tmp_path, sent, ["r-1", "r-2", "r-3"])
    cut, lost_from = marker.cut_after(10.4)
    data = marker.aof.read_bytes()
    assert data.endswith(LossMarker._needle("r-2")) and lost_from == 10.4
    assert cut == len(b"*1\r\n$4\r\nPING\r\n" + LossMarker._needle("r-3") + b"tail-of-writes")


def test_a_marker_missing_from_the_file_moves_the_loss_back_to_the_last_one_it_holds(tmp_path):
    # Redis postponed its AOF write: the file ends after r-2, sent before the moment asked for
    sent = [(10.0, "r-1"), (10.5, "r-2"), (11.0, "r-3"), (11.5, "r-4")]
    marker = _marker(tmp_path, sent, ["r-1", "r-2"])
    before = marker.aof.read_bytes()
    assert marker.cut_after(10.9) == (0, 10.5)
    assert marker.aof.read_bytes() == before  # nothing more is cut than Redis lost


def test_an_earlier_namesake_in_the_file_is_never_taken_for_the_marker(tmp_path):
    # numbers are never reused in a run; a file from another run holds other names
    sent = [(20.0, "r-7"), (20.5, "r-8")]
    marker = _marker(tmp_path, sent, ["old-8", "r-7"])
    assert marker.cut_after(20.2) == (0, 20.0)
