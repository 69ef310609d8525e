"""The LLM adapter: every call goes through litellm, asks for JSON matching a
schema, and is bounded in time.

litellm is imported only when an LLM is configured (it costs seconds and, without
``LITELLM_LOCAL_MODEL_COST_MAP``, tries the network). Retries are ours, not
litellm's: litellm's own retry layers can multiply a timeout several times over,
so each attempt runs with retries off and this module retries retryable failures
(timeouts, 429, 5xx, malformed output) with a short backoff within one deadline.
Any failure ends in ``LLMError``; callers fall back to their no-LLM path.

Each attempt's timeout is shortened to fit the caller's deadline (``memq.shared.deadline``),
and no attempt starts with less than ``MIN_ATTEMPT_SECONDS`` left. Celery's soft time
limit (``SoftTimeLimitExceeded``) is never taken for an LLM failure: it propagates, so
the task ends cleanly instead of retrying past its budget.
"""

from __future__ import annotations

import functools
import json
import os
import random
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from memq.shared import deadline
from memq.shared.errors import MemqError
from memq.shared.llm_answers import parse_answer
from memq.shared.metrics import metrics
from memq.shared.settings import Settings

log = structlog.get_logger("memq.llm")

MIN_ATTEMPT_SECONDS = 1.0


def _never_swallowed() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "stop now", not "the LLM failed"."""
    try:
        from billiard.exceptions import SoftTimeLimitExceeded
    except ImportError:  # pragma: no cover - celery is a dependency
        return ()
    return (SoftTimeLimitExceeded,)


class LLMError(MemqError):
    """The LLM gave no usable answer (after retries)."""


@functools.lru_cache(maxsize=1)
def import_litellm() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LLMResult(Generic[M]):
    value: M
    model: str
    attempts: int
    seconds: float


def _schema_for(model_cls: type[BaseModel]) -> dict[str, Any]:
    schema = model_cls.model_json_schema()
    schema["additionalProperties"] = False
    return schema


def complete_json(
    settings: Settings,
    messages: list[dict[str, str]],
    output: type[M],
    *,
    purpose: str,
) -> LLMResult[M]:
    """Ask the configured model for a JSON object shaped like ``output``."""
    if not settings.llm_enabled:
        raise LLMError("no LLM configured (MEMQ_LLM_MODEL is unset)")
    litellm = import_litellm()
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": output.__name__, "schema": _schema_for(output), "strict": True},
    }
    kwargs: dict[str, Any] = {
        "model": settings.llm_model,
        "messages": messages,
        "response_format": response_format,
        "temperature": settings.llm_temperature,
        "timeout": settings.llm_timeout_seconds,
        "num_retries": 0,
        "max_retries": 0,
    }
    if settings.llm_api_base:
        kwargs["api_base"] = settings.llm_api_base
    if settings.llm_api_key:
        kwargs["api_key"] = settings.llm_api_key

    attempts = settings.llm_max_retries + 1
    started = time.monotonic()
    last_error = "no attempt made"
    stop = _never_swallowed()
    for attempt in range(1, attempts + 1):
        left = deadline.remaining()
        if left is not None:
            if left < MIN_ATTEMPT_SECONDS:
                last_error = f"deadline: {left:.1f} s left of the caller's time budget" + (
                    "" if attempt == 1 else f" (after: {last_error})"
                )
                break
            kwargs["timeout"] = min(settings.llm_timeout_seconds, left)
        try:
            response = litellm.completion(**kwargs)
            content = response.choices[0].message.content or ""
            value, repairs = parse_answer(content, output)
            seconds = time.monotonic() - started
            log.info(
                "llm_ok",
                purpose=purpose,
                model=settings.llm_model,
                attempt=attempt,
                seconds=round(seconds, 3),
                repairs=repairs or None,  # what the answer needed to be read (llm_answers.py)
            )
            _measured(purpose, "repaired" if repairs else "ok", seconds)
            return LLMResult(value, settings.llm_model or "", attempt, seconds)
        except stop:
            raise
        except (json.JSONDecodeError, ValidationError) as exc:
            last_error = f"malformed output: {exc.__class__.__name__}: {str(exc)[:200]}"
            retryable = True
        except Exception as exc:  # litellm maps provider errors onto its own classes
            interrupted = _stop_inside(exc, stop)
            if interrupted is not None:  # litellm wraps whatever its HTTP call raised
                raise interrupted from exc
            status = getattr(exc, "status_code", None)
            last_error = f"{exc.__class__.__name__}: {str(exc)[:200]}"
            retryable = status is None or status in (408, 409, 429) or (isinstance(status, int) and status >= 500)
        # the kind of failure only: the rest of the message can quote the answer (a title, a fact)
        log.warning(
            "llm_attempt_failed", purpose=purpose, attempt=attempt, error=last_error.split(":")[0], retryable=retryable
        )
        if not retryable or attempt == attempts:
            break
        pause = min(4.0, 0.25 * 2 ** (attempt - 1)) * (0.75 + random.random() / 2)
        left = deadline.remaining()
        if left is not None and left - pause < MIN_ATTEMPT_SECONDS:
            break
        time.sleep(pause)
    _measured(purpose, "failed", time.monotonic() - started)
    raise LLMError(f"{purpose}: {last_error}")


def _measured(purpose: str, outcome: str, seconds: float) -> None:
    measures = metrics()
    measures.llm_calls.labels(stage=purpose, outcome=outcome).inc()
    measures.llm_seconds.labels(stage=purpose).observe(seconds)


def _stop_inside(exc: BaseException, stop: tuple[type[BaseException], ...]) -> BaseException | None:
    """A stop signal hidden in an exception's chain (litellm re-raises what its HTTP
    client raised as its own APIConnectionError)."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 20:
        if stop and isinstance(current, stop):
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    if stop and any(s.__name__ in str(exc) for s in stop):
        return stop[0]()
    return None
