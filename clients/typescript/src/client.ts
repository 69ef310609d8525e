/**
 * The client: one method per operation of memq's HTTP API, every answer typed as the
 * OpenAPI document says, every failure a `MemqError`, retries where a retry is safe.
 */
import {
    BadRequest,
    MemqError,
    NetworkError,
    RequestTimeout,
    UnexpectedResponse,
    errorFromAnswer,
} from "./errors.js";
import { OPERATIONS, type Operation, type OperationName } from "./operations.js";
import { retryDelay, retryPolicy, type RetryPolicy } from "./retry.js";
import type {
    ActivityEntryOut,
    ActivityOut,
    AddResultOut,
    AnswerOf,
    ContextOut,
    ConversationFactsOut,
    ConversationOut,
    ConversationsOut,
    ConversationStatusOut,
    DeliveryListOut,
    DeliveryRetriedOut,
    EpisodesOut,
    FactHistoryOut,
    FactSearchIn,
    FactSearchOut,
    FlushOut,
    ForgetOut,
    HealthOut,
    ImportOut,
    ManifestOut,
    MessageIn,
    MessagesIn,
    MessagesOut,
    MoveOut,
    QueryOf,
    ReadyOut,
    RecentIn,
    QuotaOut,
    RecentOut,
    RetrieveIn,
    RetrieveOut,
    UserConversationsOut,
    UserForgetOut,
    WebhookCreatedOut,
    WebhookDeletedOut,
    WebhookIn,
    WebhookListOut,
} from "./types.js";

export const DEFAULT_URL = "http://127.0.0.1:8765";
/** Milliseconds an attempt may take, from sending the request to the end of the answer. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** The longest `wait` (seconds) the API takes on one flush; the client waits longer by asking again. */
export const FLUSH_WAIT_MAX = 60;

export interface ClientOptions {
    /** Where `memq api` listens. Default: `MEMQ_URL`, else http://127.0.0.1:8765. */
    baseUrl?: string;
    /** Sent as `Authorization: Bearer <key>`. Default: `MEMQ_KEY`; without one nothing is sent. */
    apiKey?: string;
    /** Milliseconds per attempt (a waiting flush gets its wait on top). Default 30000. */
    timeoutMs?: number;
    /** How many times to retry a retry-safe call (0: never), or a policy. Default: 4 attempts in all. */
    retries?: number | Partial<RetryPolicy>;
    /** Sent with every request. */
    headers?: Record<string, string>;
    /** The fetch to use (default: the global one). */
    fetch?: typeof fetch;
}

/** A message to add: `role` and `content`, optionally `timestamp`, `message_id`, `metadata`, `user_id`. */
export type MessageInput = MessageIn;
export type Format = "json" | "markdown";
type Markdown = { format: "markdown" };
type Json = { format?: "json" };

export type RetrieveOptions = Partial<Omit<RetrieveIn, "query">>;
export type RecentOptions = Partial<RecentIn>;
export type SearchFactsOptions = Partial<Omit<FactSearchIn, "query">>;
export type ManifestOptions = Omit<QueryOf<"/v1/conversations/{conversation_id}/manifest", "GET">, "format">;
export type ContextOptions = Omit<QueryOf<"/v1/conversations/{conversation_id}/context", "GET">, "format">;
export type ListConversationsOptions = QueryOf<"/v1/conversations", "GET">;
export type FactsOptions = QueryOf<"/v1/conversations/{conversation_id}/facts", "GET">;
export type UserConversationsOptions = QueryOf<"/v1/users/{user_id}/conversations", "GET">;
export type ExportOptions = QueryOf<"/v1/export", "GET">;
export type WebhookDeliveriesOptions = QueryOf<"/v1/webhooks/deliveries", "GET">;
export type ListActivityOptions = QueryOf<"/v1/activity", "GET">;
export type IterActivityOptions = Omit<ListActivityOptions, "after">;
export type CreateWebhookOptions = Partial<Omit<WebhookIn, "url">>;
/** A message's optional keys: `timestamp`, `message_id`, `metadata`, `user_id`. */
export type AddMessageOptions = Omit<MessageIn, "role" | "content">;
/** The batch's optional keys: `user_id`, the user of every message. */
export type AddMessagesOptions = Omit<MessagesIn, "messages">;

