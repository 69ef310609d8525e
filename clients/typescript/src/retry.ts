/**
 * When the client sends a request again, and after how long: a pure policy (the jitter is
 * passed in), so it is tested as a function.
 *
 * Only a call that is safe to repeat is retried (`retrySafe` in `operations.ts`): reads,
 * deletes (forgetting is idempotent), adding messages (the client fixes every message's id
 * before the first attempt, so a repeat is answered `duplicate`, never stored twice), flush,
 * moving a conversation and import (idempotent). Registering a webhook and asking a delivery
 * to be sent again are never retried.
 *
 * A retry-safe call is retried when no answer came (connection failed or broke, timed out)
 * or the answer was 429, 502, 503 or 504; at most `attempts` attempts in all, waiting
 * `backoffMs` doubling per attempt up to `backoffMaxMs`, a random half to all of it, and
 * never less than the server's `Retry-After`. A `Retry-After` over `retryAfterMaxMs` is not
 * waited for: the error is thrown with its `retryAfter` for the caller to decide.
 *
 * A 429 is retried only when it is the request rate (`rate_limited`, with its
 * `Retry-After`): a tenant quota (`quota_exceeded`, `QuotaExceeded`) refuses the same batch
 * until the day turns or the limit is raised, so it is never retried, whatever `statuses`
 * holds. A 503 (`unavailable`, `busy`, `incomplete`, `storage_full`) is retried after its
 * `Retry-After`.
 */
import { MemqError, NetworkError, QuotaExceeded } from "./errors.js";

export interface RetryPolicy {
    /** Attempts of a retry-safe call in all (1: never retry). Default 4. */
    attempts: number;
    /** Milliseconds before the first retry (before jitter), doubled for each one after. Default 500. */
    backoffMs: number;
    /** The longest computed wait between attempts, in milliseconds. Default 8000. */
    backoffMaxMs: number;
    /** A server's Retry-After longer than this (milliseconds) is not waited for. Default 30000. */
    retryAfterMaxMs: number;
    /** The statuses retried (besides no answer at all; a 429 `quota_exceeded` never is). Default 429, 502, 503, 504. */
    statuses: readonly number[];
}

export const DEFAULT_RETRIES: Readonly<RetryPolicy> = Object.freeze({
    attempts: 4,
    backoffMs: 500,
    backoffMaxMs: 8000,
    retryAfterMaxMs: 30_000,
    statuses: Object.freeze([429, 502, 503, 504]),
});

/** The policy from a number of retries (0: never), a partial policy, or nothing (the default). */
export function retryPolicy(retries?: number | Partial<RetryPolicy>): RetryPolicy {
    const policy =
        typeof retries === "number" ? { ...DEFAULT_RETRIES, attempts: retries + 1 } : { ...DEFAULT_RETRIES, ...retries };
    if (!Number.isInteger(policy.attempts) || policy.attempts < 1) throw new RangeError("attempts must be a whole number of at least 1");
    if (policy.backoffMs < 0 || policy.backoffMaxMs < 0 || policy.retryAfterMaxMs < 0) {
        throw new RangeError("backoffMs, backoffMaxMs and retryAfterMaxMs must not be negative");
    }
    return policy;
}

/**
 * Milliseconds to wait before attempt `attempt + 1` after attempt `attempt` (1-based) of a
 * retry-safe call failed with `error`; null: do not retry. `jitter` is in [0, 1].
 */
export function retryDelay(policy: RetryPolicy, attempt: number, error: MemqError, jitter: number): number | null {
    if (attempt >= policy.attempts || error instanceof QuotaExceeded) return null;
    const retryable = error instanceof NetworkError || (error.status !== null && policy.statuses.includes(error.status));
    if (!retryable) return null;
    const retryAfterMs = error.retryAfter === null ? null : error.retryAfter * 1000;
    if (retryAfterMs !== null && retryAfterMs > policy.retryAfterMaxMs) return null;
    const ceiling = Math.min(policy.backoffMaxMs, policy.backoffMs * 2 ** (attempt - 1));
    const wait = ceiling / 2 + (ceiling / 2) * Math.min(1, Math.max(0, jitter));
    return retryAfterMs === null ? wait : Math.max(wait, retryAfterMs);
}
