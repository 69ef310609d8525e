"""Chapters: consecutive events a reader would name as one topic ("the Lisbon trip", "the
NAS backup"), derived when read from the stored episodes and their messages; nothing is
stored. Events (episodes) stay the unit of retrieval; chapters are what the manifest, the
session context and the inspector show.

- ``cues.py``: what a message's wording says (a greeting, a topic-change marker, a
  follow-up, a farewell);
- ``features.py``: one row per place a chapter could start, from the cues and how the
  messages' meaning shifts over windows on both sides;
- ``detector.py``: where chapters start (a time gap, a new conversation, an explicit
  marker, or the learned scorer's peaks) and the events each chapter holds;
- ``models/chapters.json``: the learned scorer (``memq eval --train-chapters``).
"""