type Answer<N extends OperationName> = AnswerOf<(typeof OPERATIONS)[N]["path"], (typeof OPERATIONS)[N]["method"]>;
type Query = Record<string, string | number | boolean | null | undefined>;
// Every operation's answer is a type of the document (never `never`, which would check nothing).
type Untyped = { [N in OperationName]: [Answer<N>] extends [never] ? N : never }[OperationName];
const everyAnswerTyped: [Untyped] extends [never] ? true : Untyped = true;
void everyAnswerTyped;

interface Request {
    op: Operation;
    path: string;
    query?: Query;
    json?: unknown;
    body?: string | Uint8Array;
    contentType?: string;
    accept?: string;
    extraTimeoutMs?: number;
    /** Statuses besides 2xx that are answers, not errors (`/readyz`'s 503). */
    answers?: readonly number[];
}

/** A new message id: random (UUID v4), fixed before the first attempt. */
export function newMessageId(): string {
    return globalThis.crypto.randomUUID();
}

function environment(name: string): string | undefined {
    const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
    return process?.env?.[name] || undefined;
}

function segment(field: string, value: string): string {
    if (typeof value !== "string" || value === "") {
        throw new BadRequest("must be a non-empty string", { type: "validation", field });
    }
    return encodeURIComponent(value);
}

