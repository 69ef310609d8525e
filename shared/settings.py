"""One typed settings object for producer, workers and tools.

Every value comes from an environment variable (``MEMQ_<NAME>``, except the two
service URLs, which use the conventional ``REDIS_URL`` and ``DATABASE_URL``),
has a documented default and is validated when the process starts. Constants
taken from published designs are settings whose defaults are those designs' values;
the description of each names the design (Plast Mem, MIRA, agent-memory, episodic_agent;
see docs/architecture.md).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from memq.shared.errors import ValidationError
from memq.shared.ids import check_tenant


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEMQ_",
        env_file=None,
        extra="ignore",
        validate_assignment=True,
    )

    # --- services ---------------------------------------------------------
    env: Literal["development", "production"] = Field(
        default="development",
        description="'development' may start the embedded redis-server and PostgreSQL (from the "
        "memq[embedded] extra) when REDIS_URL / DATABASE_URL are unset; 'production' never does: "
        "a process that needs an unset URL stops with an error saying which to set.",
    )
    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "MEMQ_REDIS_URL"),
        description="Redis for the mailbox, conversation state and Celery broker. "
        "Unset: the embedded redis-server under data_dir.",
    )
    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "MEMQ_DATABASE_URL"),
        description="PostgreSQL (>= 15, pgvector >= 0.7). Unset: the embedded server under data_dir.",
    )
    mailbox_redis_url: str | None = Field(
        default=None,
        description="Redis for the mailbox (conversation queues and state) when it is not REDIS_URL, "
        "e.g. a Redis Cluster; the Celery broker stays on REDIS_URL.",
    )
    mailbox_redis_cluster: bool = Field(default=False, description="MEMQ_MAILBOX_REDIS_URL is a Redis Cluster.")
    redis_shards: int = Field(
        default=64,
        ge=1,
        le=16384,
        description="Hash-slot shards of the mailbox: each conversation and its shard's indexes share one "
        "slot. Fixed for the lifetime of the data.",
    )
    data_dir: Path = Field(default=Path(".memq"), description="Embedded services' data folder.")
    embedded_redis_port: int = Field(
        default=6399, ge=1024, le=65535, description="Loopback port of the embedded redis-server (development)."
    )
    embedded_database_name: str = Field(default="memq", description="Database created in the embedded PostgreSQL.")
    tenant: str = Field(default="default", description="Tenant scope used when a caller names none.")
    key_prefix: str = Field(default="memq", description="Prefix of every Redis key memq writes.")
    migration_lock_timeout_seconds: float = Field(
        default=600.0,
        gt=0,
        description="How long a process starting together with others waits for their migration "
        "(one migrates under a PostgreSQL advisory lock, the others wait) before giving up with an error.",
    )

    # --- producer validation ----------------------------------------------
    conversation_id_max_length: int = Field(default=128, ge=8, le=512, description="Longest conversation id accepted.")
    message_max_chars: int = Field(default=100_000, ge=1, description="Longest message content accepted.")
    metadata_max_bytes: int = Field(default=16_384, ge=0, description="Largest metadata object (JSON bytes).")
    out_of_order_policy: str = Field(
        default="clamp",
        description="A timestamp older than the conversation's last accepted one: 'clamp' "
        "(accept, order by arrival, use the previous timestamp for segmentation and keep "
        "the original) or 'reject' (refuse the message with an error).",
    )
    dedup_ttl_days: float = Field(
        default=30,
        gt=0,
        description="How long each message id is remembered for duplicate detection, from its acceptance.",
    )
    producer_confirm_after_ms: float = Field(
        default=25.0,
        ge=0,
        description="When publishing a batch's drain tasks failed, or took longer than this after Redis accepted the "
        "batch, the producer checks that what Redis accepted is still there before it says so (a Redis that crashed "
        "and came back in between can have lost its last second of writes); what is gone is reported 'unknown'.",
    )
    idle_state_ttl_days: float = Field(
        default=30,
        gt=0,
        description="A conversation with nothing waiting keeps its Redis state this long after its last activity; "
        "counters are re-derived from PostgreSQL when it returns.",
    )

    # --- rule layer (Plast Mem) -------------------------------------------
    min_messages: int = Field(default=3, ge=1, description="Plast Mem: fewer messages -> skip")
    max_messages: int = Field(default=50, ge=2, description="Plast Mem: this many -> force-create, drain all")
    time_gap_minutes: float = Field(default=15.0, gt=0, description="Plast Mem: larger gap -> time boundary")
    min_total_chars: int = Field(default=100, ge=0, description="Plast Mem: fewer chars in buffer -> skip")
    min_message_chars: int = Field(default=5, ge=0, description="Plast Mem: shorter latest message -> skip")

    # --- token budget and overlap (agent-memory) --------------------------
    token_budget: int = Field(default=4000, ge=1, description="agent-memory: buffer tokens -> boundary")
    tool_result_max_chars: int = Field(default=1000, ge=1, description="agent-memory: tool text counted")
    overlap_minutes: float = Field(default=5.0, ge=0, description="agent-memory: overlap time window")
    overlap_tokens: int = Field(default=500, ge=0, description="agent-memory: overlap token cap")
    tokenizer_encoding: str = Field(default="cl100k_base", description="tiktoken encoding that counts tokens.")

    # --- inactivity collapse (MIRA) ---------------------------------------
    segment_timeout_minutes: float = Field(default=60.0, gt=0, description="MIRA: idle -> collapse")
    collapse_check_seconds: float = Field(default=300.0, gt=0, description="MIRA: check every 5 min")
    stalled_after_seconds: float = Field(
        default=120.0, gt=0, description="Queued drain or pending episode older than this is re-queued."
    )

    # --- boundary detection (Plast Mem's dual channel, episodic_agent's hysteresis) ---
    detector: str = Field(default="default", description="Detector profile (see `memq eval --list`).")
    lookahead_messages: int | None = Field(
        default=None,
        ge=0,
        le=10,
        description="Decide a boundary before message i once i..i+w arrived; 0 = pure streaming; "
        "unset = the profile's own (2 for 'learned', 0 otherwise).",
    )
    boundary_verbose: bool = Field(default=False, description="Log every message's boundary score and factors.")
    surprise_threshold: float = Field(default=0.35, description="Plast Mem: event-model cosine below -> boundary")
    topic_threshold: float = Field(default=0.5, description="Plast Mem: last-embedding cosine below -> ask LLM")
    topic_rolling_alpha: float = Field(default=0.2, ge=0, le=1, description="Plast Mem: rolling average")
    llm_confidence_threshold: float = Field(default=0.7, ge=0, le=1, description="Plast Mem")
    hysteresis_high: float = Field(default=0.8, description="episodic_agent: trigger at or above")
    hysteresis_low: float = Field(default=0.3, description="episodic_agent: re-arm below")
    hysteresis_time_interval: int = Field(default=100, ge=1, description="episodic_agent: time factor saturates")
    hysteresis_prediction_weight: float = Field(default=0.3, description="episodic_agent prediction_weight")
    hysteresis_drift_weight: float = Field(default=0.5, description="episodic_agent event_weight (topic drift here)")
    hysteresis_drop_weight: float = Field(default=0.0, description="previous-message dissimilarity weight")
    hysteresis_marker_weight: float = Field(default=1.0, description="episodic_agent location_weight (discourse)")
    hysteresis_time_weight: float = Field(default=0.2, description="episodic_agent time factor weight")
    hysteresis_bias: float = Field(default=0.0, description="added to the boundary score before the thresholds")
    hysteresis_window: int = Field(default=3, ge=1, le=16, description="left-window messages for topic drift")

    # --- episodes and FSRS (Plast Mem) ------------------------------------
    surprise_stability_boost: float = Field(default=0.5, ge=0, description="Plast Mem: S x (1 + boost x surprise)")
    desired_retention: float = Field(default=0.9, gt=0, lt=1, description="FSRS: recall probability reviews aim at")
    title_min_words: int = Field(default=5, ge=1, description="Plast Mem: title 5-15 words")
    title_max_words: int = Field(default=15, ge=1, description="Plast Mem: title 5-15 words")
    summary_max_sentences: int = Field(default=4, ge=1, description="Extractive summary length.")

    # --- retrieval (Plast Mem) --------------------------------------------
    retrieval_limit: int = Field(default=10, ge=1, description="Episodes returned when the caller names no limit.")
    retrieval_limit_max: int = Field(default=50, ge=1, description="Largest limit a caller may ask for.")
    retrieval_max_tokens: int = Field(default=1500, ge=50, description="Token budget of the returned text by default.")
    retrieval_max_tokens_max: int = Field(default=16_000, ge=50, description="Largest budget a caller may ask for.")
    retrieval_max_conversations: int = Field(default=100, ge=1, description="Conversations one retrieval may name.")
    query_max_chars: int = Field(default=2000, ge=10, description="Longest query accepted.")
    retrieval_candidates: int = Field(default=100, ge=1, le=1000, description="Plast Mem: candidates per leg")
    rrf_k: float = Field(default=60.0, gt=0, description="Reciprocal Rank Fusion constant (Plast Mem uses k=60).")
    retrieval_legs: str = Field(
        default="episode_vector,episode_lexical,message_vector,message_lexical",
        description="Ranked legs fused by RRF: episode_vector / episode_lexical (title and summary) and "
        "message_vector / message_lexical (every stored message votes for its episode).",
    )
    hnsw_ef_search: int = Field(default=100, ge=1, le=1000, description="pgvector hnsw.ef_search for the vector legs.")
    retrieval_plan_cache_mode: Literal["auto", "force_custom_plan", "force_generic_plan"] = Field(
        default="auto",
        description="PostgreSQL plan_cache_mode for retrieval's prepared statement. auto: PostgreSQL plans the first "
        "five executions for their values, then keeps one generic plan when it looks no dearer (no planning, ~0.5 ms "
        "saved); force_custom_plan: plan every query for its tenant and conversation, for data where conversations "
        "differ widely in size (a generic plan assumes the average one and never picks the HNSW index for a "
        "conversation's messages).",
    )
    retrievability_weight: float = Field(
        default=1.0, ge=0, le=4, description="final = rrf x retrievability^weight (Plast Mem: 1; 0 switches FSRS off)."
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
        default=0.8,
        ge=0,
        le=1,
        description="Within an episode, a message right after (or before) a relevant one shares this part of "
        "its relevance (an answer follows its question).",
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

    # --- memory review (Plast Mem) ----------------------------------------
    review_easy_similarity: float = Field(default=0.75, ge=0, le=1, description="Usage signal: closeness for easy.")
    review_good_similarity: float = Field(default=0.6, ge=0, le=1, description="Usage signal: closeness for good.")
    review_hard_similarity: float = Field(default=0.45, ge=0, le=1, description="Usage signal: closeness for hard.")
    review_easy_uptake: int = Field(default=4, ge=1, description="Usage signal: distinctive words taken up for easy.")
    review_good_uptake: int = Field(default=2, ge=1, description="Usage signal: distinctive words taken up for good.")
    review_hard_uptake: int = Field(default=1, ge=1, description="Usage signal: distinctive words taken up for hard.")

    # --- semantic consolidation (Plast Mem) -------------------------------
    consolidation_threshold: int = Field(
        default=3, ge=1, description="Plast Mem: unconsolidated episodes of a conversation that start a consolidation."
    )
    consolidation_max_episodes: int = Field(
        default=12, ge=1, le=100, description="Episodes one consolidation run reads."
    )
    consolidation_candidates: int = Field(default=20, ge=1, le=100, description="Related known facts shown to the LLM.")
    fact_duplicate_similarity: float = Field(
        default=0.95, gt=0, le=1, description="A new fact this close (cosine) to an active one reinforces it instead."
    )
    review_notes_queue_max: int = Field(
        default=10_000,
        ge=1,
        description="Retrievals' review notes a process holds while PostgreSQL cannot take them; past this, new ones "
        "are dropped and logged (a lost note costs one FSRS review, never a memory).",
    )
    review_notes_linger_ms: float = Field(
        default=50.0,
        ge=0,
        le=5000,
        description="How long a process's review-notes writer waits after a retrieval for more notes to write with it.",
    )
    retrieval_facts: int = Field(default=5, ge=0, le=50, description="Active facts in a retrieval's facts section.")
    fact_min_similarity: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="A fact found by its vector alone is shown only this close (cosine) to the query.",
    )
    session_facts: int = Field(default=5, ge=0, le=50, description="Active facts in a session context.")

    # --- agent context (MIRA) ---------------------------------------------
    manifest_depth: int = Field(default=30, ge=1, le=500, description="MIRA: segments shown in the manifest")
    manifest_title_chars: int = Field(default=60, ge=10, le=500, description="MIRA: manifest title length")
    manifest_cache_seconds: float = Field(
        default=600.0,
        ge=0,
        description="MIRA: how long a conversation's manifest stays cached in Redis (0: never cached); it is "
        "invalidated when an episode is created or the conversation is forgotten.",
    )
    session_summary_count: int = Field(
        default=3, ge=0, le=50, description="MIRA: episode summaries in a session context"
    )
    session_continuity_messages: int = Field(
        default=6, ge=0, le=100, description="MIRA: messages before the open segment shown for continuity"
    )
    session_max_tokens: int = Field(default=2000, ge=100, le=16_000, description="Token budget of a session context.")
    session_open_messages_max: int = Field(
        default=200, ge=1, le=5000, description="Newest messages of the open segment read for a session context."
    )

    # --- HTTP API and keys ------------------------------------------------
    api_host: str = Field(default="127.0.0.1", description="Where `memq api` listens (loopback by default).")
    api_port: int = Field(default=8765, ge=1, le=65535, description="Where `memq api` listens.")
    api_auth: bool = Field(
        default=True, description="Bearer API keys required (`memq keys create`). Off only for trusted networks."
    )
    api_max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body accepted; a larger one is refused with 413."
    )
    api_max_batch: int = Field(default=1000, ge=1, le=100_000, description="Messages one request may add.")
    api_keys_refresh_seconds: float = Field(
        default=5.0, gt=0, description="How often the API reloads the keys (a revoked key stops working within this)."
    )
    forget_wait_seconds: float = Field(
        default=90.0,
        gt=0,
        description="How long forgetting a conversation waits for a worker draining it to let go "
        "before answering busy.",
    )

    # --- embeddings -------------------------------------------------------
    embedding_model: str = Field(
        default="local/all-MiniLM-L6-v2",
        description="'local/all-MiniLM-L6-v2' (bundled, offline) or any litellm embedding model.",
    )
    embedding_dim: int = Field(
        default=384, ge=1, le=2000, description="Vector size of the embedding model (the schema's, set at migration)."
    )
    embedding_api_base: str | None = Field(default=None, description="API base of a remote embedding model.")
    embedding_api_key: str | None = Field(default=None, description="API key of a remote embedding model (a secret).")
    embedding_batch_size: int = Field(default=64, ge=1, description="Texts embedded per model call.")
    embedding_max_chars: int = Field(
        default=8000,
        ge=100,
        description="Text is cut to this many characters before embedding: all-MiniLM-L6-v2 reads 256 word "
        "pieces anyway, and a remote model refuses input beyond its context (a message may be 100,000 characters).",
    )

    # --- LLM (litellm) ----------------------------------------------------
    llm_model: str | None = Field(default=None, description="litellm model name; unset = no LLM.")
    llm_api_base: str | None = Field(default=None, description="API base (an OpenAI-compatible server, a proxy).")
    llm_api_key: str | None = Field(
        default=None, description="API key for the LLM (a secret); or the provider's own variable."
    )
    llm_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Per LLM call, shortened to fit the task's deadline."
    )
    llm_max_retries: int = Field(default=2, ge=0, description="Retries of a failed LLM call before the fallback.")
    llm_temperature: float = Field(default=0.2, ge=0, le=2, description="Sampling temperature of LLM calls.")

    # --- worker / Celery --------------------------------------------------
    drain_max_messages: int = Field(default=200, ge=1, description="Messages per drain task before re-queue.")
    drain_max_seconds: float = Field(
        default=60.0, gt=0, description="Seconds a drain task runs before re-queueing itself."
    )
    embed_prefetch: int = Field(default=32, ge=1, description="Inbox messages embedded per batch.")
    lock_lease_seconds: float = Field(
        default=60.0, gt=0, description="Conversation lock lease, renewed at every committed step."
    )
    release_retry_seconds: float = Field(
        default=30.0,
        ge=0,
        description="How long a drain that cannot reach Redis when it ends keeps trying to hand its "
        "conversation on (at most until its soft time limit), so a Redis restart does not leave the "
        "conversation to the stalled-work sweeper.",
    )
    recovery_sweep_window_seconds: float = Field(
        default=10.0,
        ge=0,
        description="After a worker reconnects to the broker, one sweep re-publishes everything marked "
        "queued; the sweeps of other workers reconnecting within this window are skipped. 0 = off.",
    )
    worker_heartbeat_dir: Path | None = Field(
        default=None,
        description="Where each worker refreshes <node>.alive while its event loop turns (`memq worker-alive` "
        "reads it). Unset: <data_dir>/heartbeats.",
    )
    worker_heartbeat_seconds: float = Field(
        default=2.0, ge=0, description="How often the worker's event loop ticks its watchdog. 0 = no watchdog."
    )
    worker_stall_seconds: float = Field(
        default=30.0,
        gt=0,
        description="An event loop that has not ticked for this long (and is not reconnecting to the broker) "
        "is stalled: logged as worker_stalled, heartbeat file no longer refreshed.",
    )
    worker_stall_exit_seconds: float = Field(
        default=300.0,
        ge=0,
        description="A worker process stalled this long exits (code 70) for its supervisor to replace it. 0 = never.",
    )
    task_time_limit_seconds: int = Field(
        default=300,
        ge=5,
        description="Hard limit of a task (the soft limit comes a little earlier); a warm shutdown lasts at most this.",
    )
    visibility_timeout_seconds: int = Field(
        default=900,
        ge=10,
        description="An unacknowledged task is redelivered after this (at least twice the task limit).",
    )
    worker_concurrency: int = Field(default=2, ge=1, description="Pool processes per worker (each loads the model).")
    quarantine_after_failures: int = Field(
        default=3,
        ge=1,
        description="A message or segment whose processing fails this many times in a row with the same "
        "non-transient error is moved to the quarantine (`memq quarantine list`).",
    )
    retry_backoff_seconds: float = Field(default=2.0, gt=0, description="First delay before a failed task runs again.")
    retry_backoff_max_seconds: float = Field(default=60.0, gt=0, description="Longest delay between retries.")
    memory_retry_limit: int = Field(
        default=20,
        ge=0,
        description="Transient failures in a row after which a review or consolidation task gives up (logged as "
        "failed; consolidation is taken up again by the conversation's next one or `memq consolidate`). Drains and "
        "episode creation retry transient failures for as long as they last.",
    )

    # --- logging ----------------------------------------------------------
    log_format: str = Field(default="console", description="'console' or 'json'")
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")

    @field_validator("out_of_order_policy")
    @classmethod
    def _policy(cls, v: str) -> str:
        if v not in {"clamp", "reject"}:
            raise ValueError("MEMQ_OUT_OF_ORDER_POLICY must be 'clamp' or 'reject'")
        return v

    @field_validator("log_format")
    @classmethod
    def _log_format(cls, v: str) -> str:
        if v not in {"console", "json"}:
            raise ValueError("MEMQ_LOG_FORMAT must be 'console' or 'json'")
        return v

    @field_validator("tenant", "key_prefix")
    @classmethod
    def _simple_name(cls, v: str) -> str:
        try:
            return check_tenant(v)
        except ValidationError:
            raise ValueError("must be 1-64 characters of letters, digits, '_' or '-'") from None

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.title_min_words > self.title_max_words:
            raise ValueError("MEMQ_TITLE_MIN_WORDS must not exceed MEMQ_TITLE_MAX_WORDS")
        if self.min_messages >= self.max_messages:
            raise ValueError("MEMQ_MIN_MESSAGES must be below MEMQ_MAX_MESSAGES")
        if self.task_time_limit_seconds * 2 > self.visibility_timeout_seconds:
            raise ValueError(
                "MEMQ_VISIBILITY_TIMEOUT_SECONDS must be at least twice MEMQ_TASK_TIME_LIMIT_SECONDS, "
                "or Redis redelivers tasks that are still running"
            )
        if self.drain_max_seconds * 2 > self.task_time_limit_seconds:
            raise ValueError(
                "MEMQ_DRAIN_MAX_SECONDS must be at most half of MEMQ_TASK_TIME_LIMIT_SECONDS, so a drain ends "
                "on its own budget well before Celery's time limit kills it"
            )
        if self.retry_backoff_max_seconds * 2 > self.visibility_timeout_seconds:
            raise ValueError("MEMQ_RETRY_BACKOFF_MAX_SECONDS must be below half of MEMQ_VISIBILITY_TIMEOUT_SECONDS")
        if self.retrieval_limit > self.retrieval_limit_max or self.retrieval_max_tokens > self.retrieval_max_tokens_max:
            raise ValueError("MEMQ_RETRIEVAL_LIMIT / MEMQ_RETRIEVAL_MAX_TOKENS must not exceed their _MAX")
        unknown = set(self.legs) - {"episode_vector", "episode_lexical", "message_vector", "message_lexical"}
        if unknown or not self.legs:
            raise ValueError(
                f"MEMQ_RETRIEVAL_LEGS: unknown legs {sorted(unknown)}; choose from episode_vector, "
                "episode_lexical, message_vector, message_lexical"
            )
        if self.worker_stall_exit_seconds and self.worker_stall_exit_seconds <= self.worker_stall_seconds:
            raise ValueError("MEMQ_WORKER_STALL_EXIT_SECONDS must exceed MEMQ_WORKER_STALL_SECONDS (or be 0: never)")
        if self.mailbox_redis_cluster and not self.mailbox_redis_url:
            raise ValueError("MEMQ_MAILBOX_REDIS_CLUSTER needs MEMQ_MAILBOX_REDIS_URL (a node of the cluster)")
        return self

    def __hash__(self) -> int:  # identity: caches keyed by "this settings object"
        return id(self)

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_model)

    @property
    def legs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x.strip() for x in self.retrieval_legs.split(",") if x.strip()))

    @property
    def data_path(self) -> Path:
        return self.data_dir.expanduser().resolve()


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()


def reset_settings() -> None:
    """Forget the cached settings (tests and CLI options that change the environment)."""
    get_settings.cache_clear()
