"""What the API tests share: a short conversation with two topics and a time gap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

GARDEN = [
    ("user", "Ana", "I want to plant tomatoes in the raised beds this spring."),
    ("assistant", "Bo", "Tomatoes need six hours of sun; the south bed gets the most."),
    ("user", "Ana", "Then the south bed it is. Should I add compost first?"),
    ("assistant", "Bo", "Yes, two buckets of compost per bed, dug in a week before planting."),
]
TRAIN = [
    ("user", "Ana", "Can you book the 9:40 train to Hamburg for Friday?"),
    ("assistant", "Bo", "Booked: ICE 1004, coach 7, seat 54, departing 9:40."),
    ("user", "Ana", "Perfect, and a window seat for the way back on Sunday?"),
    ("assistant", "Bo", "Done: ICE 1011 on Sunday, coach 5, window seat 21."),
]


def messages(prefix: str = "m") -> list[dict]:
    """Garden talk, then two hours later train bookings (a time boundary between them)."""
    out = []
    for i, (role, name, text) in enumerate(GARDEN):
        out.append(
            {
                "role": role,
                "content": text,
                "timestamp": (START + timedelta(minutes=i)).isoformat(),
                "message_id": f"{prefix}-g{i}",
                "metadata": {"name": name},
            }
        )
    for i, (role, name, text) in enumerate(TRAIN):
        out.append(
            {
                "role": role,
                "content": text,
                "timestamp": (START + timedelta(hours=2, minutes=i)).isoformat(),
                "message_id": f"{prefix}-t{i}",
                "metadata": {"name": name},
            }
        )
    return out