function fill(op: Operation, values: Record<string, string> = {}): string {
    return op.path.replace(/\{(\w+)\}/g, (_, name: string) => segment(name, values[name] as string));
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class MemqClient {
    readonly baseUrl: string;
    readonly timeoutMs: number;
    readonly retries: RetryPolicy;
    private readonly headers: Record<string, string>;
    private readonly fetchImpl: typeof fetch;
    /** The jitter source (replaced in tests). */
    random: () => number = Math.random;

    constructor(options: ClientOptions = {}) {
        const base = options.baseUrl ?? environment("MEMQ_URL") ?? DEFAULT_URL;
        new URL(base); // throws a TypeError now, not on the first call
        this.baseUrl = base.replace(/\/+$/, "");
        this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
        this.retries = retryPolicy(options.retries);
        const key = options.apiKey ?? environment("MEMQ_KEY");
        this.headers = { accept: "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) };
        for (const [name, value] of Object.entries(options.headers ?? {})) this.headers[name.toLowerCase()] = value;
        const found = options.fetch ?? globalThis.fetch;
        if (typeof found !== "function") throw new TypeError("no fetch: pass options.fetch");
        this.fetchImpl = found.bind(globalThis);
    }

    // --- sending ----------------------------------------------------------------------------

    private async send(request: Request): Promise<{ response: Response; text: string }> {
        const { op } = request;
        const url = new URL(this.baseUrl + request.path);
        for (const [name, value] of Object.entries(request.query ?? {})) {
            if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
        }
        const headers: Record<string, string> = { ...this.headers };
        if (request.accept) headers.accept = request.accept;
        let body: string | Uint8Array | undefined = request.body;
        if (request.json !== undefined) {
            body = JSON.stringify(request.json);
            headers["content-type"] = "application/json";
        } else if (request.contentType) {
            headers["content-type"] = request.contentType;
        }
        const timeout = this.timeoutMs + (request.extraTimeoutMs ?? 0);
        for (let attempt = 1; ; attempt++) {
            let error: MemqError;
            try {
                const response = await this.fetchImpl(url, {
                    method: op.method,
                    headers,
                    body: body as BodyInit | undefined,
                    signal: AbortSignal.timeout(timeout),
                });
                const text = await response.text();
                if (response.ok || request.answers?.includes(response.status)) return { response, text };
                error = errorFromAnswer(
                    response.status,
                    response.statusText,
                    text,
                    response.headers.get("retry-after"),
                    op.method,
                    url.href,
                );
            } catch (cause) {
                error = noAnswer(cause, op.method, url.href, timeout);
            }
            const wait = op.retrySafe ? retryDelay(this.retries, attempt, error, this.random()) : null;
            if (wait === null) throw error;
            await sleep(wait);
        }
    }

    private async json<N extends OperationName>(name: N, request: Omit<Request, "op">): Promise<Answer<N>> {
        const { response, text } = await this.send({ ...request, op: OPERATIONS[name] });
        try {
            const value: unknown = JSON.parse(text);
            if (typeof value === "object" && value !== null) return value as Answer<N>;
        } catch {
            // reported below
        }
        throw unexpected(response, `the answer is not JSON: ${text.slice(0, 200)}`);
    }

    private async markdown(name: OperationName, request: Omit<Request, "op">): Promise<string> {
        const query = { ...request.query, format: "markdown" };
        return (await this.send({ ...request, query, op: OPERATIONS[name], accept: "text/markdown" })).text;
    }

    // --- ingest -------------------------------------------------------------------------------

    /**
     * Add a batch of messages to the conversation, in order, all or nothing. A message
     * without a `message_id` gets one here, before the first attempt, so a retry (the
     * client's or yours, with the same ids) is answered `duplicate`, never stored twice.
     * `options.user_id`: the user of every message.
     */
    async addMessages(
        conversationId: string,
        messages: readonly MessageInput[],
        options: AddMessagesOptions = {},
    ): Promise<MessagesOut> {
        const op = OPERATIONS.addMessages;
        const json: MessagesIn = { ...options, messages: withIds(messages) };
        return this.json("addMessages", { path: fill(op, { conversation_id: conversationId }), json });
    }

    /** Add one message (see `addMessages`); its result (`status`, `message_id`). */
    async addMessage(
        conversationId: string,
        role: string,
        content: string,
        options: AddMessageOptions = {},
    ): Promise<AddResultOut> {
        const out = await this.addMessages(conversationId, [{ role, content, ...options }]);
        const first = out.results[0];
        if (!first) throw new UnexpectedResponse("the answer has no result", { type: "unexpected_response" });
        return first;
    }

    /**
     * Close the conversation's open event into an episode once its queue is drained. With
     * `wait` (seconds), return once every accepted message is in an episode (`idle` true)
     * or the wait is over (`idle` false: nothing is lost). Waits over 60 s ask again.
     */
    async flush(conversationId: string, options: { wait?: number } = {}): Promise<FlushOut> {
        const wait = options.wait ?? 0;
        if (!(wait >= 0)) throw new BadRequest("must not be negative", { type: "validation", field: "wait" });
        const path = fill(OPERATIONS.flush, { conversation_id: conversationId });
        const once = (seconds: number) =>
            this.json("flush", {
                path,
                query: seconds > 0 ? { wait: seconds } : {},
                extraTimeoutMs: seconds * 1000,
            });
        if (wait === 0) return once(0);
        const deadline = Date.now() + wait * 1000;
        let out = await once(Math.min(wait, FLUSH_WAIT_MAX));
        let left: number;
        while (out.idle === false && (left = (deadline - Date.now()) / 1000) > 0.05) {
            const again = await once(Math.min(left, FLUSH_WAIT_MAX));
            out = { ...again, flushed: out.flushed || again.flushed, warning: out.warning ?? again.warning ?? null };
        }
        return out;
    }

    /** Whether the conversation is idle (every accepted message in an episode), and what waits. */
    async status(conversationId: string): Promise<ConversationStatusOut> {
        return this.json("status", { path: fill(OPERATIONS.status, { conversation_id: conversationId }) });
    }

    // --- conversations ------------------------------------------------------------------------

    /** One page of the tenant's conversations in id order, after the cursor `after` (the previous page's `next`). */
    async listConversations(options: ListConversationsOptions = {}): Promise<ConversationsOut> {
        return this.json("listConversations", { path: OPERATIONS.listConversations.path, query: options });
    }

    /** Every conversation of the tenant, in id order, a page (`limit`) per request. */
    async *iterConversations(options: { limit?: number } = {}): AsyncGenerator<ConversationOut, void, undefined> {
        let after: string | null | undefined;
        do {
            const page = await this.listConversations({ ...options, after });
            yield* page.conversations;
            after = page.next;
        } while (after);
    }

    async episodes(conversationId: string): Promise<EpisodesOut> {
        return this.json("episodes", { path: fill(OPERATIONS.episodes, { conversation_id: conversationId }) });
    }

    /** The manifest: chapters by relative date (JSON, or `format: "markdown"` for the tree alone). */
    async manifest(conversationId: string, options: ManifestOptions & Markdown): Promise<string>;
    async manifest(conversationId: string, options?: ManifestOptions & Json): Promise<ManifestOut>;
    async manifest(
        conversationId: string,
        { format, ...query }: ManifestOptions & { format?: Format } = {},
    ): Promise<ManifestOut | string> {
        const request = { path: fill(OPERATIONS.manifest, { conversation_id: conversationId }), query };
        return format === "markdown" ? this.markdown("manifest", request) : this.json("manifest", request);
    }

    /** What to put at the top of a new session (JSON, or `format: "markdown"`). */
    async context(conversationId: string, options: ContextOptions & Markdown): Promise<string>;
    async context(conversationId: string, options?: ContextOptions & Json): Promise<ContextOut>;
    async context(
        conversationId: string,
        { format, ...query }: ContextOptions & { format?: Format } = {},
    ): Promise<ContextOut | string> {
        const request = { path: fill(OPERATIONS.context, { conversation_id: conversationId }), query };
        return format === "markdown" ? this.markdown("context", request) : this.json("context", request);
    }

    /** Forget the conversation: every trace of it, including work in flight. Idempotent. */
    async forget(conversationId: string): Promise<ForgetOut> {
        return this.json("forget", { path: fill(OPERATIONS.forget, { conversation_id: conversationId }) });
    }

    // --- memory -------------------------------------------------------------------------------

    /** Memories relevant to `query`: JSON with every score (the markdown in `text`), or `format: "markdown"`. */
    async retrieve(query: string, options: RetrieveOptions & Markdown): Promise<string>;
    async retrieve(query: string, options?: RetrieveOptions & Json): Promise<RetrieveOut>;
    async retrieve(query: string, { format, ...body }: RetrieveOptions & { format?: Format } = {}): Promise<RetrieveOut | string> {
        const request = { path: OPERATIONS.retrieve.path, json: { ...body, query } };
        return format === "markdown"
            ? this.markdown("retrieve", request)
            : this.json("retrieve", { ...request, query: { format: "json" } });
    }

    /** The latest memories of a conversation or a user (`conversation_id` or `user_id`). */
    async recent(options: RecentOptions & Markdown): Promise<string>;
    async recent(options: RecentOptions & Json): Promise<RecentOut>;
    async recent({ format, ...body }: RecentOptions & { format?: Format }): Promise<RecentOut | string> {
        const request = { path: OPERATIONS.recent.path, json: body };
        return format === "markdown"
            ? this.markdown("recent", request)
            : this.json("recent", { ...request, query: { format: "json" } });
    }

    // --- facts --------------------------------------------------------------------------------

    async facts(conversationId: string, options: FactsOptions = {}): Promise<ConversationFactsOut> {
        return this.json("facts", { path: fill(OPERATIONS.facts, { conversation_id: conversationId }), query: options });
    }

    async searchFacts(query: string, options: SearchFactsOptions = {}): Promise<FactSearchOut> {
        return this.json("searchFacts", { path: OPERATIONS.searchFacts.path, json: { ...options, query } });
    }

    async factHistory(factId: string): Promise<FactHistoryOut> {
        return this.json("factHistory", { path: fill(OPERATIONS.factHistory, { fact_id: factId }) });
    }

    // --- users --------------------------------------------------------------------------------

    /** Move the conversation to a user (null: to none); audited. */
    async moveConversation(conversationId: string, userId: string | null): Promise<MoveOut> {
        const path = fill(OPERATIONS.moveConversation, { conversation_id: conversationId });
        return this.json("moveConversation", { path, json: { user_id: userId } });
    }

    async userConversations(userId: string, options: UserConversationsOptions = {}): Promise<UserConversationsOut> {
        const path = fill(OPERATIONS.userConversations, { user_id: userId });
        return this.json("userConversations", { path, query: options });
    }

    /** Forget every conversation of the user. */
    async forgetUser(userId: string): Promise<UserForgetOut> {
        return this.json("forgetUser", { path: fill(OPERATIONS.forgetUser, { user_id: userId }) });
    }

    // --- portability --------------------------------------------------------------------------

    /**
     * The tenant (or one conversation, or one user's) as a `memq-export` file: JSON Lines
     * text, checked to end with its end record (`UnexpectedResponse` when it was cut short).
     */
    async export(options: ExportOptions = {}): Promise<string> {
        const { response, text } = await this.send({
            op: OPERATIONS.export,
            path: OPERATIONS.export.path,
            query: options,
            accept: "application/x-ndjson",
        });
        const last = text.trimEnd().split("\n").at(-1) ?? "";
        let end: unknown;
        try {
            end = JSON.parse(last);
        } catch {
            end = undefined;
        }
        if ((end as { type?: unknown } | undefined)?.type !== "end") {
            throw unexpected(response, "the export does not end with its end record (cut short?)");
        }
        return text;
    }

    /** Import a file of `export` into the key's tenant (idempotent: what is there is skipped). */
    async import(data: string | Uint8Array): Promise<ImportOut> {
        return this.json("import", { path: OPERATIONS.import.path, body: data, contentType: "application/x-ndjson" });
    }

    // --- webhooks -----------------------------------------------------------------------------

    /** Register a webhook; the answer has its `secret` (shown once). Never retried. */
    async createWebhook(url: string, options: CreateWebhookOptions = {}): Promise<WebhookCreatedOut> {
        return this.json("createWebhook", { path: OPERATIONS.createWebhook.path, json: { content: false, ...options, url } });
    }

    async listWebhooks(): Promise<WebhookListOut> {
        return this.json("listWebhooks", { path: OPERATIONS.listWebhooks.path });
    }

    async deleteWebhook(webhookId: string): Promise<WebhookDeletedOut> {
        return this.json("deleteWebhook", { path: fill(OPERATIONS.deleteWebhook, { webhook_id: webhookId }) });
    }

    async webhookDeliveries(options: WebhookDeliveriesOptions = {}): Promise<DeliveryListOut> {
        return this.json("webhookDeliveries", { path: OPERATIONS.webhookDeliveries.path, query: options });
    }

    /** Ask for a delivery to be sent again. Never retried. */
    async retryDelivery(deliveryId: string): Promise<DeliveryRetriedOut> {
        return this.json("retryDelivery", { path: fill(OPERATIONS.retryDelivery, { delivery_id: deliveryId }) });
    }

    // --- activity -----------------------------------------------------------------------------

    /**
     * One page of the tenant's activity log (who created or revoked keys, forgot, exported,
     * imported, changed webhooks), newest first, after the cursor `after` (the previous page's
     * `next`); `action`: only that action; `since`: only entries at or after that time.
     */
    async listActivity(options: ListActivityOptions = {}): Promise<ActivityOut> {
        return this.json("listActivity", { path: OPERATIONS.listActivity.path, query: options });
    }

    /** Every entry of the tenant's activity log, newest first, a page (`limit`) per request. */
    async *iterActivity(options: IterActivityOptions = {}): AsyncGenerator<ActivityEntryOut, void, undefined> {
        let after: string | null | undefined;
        do {
            const page = await this.listActivity({ ...options, after });
            yield* page.entries;
            after = page.next;
        } while (after);
    }

    // --- quota --------------------------------------------------------------------------------

    /**
     * The tenant's quotas (messages a day, stored messages; `null`: no limit) and what it has
     * used. A batch a quota refuses throws `QuotaExceeded`.
     */
    async quota(): Promise<QuotaOut> {
        return this.json("quota", { path: OPERATIONS.quota.path });
    }

    // --- health -------------------------------------------------------------------------------

    async health(): Promise<HealthOut> {
        return this.json("health", { path: OPERATIONS.health.path });
    }

    /** Whether Redis and PostgreSQL answer; `ready` false (a 503) is an answer, not an error. */
    async ready(): Promise<ReadyOut> {
        return this.json("ready", { path: OPERATIONS.ready.path, answers: [503] });
    }
}

/** The messages as the API takes them, each with a `message_id`: the caller's, or a new one. */
export function withIds(messages: readonly MessageInput[]): MessageIn[] {
    return messages.map((m) => ({ ...m, message_id: m.message_id ?? newMessageId() }));
}

function noAnswer(cause: unknown, method: string, url: string, timeoutMs: number): MemqError {
    const name = (cause as { name?: unknown } | null)?.name;
    if (name === "TimeoutError") {
        return new RequestTimeout(`no answer in ${timeoutMs} ms`, { type: "timeout", method, url, cause });
    }
    const inner = (cause as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
    const reason = inner?.code ?? inner?.message ?? (cause as Error | null)?.message ?? String(cause);
    return new NetworkError(`no answer: ${String(reason)}`, { type: "connection", method, url, cause });
}

function unexpected(response: Response, message: string): UnexpectedResponse {
    return new UnexpectedResponse(message, { status: response.status, type: "unexpected_response", url: response.url });
}
