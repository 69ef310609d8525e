// @ts-check
// The client without memq: the retry policy as a function, the operation table against the
// OpenAPI snapshot, error answers (a quota reached, a request rate, a full storage), and retries,
// timeouts and errors against a scripted HTTP server.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { describe, it, before, after } from "node:test";

import {
    AuthError,
    BadRequest,
    MemqClient,
    MemqError,
    NetworkError,
    NOT_CALLED,
    NotFound,
    OPERATIONS,
    QuotaExceeded,
    RateLimited,
    RequestTimeout,
    ServerError,
    ServiceUnavailable,
    UnexpectedResponse,
    errorFromAnswer,
    parseRetryAfter,
    retryDelay,
    retryPolicy,
} from "../dist/index.js";

describe("retry policy", () => {
    const policy = retryPolicy({ attempts: 4, backoffMs: 100, backoffMaxMs: 300 });
    const unavailable = (retryAfter = /** @type {number | null} */ (null)) =>
        new ServiceUnavailable("down", { status: 503, retryAfter });

    it("backs off doubling up to the ceiling, jitter between half and all", () => {
        assert.equal(retryDelay(policy, 1, unavailable(), 0), 50);
        assert.equal(retryDelay(policy, 1, unavailable(), 1), 100);
        assert.equal(retryDelay(policy, 2, unavailable(), 1), 200);
        assert.equal(retryDelay(policy, 3, unavailable(), 1), 300);
    });

    it("stops after the last attempt and on answers a retry cannot cure", () => {
        assert.equal(retryDelay(policy, 4, unavailable(), 1), null);
        assert.equal(retryDelay(policy, 1, new BadRequest("no", { status: 400 }), 1), null);
        assert.equal(retryDelay(policy, 1, new ServerError("bug", { status: 500 }), 1), null);
        assert.equal(retryDelay(policy, 1, new NetworkError("refused"), 0), 50);
        assert.equal(retryDelay(policy, 1, new RequestTimeout("slow"), 0), 50);
    });

    it("waits at least Retry-After, and not at all when it is too long", () => {
        assert.equal(retryDelay(policy, 1, unavailable(2), 0), 2000);
        assert.equal(retryDelay(policy, 1, unavailable(31), 0), null);
    });

    it("never retries a quota reached, and retries a request rate and a full storage after Retry-After", () => {
        const quota = new QuotaExceeded("the day's quota is reached", { status: 429, type: "quota_exceeded" });
        assert.equal(retryDelay(retryPolicy({ attempts: 10, statuses: [429] }), 1, quota, 0), null);
        const told = new QuotaExceeded("quota", { status: 429, type: "quota_exceeded", retryAfter: 1 }); // were one ever sent
        assert.equal(retryDelay(policy, 1, told, 0), null);
        assert.equal(retryDelay(policy, 1, new RateLimited("slow", { status: 429, type: "rate_limited", retryAfter: 1 }), 0), 1000);
        const full = new ServiceUnavailable("Redis is full", { status: 503, type: "storage_full", retryAfter: 10 });
        assert.deepEqual([1, 2, 3, 4].map((attempt) => retryDelay(retryPolicy({ retryAfterMaxMs: 30_000 }), attempt, full, 1)), [10_000, 10_000, 10_000, null]);
    });

    it("reads Retry-After as seconds or a date", () => {
        assert.equal(parseRetryAfter("3"), 3);
        assert.equal(parseRetryAfter(null), null);
        assert.equal(parseRetryAfter("soon"), null);
        assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4_000), 6);
    });

    it("takes a number of retries", () => {
        assert.equal(retryPolicy(0).attempts, 1);
        assert.equal(retryPolicy().attempts, 4);
        assert.throws(() => retryPolicy({ attempts: 0 }), RangeError);
    });
});

describe("error answers", () => {
    const at = /** @type {const} */ (["POST", "http://memq.test/v1/conversations/c/messages"]);

    it("tells a quota reached from a request rate by the API's type", () => {
        const body = JSON.stringify({
            error: {
                type: "quota_exceeded",
                message: "the tenant's quota of 1000 messages a day is reached",
                field: null,
                limit: "messages_per_day",
                setting: "MEMQ_QUOTA_MESSAGES_PER_DAY",
                results: [{ index: 0, status: "rejected", message_id: "m1" }],
            },
        });
        const quota = errorFromAnswer(429, "Too Many Requests", body, null, ...at);
        assert.ok(quota instanceof QuotaExceeded && !(quota instanceof RateLimited));
        assert.deepEqual([quota.limit, quota.setting, quota.retryAfter], ["messages_per_day", "MEMQ_QUOTA_MESSAGES_PER_DAY", null]);
        assert.deepEqual(quota.results?.map((r) => r.status), ["rejected"]);
        const rate = errorFromAnswer(429, "Too Many Requests", '{"error": {"type": "rate_limited", "message": "m", "field": null}}', "2", ...at);
        assert.ok(rate instanceof RateLimited && !(rate instanceof QuotaExceeded));
        assert.equal(rate.retryAfter, 2);
        const proxy = errorFromAnswer(429, "Too Many Requests", "slow down", null, ...at); // not the API's: a rate
        assert.ok(proxy instanceof RateLimited && proxy.type === "http_error");
    });

    it("takes storage_full for a ServiceUnavailable naming its cause", () => {
        const body = '{"error": {"type": "storage_full", "message": "PostgreSQL cannot extend its files", "field": null, "cause": "postgres_disk_full"}}';
        const full = errorFromAnswer(503, "Service Unavailable", body, "10", ...at);
        assert.ok(full instanceof ServiceUnavailable);
        assert.deepEqual([full.type, full.detail.cause, full.retryAfter], ["storage_full", "postgres_disk_full", 10]);
    });
});

