"""Retrieval (Plast Mem) settings (a group of ``Settings``; variables ``MEMQ_*``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RetrievalSettings(BaseModel):
    """Retrieval (Plast Mem)."""

    retrieval_limit: int = Field(default=10, ge=1, description="Episodes returned when the caller names no limit.")
    retrieval_limit_max: int = Field(default=50, ge=1, description="Largest limit a caller may ask for.")
    retrieval_max_tokens: int = Field(default=1500, ge=50, description="Token budget of the returned text by default.")
    retrieval_max_tokens_max: int = Field(default=16_000, ge=50, description="Largest budget a caller may ask for.")
    retrieval_max_conversations: int = Field(default=100, ge=1, description="Conversations one retrieval may name.")
    query_max_chars: int = Field(default=2000, ge=10, description="Longest query accepted.")
    retrieval_candidates: int = Field(default=100, ge=1, le=1000, description="Plast Mem: candidates per leg")
    rrf_k: float = Field(
        default=60.0, gt=0, description="Reciprocal Rank Fusion constant of the episodes (Plast Mem uses k=60)."
    )
    message_rrf_k: float = Field(
        default=25.0,
        gt=0,
        description="The same constant for a message's relevance (the RRF of its ranks in the message legs), which "
        "orders what fills the budget: smaller keeps the best-ranked messages further ahead of the rest. Measured "
        "on LoCoMo: 20-30 alike, 60 up to 0.04 lower at 250 tokens and 0.01 at 1,000.",
    )
    lexical_pairs_enough: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Beyond one conversation the lexical legs rank rows holding two of the query's words first, "
        "and read rows holding only one of them when fewer than this many (and fewer than "
        "MEMQ_RETRIEVAL_CANDIDATES) hold two: in a large scope every row holding a common word is read and "
        "ranked, the dearest part of a search and the weakest evidence. `memq bench --scale large`, the largest "
        "tenant of 1M messages: retrieve p50 32.0 ms with 100 (every leg filled to k), 25.3 with 25, 23.5 with "
        "10 (p99 161 / 101 / 96 ms).",
    )
    retrieval_legs: str = Field(
        default="episode_vector,episode_lexical,message_vector,message_lexical",
        description="Ranked legs fused by RRF: episode_vector / episode_lexical (title, summary and, weighted below "
        "them, the messages' words) and message_vector / message_lexical (every stored message votes for its "
        "episode).",
    )
    hnsw_ef_search: int = Field(
        default=500,
        ge=1,
        le=1000,
        description="pgvector hnsw.ef_search for the message vector leg (and for both vector legs when all legs run "
        "in one statement): how many candidates the HNSW index keeps while searching. Used where the planner reads "
        "a scope through the index (a tenant, a user, a very long conversation; a conversation of a few hundred "
        "messages is read exactly). `memq bench`: 400 against 100 took the tenant-wide message leg's recall of the "
        "exact top 100 from 0.94 to 0.96 at 100k messages; at 1M (the largest tenant a quarter of the rows, 200 "
        "questions) 500 against 400 took it from 0.951 to 0.957 and the leg's p90 from 15.1 to 12.0 ms (p50 +0.2): "
        "with a quarter of the candidates the tenant's, 400 often left the iterative scan a second round.",
    )
    hnsw_ef_search_episodes: int = Field(
        default=800,
        ge=1,
        le=1000,
        description="hnsw.ef_search for the episode vector leg where it runs as a statement of its own (legs "
        "shared between two connections; in one statement all legs search at MEMQ_HNSW_EF_SEARCH). An episode's "
        "vector is a mean of its messages', so episodes lie closer together than messages and the graph needs a "
        "wider search to find the same share of the exact top k; the index is ~20 times smaller, so the wider search "
        "costs little. `memq bench --scale large`, the largest tenant of 1M messages (12,600 episodes): recall of "
        "the exact top 100 0.924 at 400, 0.952 at 600, 0.976 at 800, 0.983 at 1,000; the leg's p50 3.2 -> 5.2 ms at "
        "800.",
    )
    retrieval_split_legs: bool = Field(
        default=True,
        description="Beyond one conversation, share the four legs between the connection and a second pooled one, "
        "when the pool has one free at once (the HTTP API and MCP server; else one statement): each leg a statement "
        "of its own, each connection taking the next leg, dearest first, when free. The same rows; about half the "
        "time when a core is free, no gain when every core is busy. `memq bench --scale large`, the largest tenant "
        "of 1M messages, the legs' p50: one statement 28.6 ms, vector legs beside lexical ones 19.2, shared leg by "
        "leg 17.2; retrieval at 100k (largest tenant 25,176 messages) 26.9 -> 20.6 ms.",
    )
    retrieval_plan_cache_mode: Literal["auto", "force_custom_plan", "force_generic_plan"] = Field(
        default="auto",
        description="PostgreSQL plan_cache_mode for retrieval's prepared statement. auto: PostgreSQL plans the first "
        "five executions for their values, then keeps one generic plan when it looks no dearer (no planning, ~0.5 ms "
        "saved); force_custom_plan: plan every query for its tenant and conversation, for data where conversations "
        "differ widely in size (a generic plan assumes the average one and never picks the HNSW index for a "
        "conversation's messages).",
    )
    retrievability_weight: float = Field(
        default=1.0,
        ge=0,
        le=4,
        description="An episode's final = rrf x decay, decay from retrievability^weight (Plast Mem: 1; 0: off): it "
        "orders the episodes a retrieval keeps (the order they are shown in), not which it keeps (relevance decides) "
        "nor what fills the budget.",
    )
    retrievability_influence: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="decay = 1 - influence + influence x retrievability^weight: the most a memory's score loses to "
        "FSRS decay (1: seed 001's rrf x retrievability; 0.1: decay only reorders memories within 10 % of each other).",
    )
    flashbulb_surprise: float = Field(
        default=0.85, ge=0, le=1, description="Plast Mem: surprise at or above is a flashbulb memory"
    )
    flashbulb_floor: float = Field(
        default=0.5, ge=0, le=1, description="A flashbulb memory's retrievability never drops below."
    )
    key_moment_surprise: float = Field(
        default=0.7, ge=0, le=1, description="Plast Mem: surprise at or above is a key moment"
    )
    auto_detail_rank: int = Field(default=2, ge=0, description="Plast Mem: detail=auto shows messages for rank <= this")
    auto_detail_message_rank: int = Field(
        default=0,
        ge=0,
        description="detail=auto also shows the messages of an episode holding a message a message leg ranks <= this "
        "(0: any it ranks; summaries then only for episodes found by their title or summary alone)",
    )
    low_detail_messages: int = Field(default=3, ge=1, description="Messages per episode at detail=low.")
    display_title_words: int = Field(
        default=8, ge=1, description="MIRA: display title of an episode shown with its messages (8 words or fewer)"
    )
    summary_tokens_with_messages: int = Field(
        default=0,
        ge=0,
        description="When messages are shown, the summary above them is cut to this many tokens (0: left out; "
        "measured on LoCoMo, the budget is better spent on messages).",
    )
    lexical_common_share: float = Field(
        default=0.15,
        ge=0,
        le=1,
        description="A query word held by more than this share of the searched messages is left out of the lexical "
        "legs (it says nothing of which message is meant: BM25's inverse document frequency, as a cut); the query "
        "vector still reads it. 0: every word.",
    )
    lexical_common_max_messages: int = Field(
        default=5000,
        ge=0,
        description="Common words (MEMQ_LEXICAL_COMMON_SHARE) are found by reading the searched messages once (~6 ms "
        "for 500 long messages); in a scope holding more than this many the lexical legs search every word.",
    )
    lexical_common_cache_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How long a scope's word counts are remembered (per process) for finding a query's common words: "
        "a query whose words were all seen in its scope then costs no round trip.",
    )
    message_long_tokens: int = Field(
        default=150,
        ge=0,
        description="A message longer than this many tokens (an assistant's essay) is shown first as an excerpt (its "
        "sentences sharing the most words with the query, or its opening) and whole only when the budget has room "
        "after what ranks above MEMQ_MESSAGE_FULL_WEIGHT x its priority, so that it does not crowd out the short "
        "messages around it. 0: every message whole.",
    )
    message_excerpt_tokens: int = Field(
        default=40, ge=10, description="The longest excerpt of a long message (MEMQ_MESSAGE_LONG_TOKENS)."
    )
    message_excerpt_share: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="An excerpt takes at most this share of the token budget (a small budget shows shorter ones).",
    )
    message_full_weight: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="The whole of a message shown as its excerpt competes for the rest of the budget at this x the "
        "excerpt's priority.",
    )
    message_episode_weight: float = Field(
        default=0.1,
        ge=0,
        description="A message competes for the budget at (its own relevance + this x its episode's RRF score): "
        "how much a message gains from being in a relevant episode.",
    )
    time_boost: float = Field(
        default=1.5, ge=1, description="A query naming a time ('last week') multiplies the score of episodes in it."
    )
    neighbour_bonus: float = Field(
        default=0.9,
        ge=0,
        le=1,
        description="Within an episode, a message right after (or before) a relevant one shares this part of "
        "its relevance in the message legs (an answer follows its question); not its speaker's name match. "
        "Measured on LoCoMo: 0.85-0.95 alike, 0.8 up to 0.036 lower at 250 tokens.",
    )
    speaker_match_weight: float = Field(
        default=0.3,
        ge=0,
        description="A message by a participant the query names gains this x 1/(k+1) (a share of a first rank in one "
        "leg); the name itself is taken out of the searched text.",
    )
    episode_density_weight: float = Field(
        default=0.15,
        ge=0,
        description="Each message of an episode gains this x the episode's density (the sum of its "
        "MEMQ_EPISODE_DENSITY_TOP most relevant messages): episodes where several messages match come first.",
    )
    episode_density_top: int = Field(default=3, ge=1, le=50, description="Messages summed into an episode's density.")
    episode_density_scope: Literal["sitting", "episode"] = Field(
        default="sitting",
        description="Count an episode's density over its sitting (the episodes of its conversation around it with no "
        "pause longer than MEMQ_TIME_GAP_MINUTES between them) or over the episode alone. Measured on LoCoMo: "
        "'sitting' kept learned's recall and gave either's smaller episodes +0.007 at 250 and 1,000 tokens.",
    )
    sitting_blocks: bool = Field(
        default=True,
        description="Show the messages of a sitting's episodes (one after another, no pause longer than "
        "MEMQ_TIME_GAP_MINUTES between them) under one header, as one stretch of talk: how finely a detector cut "
        "it then costs no headers. Measured on LoCoMo: +0.005 of recall at 250 and 1,000 tokens with 'learned' "
        "episodes, +0.009 at 250 with the finer 'either' ones.",
    )
    message_reach_tokens: int = Field(
        default=40,
        ge=1,
        description="Messages are read for showing down to rank max_tokens / this in each message leg (and their "
        "neighbours): a budget of 1,000 tokens reads the best 25 of each leg (it shows about 20 messages). "
        "Measured on LoCoMo: reading twice as deep (20) changed recall by 0.006 at most at any budget and cost "
        "0.2 ms per query.",
    )
    message_reach_min: int = Field(
        default=20,
        ge=1,
        description="However small the budget, messages are read for showing down to at least this rank in each "
        "message leg (on LoCoMo at 250 tokens, 10 instead of 20 lost 0.012 of recall, 0.095 on temporal questions).",
    )
    participants_cache_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How long a process remembers the participant names of a retrieval's scope "
        "(0: read them every time).",
    )
