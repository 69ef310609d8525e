// @ts-check
// The client against a real memq API and worker: MEMQ_URL and MEMQ_KEY (a key of a tenant of
// its own). tests/integration/test_typescript_client.py starts both and runs this; without
// MEMQ_URL the suite is skipped.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it, before } from "node:test";

import { AuthError, BadRequest, MemqClient, NotFound } from "../dist/index.js";

const url = process.env.MEMQ_URL;
const key = process.env.MEMQ_KEY;
const run = randomUUID().slice(0, 8);
const conv = `ts-${run}-a`;
const other = `ts-${run}-b`;

describe("against a live memq API", { skip: url && key ? false : "MEMQ_URL and MEMQ_KEY are not set" }, () => {
    const memq = new MemqClient({ baseUrl: url, apiKey: key, retries: { backoffMs: 50 } });
    /** @type {import("../dist/index.js").MessagesOut} */
    let added;
    const batch = [
        { role: "user", content: "Can you book the 9:40 train to Hamburg for Friday?", message_id: `${run}-given` },
        { role: "assistant", content: "Booked: ICE 1004, coach 7, seat 54, leaving Berlin at 9:40." },
        { role: "user", content: "Great. My sister Lena will pick me up at Hamburg central station." },
        { role: "assistant", content: "Noted: Lena picks you up at Hamburg Hauptbahnhof." },
    ];

    before(async () => {
        added = await memq.addMessages(conv, batch);
        await memq.addMessage(other, "user", "A second conversation, for paging.", { user_id: `u-${run}` });
    });

    it("adds messages, giving an id to each that has none", () => {
        assert.equal(added.conversation_id, conv);
        assert.deepEqual(added.results.map((r) => r.status), ["accepted", "accepted", "accepted", "accepted"]);
        assert.equal(added.results[0]?.message_id, `${run}-given`);
        const ids = added.results.map((r) => r.message_id);
        assert.equal(new Set(ids).size, 4);
    });

    it("answers duplicate for a batch sent again with its ids", async () => {
        const again = await memq.addMessages(conv, batch.map((m, i) => ({ ...m, message_id: added.results[i]?.message_id })));
        assert.deepEqual(again.results.map((r) => r.status), ["duplicate", "duplicate", "duplicate", "duplicate"]);
    });

    it("flushes and waits until the conversation is idle", async () => {
        const flushed = await memq.flush(conv, { wait: 60 });
        assert.equal(flushed.idle, true, JSON.stringify(flushed));
        const status = await memq.status(conv);
        assert.equal(status.idle, true);
        assert.equal(status.inbox, 0);
        const episodes = await memq.episodes(conv);
        assert.ok(episodes.episodes.length >= 1);
        assert.equal(episodes.conversation_id, conv);
    });

    it("retrieves as JSON and as markdown", async () => {
        const found = await memq.retrieve("which seat did I get on the train?", { conversation_id: conv });
        assert.equal(typeof found.text, "string");
        assert.ok(found.memories.length >= 1, found.text);
        assert.match(found.text, /seat 54/);
        const markdown = await memq.retrieve("which seat did I get on the train?", { conversation_id: conv, format: "markdown" });
        assert.equal(typeof markdown, "string");
        assert.match(markdown, /seat 54/);
    });

    it("reads recent memory, the manifest and the session context", async () => {
        const recent = await memq.recent({ conversation_id: conv });
        assert.ok(recent.memories.length >= 1);
        const manifest = await memq.manifest(conv, { timezone: "Europe/Berlin" });
        assert.ok(Array.isArray(manifest.chapters) && manifest.chapters.length >= 1);
        assert.match(await memq.manifest(conv, { format: "markdown" }), /CONVERSATION MANIFEST/);
        const context = await memq.context(conv);
        assert.equal(context.conversation_id, conv);
        assert.equal(typeof (await memq.context(conv, { format: "markdown" })), "string");
    });

    it("lists conversations a page at a time", async () => {
        const first = await memq.listConversations({ limit: 1 });
        assert.equal(first.conversations.length, 1);
        assert.ok(first.next);
        const second = await memq.listConversations({ limit: 1, after: first.next });
        assert.notEqual(second.conversations[0]?.conversation_id, first.conversations[0]?.conversation_id);
        const all = [];
        for await (const c of memq.iterConversations({ limit: 1 })) all.push(c.conversation_id);
        assert.deepEqual(all, [conv, other]);
    });

    it("reads and searches facts, and users' conversations", async () => {
        assert.ok(Array.isArray((await memq.facts(conv)).facts));
        const search = await memq.searchFacts("sister", { conversation_id: conv });
        assert.equal(search.query, "sister");
        assert.ok(Array.isArray(search.facts));
        const mine = await memq.userConversations(`u-${run}`);
        assert.ok(JSON.stringify(mine).includes(other));
    });

    it("exports, forgets and imports a conversation back", async () => {
        const file = await memq.export({ conversation_id: conv });
        const header = JSON.parse(file.split("\n")[0] ?? "");
        assert.equal(header.type, "header");
        const forgotten = await memq.forget(conv);
        assert.equal(forgotten.forgotten, true);
        await assert.rejects(memq.episodes(conv), NotFound);
        assert.equal((await memq.forget(conv)).forgotten, false); // idempotent
        const imported = await memq.import(file);
        assert.equal(imported.complete, true);
        assert.ok((imported.inserted.episode ?? 0) >= 1, JSON.stringify(imported.inserted));
        assert.ok((await memq.episodes(conv)).episodes.length >= 1);
        assert.equal((await memq.import(file)).complete, true); // importing again changes nothing
    });

    it("registers, lists and deletes a webhook", async () => {
        const created = await memq.createWebhook("http://127.0.0.1:9/memq-hook", { events: ["episode.created"] });
        assert.ok(created.secret);
        assert.ok((await memq.listWebhooks()).webhooks.some((w) => w.id === created.id));
        assert.equal((await memq.deleteWebhook(created.id)).deleted, true);
        assert.ok(!(await memq.listWebhooks()).webhooks.some((w) => w.id === created.id));
        assert.ok(Array.isArray((await memq.webhookDeliveries({ limit: 5 })).deliveries));
    });

    it("reads the activity log a page at a time, each entry naming the key", async () => {
        const first = await memq.listActivity({ limit: 1, action: "webhook.delete" });
        assert.equal(first.entries.length, 1);
        assert.equal(first.entries[0]?.actor, key?.split("_")[1]);
        const all = [];
        for await (const e of memq.iterActivity({ limit: 2 })) all.push(e.action);
        assert.deepEqual(all.slice(0, 2), ["webhook.delete", "webhook.create"]);
        assert.ok(all.includes("export") && all.includes("import") && all.includes("conversation.forget"), all.join());
        const later = new Date(Date.now() + 3_600_000).toISOString();
        assert.deepEqual((await memq.listActivity({ since: later })).entries, []);
    });

    it("reads the tenant's quotas and their use", async () => {
        const quota = await memq.quota();
        assert.equal(quota.messages_per_day, null); // no limit unless the operator sets one
        assert.equal(quota.stored, null); // counted only under a stored limit
        assert.ok(quota.used_today >= 0);
    });

    it("throws typed errors with the API's type, message and field", async () => {
        const missing = await memq.status(`ts-${run}-never`).catch((e) => e);
        assert.ok(missing instanceof NotFound, String(missing));
        assert.deepEqual([missing.status, missing.type, missing.field], [404, "not_found", "conversation_id"]);
        assert.ok(missing.message.length > 0);

        const invalid = await memq.addMessage(conv, "user", "Hi", { timestamp: "yesterday" }).catch((e) => e);
        assert.ok(invalid instanceof BadRequest, String(invalid));
        assert.deepEqual([invalid.status, invalid.type, invalid.field], [400, "validation", "messages[0].timestamp"]);

        const stranger = new MemqClient({ baseUrl: url, apiKey: "not-a-key" });
        const denied = await stranger.listConversations().catch((e) => e);
        assert.ok(denied instanceof AuthError, String(denied));
        assert.equal(denied.status, 401);
        assert.equal(denied.type, "unauthorized");
    });

    it("moves a conversation and forgets a user", async () => {
        const moved = await memq.moveConversation(conv, `u-${run}`);
        assert.equal(moved.changed, true);
        const gone = await memq.forgetUser(`u-${run}`);
        assert.ok(JSON.stringify(gone).includes(conv), JSON.stringify(gone));
        await assert.rejects(memq.status(other), NotFound);
    });

    it("reports health", async () => {
        assert.equal((await memq.health()).status, "ok");
        assert.equal(typeof (await memq.ready()).ready, "boolean");
    });
});
