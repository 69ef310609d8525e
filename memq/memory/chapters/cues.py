"""What a message's wording says about where a topic starts or ends. Pure.

English phrasings (the data the scorer is fitted on is English); in another language
these cues are silent and the chapters rest on time gaps and the shift in meaning."""

from __future__ import annotations

import re

# A topic announced as new: "Totally unrelated, but ...", "Anyway, switching gears ...",
# "On another note", "Different question:" (at the start of a message; "one more thing" or
# "speaking of which" stay with the topic).
_MARKER = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|oh|hey|also|and|um|hmm)[\s,.!]+)*(?:(?:totally|completely|entirely|somewhat)\s+)?"
    r"(?:unrelated\b|switching gears\b"
    r"|(?:anyway|anyhow)s?\b[\s,]*(?:switching|changing|on|moving|new|different|another|unrelated)"
    r"|change of (?:subject|topic)\b|changing (?:the )?(?:subject|topic)\b"
    r"|(?:a |on a )?(?:new|different|another|separate) (?:topic|subject|question|thing|matter)\b"
    r"|on (?:an)?other note\b|moving on\b)",
    re.IGNORECASE,
)
# An aside that may open another topic or a side of the same one: "By the way, ...", "btw"
_ASIDE = re.compile(r"^\W*(?:(?:oh|and|also|ok(?:ay)?)[\s,.!]+)*(?:by the way|btw|incidentally)\b", re.IGNORECASE)
# Someone opening a conversation: "hi", "hello there", "good morning", "how are you?"
_GREETING = re.compile(
    r"^\W*(?:hi|hello|hey|hiya|howdy|greetings|yo|good (?:morning|afternoon|evening|day)|"
    r"how are you|how's it going|how is it going|what's up|nice to meet you)\b",
    re.IGNORECASE,
)
# A request that opens a matter: "I need help with ...", "Can you help me ...", "Quick question"
_OPENER = re.compile(
    r"^\W*(?:i need (?:some )?(?:help|information|info|advice)|i have a (?:quick )?question|"
    r"(?:can|could) you help|quick question|i want to (?:ask|know)|i'd like to (?:ask|know)|"
    r"i would like to (?:ask|know)|help me with)\b",
    re.IGNORECASE,
)
# A message that leans on what came before: "And ...", "What about ...", "ok", "thanks"
_FOLLOW_UP = re.compile(
    r"^\W*(?:and|also|so|ok|okay|then|but|what about|how about|what if|is that|does that|"
    r"do they|yes|no|yeah|yep|nope|right|great|i see|sure|exactly|same|me too|that)\b",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?:it|that|this|they|them|those|these|he|she|there|its)\b", re.IGNORECASE)
# A matter closed: "thanks, bye", "that's all", "have a nice day", "talk later"
_FAREWELL = re.compile(
    r"\b(?:thanks|thank you|bye|goodbye|good night|that's all|that is all|that's it for now|"
    r"have a (?:nice|good|great) (?:day|night|evening|one)|see you|talk (?:to you )?(?:later|soon))\b",
    re.IGNORECASE,
)
_HEAD_WORDS = 6


def announces_new_topic(text: str) -> bool:
    """An explicit marker that what follows is another topic."""
    return bool(_MARKER.search(text[:200]))


def opens_an_aside(text: str) -> bool:
    """ "By the way, ...": another topic as often as another side of this one (the learned
    scorer weighs it with the rest)."""
    return bool(_ASIDE.search(text[:100]))


def greets(text: str) -> bool:
    return bool(_GREETING.search(text[:100]))


def opens_a_matter(text: str) -> bool:
    return bool(_OPENER.search(text[:100]))


def follows_up(text: str) -> bool:
    """Begins by leaning on the previous message ("and", "what about", "ok")."""
    return bool(_FOLLOW_UP.search(text[:60]))


def refers_back(text: str) -> bool:
    """A pronoun among the first words: the subject is in what came before."""
    return bool(_PRONOUN.search(" ".join(text[:200].split()[:_HEAD_WORDS])))


def says_farewell(text: str) -> bool:
    return bool(_FAREWELL.search(text[-200:]))