describe("the operation table and the OpenAPI document", () => {
    const spec = JSON.parse(readFileSync(new URL("../openapi.json", import.meta.url), "utf8"));
    const documented = Object.entries(spec.paths).flatMap(([path, ops]) =>
        Object.keys(/** @type {object} */ (ops)).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const called = Object.values(OPERATIONS).map((op) => `${op.method} ${op.path}`);

    it("calls every documented operation, or says why not", () => {
        const missing = documented.filter((op) => !called.includes(op) && !(op in NOT_CALLED));
        assert.deepEqual(missing, []);
    });

    it("calls only documented operations", () => {
        assert.deepEqual(called.filter((op) => !documented.includes(op)), []);
        assert.deepEqual(Object.keys(NOT_CALLED).filter((op) => !documented.includes(op)), []);
    });

    it("has a method per operation", () => {
        const methods = Object.getOwnPropertyNames(MemqClient.prototype);
        assert.deepEqual(Object.keys(OPERATIONS).filter((name) => !methods.includes(name)), []);
    });
});

/**
 * A server answering each request with the next scripted answer (the last one repeats),
 * recording what it got.
 * @typedef {{ status: number, body?: string, headers?: Record<string, string>, hang?: boolean }} Answer
 */
class Scripted {
    /** @type {{ method: string, url: string, headers: import("node:http").IncomingHttpHeaders, body: string }[]} */
    requests = [];
    /** @type {Answer[]} */
    answers = [];
    server = createServer((req, res) => {
        let body = "";
        req.on("data", (chunk) => (body += chunk));
        req.on("end", () => {
            this.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
            const answer = this.answers[Math.min(this.requests.length, this.answers.length) - 1];
            if (!answer || answer.hang) return; // never answers
            res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
            res.end(answer.body ?? "{}");
        });
    });
    url = "";

    async start() {
        await new Promise((resolve) => this.server.listen(0, "127.0.0.1", () => resolve(undefined)));
        const address = /** @type {import("node:net").AddressInfo} */ (this.server.address());
        this.url = `http://127.0.0.1:${address.port}`;
    }

    /** @param {Answer[]} answers */
    script(...answers) {
        this.requests = [];
        this.answers = answers;
    }

    /** @param {Partial<import("../dist/index.js").ClientOptions>} [options] */
    client(options) {
        return new MemqClient({ baseUrl: this.url, apiKey: "k", retries: { backoffMs: 1 }, ...options });
    }
}

describe("sending", () => {
    const scripted = new Scripted();
    before(() => scripted.start());
    after(() => {
        scripted.server.closeAllConnections();
        scripted.server.close();
    });

    const accepted = JSON.stringify({
        conversation_id: "c",
        results: [{ index: 0, message_id: "x", status: "accepted" }],
    });
    const busy = { status: 503, headers: { "retry-after": "0" }, body: '{"error": {"type": "busy", "message": "later", "field": null}}' };

    it("retries adding messages with the same ids", async () => {
        scripted.script(busy, { status: 202, body: accepted });
        await scripted.client().addMessages("c", [{ role: "user", content: "hi" }, { role: "user", content: "yo", message_id: "mine" }]);
        assert.equal(scripted.requests.length, 2);
        const [first, second] = scripted.requests.map((r) => JSON.parse(r.body).messages.map((/** @type {any} */ m) => m.message_id));
        assert.deepEqual(first, second);
        assert.equal(first[1], "mine");
        assert.match(first[0], /^[0-9a-f-]{36}$/);
        assert.equal(scripted.requests[0]?.headers.authorization, "Bearer k");
        assert.equal(scripted.requests[0]?.headers["content-type"], "application/json");
    });

    it("gives up after the last attempt with the API's error", async () => {
        scripted.script(busy);
        const error = await scripted.client({ retries: { attempts: 3, backoffMs: 1 } }).status("c").catch((e) => e);
        assert.ok(error instanceof ServiceUnavailable);
        assert.equal(error.type, "busy");
        assert.equal(error.retryAfter, 0);
        assert.equal(scripted.requests.length, 3);
    });

    it("never retries a quota reached; waits out a request rate and a full storage", async () => {
        const quota = {
            status: 429,
            body: JSON.stringify({
                error: {
                    type: "quota_exceeded",
                    message: "the tenant holds 500 messages, its quota (MEMQ_QUOTA_STORED_MESSAGES): forget some first",
                    field: null,
                    limit: "stored_messages",
                    setting: "MEMQ_QUOTA_STORED_MESSAGES",
                    results: [{ index: 0, status: "rejected", message_id: "m1" }],
                },
            }),
        };
        scripted.script(quota, { status: 202, body: accepted });
        const error = await scripted.client().addMessages("c", [{ role: "user", content: "hi", message_id: "m1" }]).catch((e) => e);
        assert.ok(error instanceof QuotaExceeded, String(error));
        assert.deepEqual([error.limit, error.setting], ["stored_messages", "MEMQ_QUOTA_STORED_MESSAGES"]);
        assert.equal(scripted.requests.length, 1);

        const rate = { status: 429, headers: { "retry-after": "0" }, body: '{"error": {"type": "rate_limited", "message": "slow down", "field": null}}' };
        const full = {
            status: 503,
            headers: { "retry-after": "0" },
            body: '{"error": {"type": "storage_full", "message": "Redis is full", "field": null, "cause": "redis_out_of_memory"}}',
        };
        scripted.script(rate, full, { status: 202, body: accepted });
        const out = await scripted.client().addMessages("c", [{ role: "user", content: "hi" }]);
        assert.equal(out.results[0]?.status, "accepted");
        assert.equal(scripted.requests.length, 3);
    });

    it("never retries registering a webhook", async () => {
        scripted.script(busy, { status: 201, body: "{}" });
        await assert.rejects(scripted.client().createWebhook("http://127.0.0.1:1/h"), ServiceUnavailable);
        assert.equal(scripted.requests.length, 1);
    });

    it("does not retry a 4xx, and carries type, message and field", async () => {
        scripted.script({ status: 404, body: '{"error": {"type": "not_found", "message": "no such conversation", "field": "conversation_id"}}' });
        const error = await scripted.client().episodes("a/b").catch((e) => e);
        assert.ok(error instanceof NotFound && error instanceof MemqError);
        assert.deepEqual([error.status, error.type, error.message, error.field], [404, "not_found", "no such conversation", "conversation_id"]);
        assert.equal(scripted.requests[0]?.url, "/v1/conversations/a%2Fb/episodes");
        assert.equal(scripted.requests.length, 1);
    });

    it("reads an answer that is not the API's", async () => {
        scripted.script({ status: 401, body: "<html>proxy says no</html>", headers: { "content-type": "text/html" } });
        const error = await scripted.client().health().catch((e) => e);
        assert.ok(error instanceof AuthError);
        assert.equal(error.type, "http_error");
        assert.match(error.message, /proxy says no/);
        scripted.script({ status: 200, body: "not json" });
        await assert.rejects(scripted.client().health(), UnexpectedResponse);
    });

    it("times out, and retries a timeout", async () => {
        scripted.script({ status: 0, hang: true });
        const error = await scripted.client({ timeoutMs: 100, retries: { attempts: 2, backoffMs: 1 } }).status("c").catch((e) => e);
        assert.ok(error instanceof RequestTimeout, String(error));
        assert.equal(error.type, "timeout");
        assert.equal(scripted.requests.length, 2);
    });

    it("lengthens the timeout of a waiting flush, and sends wait", async () => {
        scripted.script({ status: 202, body: '{"conversation_id": "c", "flushed": true, "idle": true}' });
        const out = await scripted.client({ timeoutMs: 100 }).flush("c", { wait: 2 });
        assert.equal(out.idle, true);
        assert.equal(scripted.requests[0]?.url, "/v1/conversations/c/flush?wait=2");
    });

    it("refuses an empty id before sending", async () => {
        scripted.script({ status: 200 });
        const error = await scripted.client().manifest("").catch((e) => e);
        assert.ok(error instanceof BadRequest);
        assert.equal(error.field, "conversation_id");
        assert.equal(scripted.requests.length, 0);
    });

    it("takes /readyz's 503 as an answer", async () => {
        scripted.script({ status: 503, body: '{"ready": false, "checks": {}}' });
        assert.equal((await scripted.client().ready()).ready, false);
    });

    it("reports a refused connection", async () => {
        const error = await new MemqClient({ baseUrl: "http://127.0.0.1:1", retries: 0 }).health().catch((e) => e);
        assert.ok(error instanceof NetworkError, String(error));
        assert.equal(error.type, "connection");
        assert.equal(error.status, null);
    });
});
