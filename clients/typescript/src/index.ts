/**
 * memq's HTTP API from TypeScript / JavaScript (ESM, fetch only).
 *
 *     import { MemqClient } from "memq-client";
 *
 *     const memq = new MemqClient(); // MEMQ_URL, MEMQ_KEY
 *     await memq.addMessages("conv-7", [{ role: "user", content: "My sister's name is Lena." }]);
 *     await memq.flush("conv-7", { wait: 30 });
 *     console.log((await memq.retrieve("sister's name", { conversation_id: "conv-7" })).text);
 */
export {
    DEFAULT_TIMEOUT_MS,
    DEFAULT_URL,
    FLUSH_WAIT_MAX,
    MemqClient,
    newMessageId,
    withIds,
    type AddMessageOptions,
    type AddMessagesOptions,
    type ClientOptions,
    type ContextOptions,
    type CreateWebhookOptions,
    type ExportOptions,
    type FactsOptions,
    type Format,
    type IterActivityOptions,
    type ListActivityOptions,
    type ListConversationsOptions,
    type ManifestOptions,
    type MessageInput,
    type RecentOptions,
    type RetrieveOptions,
    type SearchFactsOptions,
    type UserConversationsOptions,
    type WebhookDeliveriesOptions,
} from "./client.js";
export {
    AuthError,
    BadRequest,
    ClientError,
    Conflict,
    MemqError,
    NetworkError,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RequestTimeout,
    RequestTooLarge,
    ServerError,
    ServiceUnavailable,
    UnexpectedResponse,
    errorFromAnswer,
    parseRetryAfter,
    type MemqErrorInit,
} from "./errors.js";
export { NOT_CALLED, OPERATIONS, type Operation, type OperationName } from "./operations.js";
export { DEFAULT_RETRIES, retryDelay, retryPolicy, type RetryPolicy } from "./retry.js";
export type * from "./types.js";
