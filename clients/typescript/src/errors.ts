/**
 * What the client throws. Every error the API answers is `{"error": {"type", "message",
 * "field", ...}}` with a 4xx or 5xx status; it is thrown as a `MemqError` subclass chosen by
 * the status (a 429 also by the type), carrying the API's `type`, `message` and `field`. No
 * answer at all is a `NetworkError` (`RequestTimeout` when the time ran out).
 *
 *     MemqError
 *     ├── ClientError            4xx: the request is wrong; sending it again will not help
 *     │   ├── BadRequest         400, 415, 422 (validation, destination_refused, ...)
 *     │   ├── AuthError          401, 403: a missing, wrong or revoked key
 *     │   ├── NotFound           404: no such conversation, user, fact, webhook, delivery
 *     │   ├── Conflict           409: a batch refused (out of order, another user's conversation)
 *     │   ├── RequestTooLarge    413: over MEMQ_API_MAX_BODY_BYTES
 *     │   ├── RateLimited        429 rate_limited: the key's request rate; retryAfter (retried)
 *     │   └── QuotaExceeded      429 quota_exceeded: a tenant quota; limit, setting (never retried)
 *     ├── ServerError            5xx
 *     │   └── ServiceUnavailable 503: Redis or PostgreSQL down, full (storage_full: detail.cause),
 *     │                          busy, a batch incomplete
 *     ├── NetworkError           no answer: refused, reset, DNS, TLS
 *     │   └── RequestTimeout     no answer in time
 *     └── UnexpectedResponse     an answer that is not the API's (a proxy's page, ...)
 */
import type { AddResultOut } from "./types.js";

export interface MemqErrorInit {
    status?: number | null;
    type?: string;
    field?: string | null;
    detail?: Record<string, unknown>;
    results?: AddResultOut[] | null;
    retryAfter?: number | null;
    method?: string | null;
    url?: string | null;
    cause?: unknown;
}

export class MemqError extends Error {
    /** The HTTP status; null when no answer came. */
    readonly status: number | null;
    /** The API's error type (`validation`, `not_found`, `unauthorized`, ...), or the client's (`connection`, `timeout`, ...). */
    readonly type: string;
    /** The offending input (`messages[2].timestamp`, `conversation_id`), when there is one. */
    readonly field: string | null;
    /** The API's whole `error` object (with any extra keys, e.g. `rule` of a refused webhook destination). */
    readonly detail: Record<string, unknown>;
    /** Per-message results of a refused or incomplete batch. */
    readonly results: AddResultOut[] | null;
    /** Seconds, from the answer's `Retry-After`. */
    readonly retryAfter: number | null;
    readonly method: string | null;
    readonly url: string | null;

    constructor(message: string, init: MemqErrorInit = {}) {
        super(message, init.cause === undefined ? undefined : { cause: init.cause });
        this.name = new.target.name;
        this.status = init.status ?? null;
        this.type = init.type ?? "error";
        this.field = init.field ?? null;
        this.detail = init.detail ?? {};
        this.results = init.results ?? null;
        this.retryAfter = init.retryAfter ?? null;
        this.method = init.method ?? null;
        this.url = init.url ?? null;
    }

    override toString(): string {
        const status = this.status === null ? "" : `${this.status} `;
        const where = this.field ? ` (field ${this.field})` : "";
        return `${this.name}: ${status}${this.type}: ${this.message}${where}`;
    }
}

export class ClientError extends MemqError {}
export class BadRequest extends ClientError {}
export class AuthError extends ClientError {}
export class NotFound extends ClientError {}
export class Conflict extends ClientError {}
export class RequestTooLarge extends ClientError {}
/** 429 `rate_limited`: the key made too many requests a second; retried after `retryAfter`. */
export class RateLimited extends ClientError {}

/**
 * 429 `quota_exceeded`: a tenant quota refused the batch, nothing of it written (`results`
 * says which message and why). No `Retry-After` and never retried: sending again fails the
 * same way until the day turns (UTC), the tenant forgets something, or the operator raises
 * the limit (`setting` names it).
 */
export class QuotaExceeded extends ClientError {
    /** The quota reached: `messages_per_day` or `stored_messages`. */
    get limit(): string | null {
        return textOf(this.detail["limit"]);
    }

    /** The setting that sets it (`MEMQ_QUOTA_...`). */
    get setting(): string | null {
        return textOf(this.detail["setting"]);
    }
}

function textOf(value: unknown): string | null {
    return typeof value === "string" ? value : null;
}

export class ServerError extends MemqError {}
/**
 * 503: Redis or PostgreSQL cannot be reached (`unavailable`) or has no room to write
 * (`storage_full`; `detail.cause`: `redis_out_of_memory`, `redis_cannot_persist` or
 * `postgres_disk_full`, for the operator to fix), a worker holds the conversation (`busy`),
 * or a batch was incomplete (`incomplete`); retried after `retryAfter`.
 */
export class ServiceUnavailable extends ServerError {}
export class NetworkError extends MemqError {}
export class RequestTimeout extends NetworkError {}
export class UnexpectedResponse extends MemqError {}

const BY_STATUS: Record<number, typeof MemqError> = {
    400: BadRequest,
    401: AuthError,
    403: AuthError,
    404: NotFound,
    409: Conflict,
    413: RequestTooLarge,
    415: BadRequest,
    422: BadRequest,
    429: RateLimited,
    503: ServiceUnavailable,
};

/** Answers of one status that need different handling, told apart by the API's type. */
const BY_TYPE: Record<string, typeof MemqError> = {
    "429 quota_exceeded": QuotaExceeded,
};

export function errorClassFor(status: number, type?: string): typeof MemqError {
    const byType = type === undefined ? undefined : BY_TYPE[`${status} ${type}`];
    if (byType !== undefined) return byType;
    return BY_STATUS[status] ?? (status >= 500 ? ServerError : status >= 400 ? ClientError : UnexpectedResponse);
}

/** Seconds from a `Retry-After` header (a number of seconds or an HTTP date); null: absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | null {
    if (value === null || value === undefined || value.trim() === "") return null;
    const text = value.trim();
    if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
    const when = Date.parse(text);
    return Number.isNaN(when) ? null : Math.max(0, (when - now) / 1000);
}

/** The error of an error answer: the API's `{"error": {...}}` when it is one, else the status and the start of the body. */
export function errorFromAnswer(status: number, statusText: string, body: string, retryAfter: string | null, method: string, url: string): MemqError {
    const where = { status, method, url, retryAfter: parseRetryAfter(retryAfter) };
    let error: unknown;
    try {
        error = (JSON.parse(body) as { error?: unknown }).error;
    } catch {
        error = undefined;
    }
    if (isErrorDetail(error)) {
        const Kind = errorClassFor(status, error.type);
        return new Kind(error.message, {
            ...where,
            type: error.type,
            field: typeof error.field === "string" ? error.field : null,
            detail: error,
            results: Array.isArray(error.results) ? (error.results as AddResultOut[]) : null,
        });
    }
    const text = body.trim().slice(0, 300);
    const Kind = errorClassFor(status);
    return new Kind(text ? `${statusText || "error"}: ${text}` : statusText || "error", { ...where, type: "http_error" });
}

function isErrorDetail(value: unknown): value is Record<string, unknown> & { type: string; message: string } {
    return (
        typeof value === "object" &&
        value !== null &&
        typeof (value as { type?: unknown }).type === "string" &&
        typeof (value as { message?: unknown }).message === "string"
    );
}
