/**
 * Every operation of the API the client calls: its method, its path as the OpenAPI document
 * writes it (checked by the compiler against `schema.ts`) and whether a retry is safe.
 * `NOT_CALLED` names the document's routes the client leaves out, with the reason; a test
 * (test/unit.test.mjs) holds both against `openapi.json`.
 */
import type { ApiPath, HttpMethod } from "./types.js";

export interface Operation {
    readonly method: HttpMethod;
    readonly path: ApiPath;
    /** Sending it again after a failure cannot do anything twice (see `retry.ts`). */
    readonly retrySafe: boolean;
}

const C = "/v1/conversations/{conversation_id}";

export const OPERATIONS = {
    addMessages: { method: "POST", path: `${C}/messages`, retrySafe: true },
    addMessage: { method: "POST", path: `${C}/messages`, retrySafe: true },
    flush: { method: "POST", path: `${C}/flush`, retrySafe: true },
    status: { method: "GET", path: `${C}/status`, retrySafe: true },
    listConversations: { method: "GET", path: "/v1/conversations", retrySafe: true },
    iterConversations: { method: "GET", path: "/v1/conversations", retrySafe: true },
    episodes: { method: "GET", path: `${C}/episodes`, retrySafe: true },
    manifest: { method: "GET", path: `${C}/manifest`, retrySafe: true },
    context: { method: "GET", path: `${C}/context`, retrySafe: true },
    forget: { method: "DELETE", path: C, retrySafe: true },
    retrieve: { method: "POST", path: "/v1/memory/retrieve", retrySafe: true },
    recent: { method: "POST", path: "/v1/memory/recent", retrySafe: true },
    facts: { method: "GET", path: `${C}/facts`, retrySafe: true },
    searchFacts: { method: "POST", path: "/v1/facts/search", retrySafe: true },
    factHistory: { method: "GET", path: "/v1/facts/{fact_id}/history", retrySafe: true },
    moveConversation: { method: "POST", path: `${C}/user`, retrySafe: true },
    userConversations: { method: "GET", path: "/v1/users/{user_id}/conversations", retrySafe: true },
    forgetUser: { method: "DELETE", path: "/v1/users/{user_id}", retrySafe: true },
    export: { method: "GET", path: "/v1/export", retrySafe: true },
    import: { method: "POST", path: "/v1/import", retrySafe: true },
    createWebhook: { method: "POST", path: "/v1/webhooks", retrySafe: false },
    listWebhooks: { method: "GET", path: "/v1/webhooks", retrySafe: true },
    deleteWebhook: { method: "DELETE", path: "/v1/webhooks/{webhook_id}", retrySafe: true },
    webhookDeliveries: { method: "GET", path: "/v1/webhooks/deliveries", retrySafe: true },
    retryDelivery: { method: "POST", path: "/v1/webhooks/deliveries/{delivery_id}/retry", retrySafe: false },
    listActivity: { method: "GET", path: "/v1/activity", retrySafe: true },
    iterActivity: { method: "GET", path: "/v1/activity", retrySafe: true },
    quota: { method: "GET", path: "/v1/quota", retrySafe: true },
    health: { method: "GET", path: "/healthz", retrySafe: true },
    ready: { method: "GET", path: "/readyz", retrySafe: true },
} as const satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;

/** Routes of the OpenAPI document without a client method, and why. */
export const NOT_CALLED: Readonly<Record<string, string>> = {
    "POST /v1/memory/retrieve/raw": "deprecated alias of POST /v1/memory/retrieve?format=json (retrieve)",
    "POST /v1/memory/recent/raw": "deprecated alias of POST /v1/memory/recent?format=json (recent)",
};
