/**
 * The API's request and answer types, named as in its OpenAPI document. Every one is taken
 * from `schema.ts`, which `npm run generate` writes from `openapi.json` (the snapshot of the
 * app's document); nothing here is written by hand but the names.
 */
import type { components, paths } from "./schema.js";

type S = components["schemas"];

export type ActivityEntryOut = S["ActivityEntryOut"];
export type ActivityOut = S["ActivityOut"];
export type AddResultOut = S["AddResultOut"];
export type ContextOut = S["ContextOut"];
export type ConversationFactsOut = S["ConversationFactsOut"];
export type ConversationOut = S["ConversationOut"];
export type ConversationsOut = S["ConversationsOut"];
export type ConversationStatusOut = S["ConversationStatusOut"];
export type DeliveryListOut = S["DeliveryListOut"];
export type DeliveryRetriedOut = S["DeliveryRetriedOut"];
export type EpisodeOut = S["EpisodeOut"];
export type EpisodesOut = S["EpisodesOut"];
export type ErrorDetailOut = S["ErrorDetailOut"];
export type ErrorOut = S["ErrorOut"];
export type ExportHeaderOut = S["ExportHeaderOut"];
export type FactHistoryOut = S["FactHistoryOut"];
export type FactOut = S["FactOut"];
export type FactSearchIn = S["FactSearchIn"];
export type FactSearchOut = S["FactSearchOut"];
export type FlushOut = S["FlushOut"];
export type ForgetOut = S["ForgetOut"];
export type HealthOut = S["HealthOut"];
export type ImportOut = S["ImportOut"];
export type ManifestChapterOut = S["ManifestChapterOut"];
export type ManifestOut = S["ManifestOut"];
export type MemoryOut = S["MemoryOut"];
export type MessageIn = S["MessageIn"];
export type MessagesIn = S["MessagesIn"];
export type MessagesOut = S["MessagesOut"];
export type MoveOut = S["MoveOut"];
export type ReadyOut = S["ReadyOut"];
export type RecentIn = S["RecentIn"];
export type QuotaOut = S["QuotaOut"];
export type RecentOut = S["RecentOut"];
export type RetrieveIn = S["RetrieveIn"];
export type RetrieveOut = S["RetrieveOut"];
export type UserConversationsOut = S["UserConversationsOut"];
export type UserForgetOut = S["UserForgetOut"];
export type WebhookCreatedOut = S["WebhookCreatedOut"];
export type WebhookDeletedOut = S["WebhookDeletedOut"];
export type WebhookIn = S["WebhookIn"];
export type WebhookListOut = S["WebhookListOut"];
export type WebhookOut = S["WebhookOut"];

export type { components, paths };

/** A path of the API, as the OpenAPI document writes it (`/v1/conversations/{conversation_id}`, ...). */
export type ApiPath = keyof paths;
export type HttpMethod = "GET" | "POST" | "DELETE";

type OperationOf<P extends ApiPath, M extends HttpMethod> = NonNullable<paths[P][Lowercase<M>]>;

/** The query parameters a route takes, per the document. */
export type QueryOf<P extends ApiPath, M extends HttpMethod> =
    OperationOf<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

type JsonOf<R> = R extends { content: { "application/json": infer J } } ? J : never;

/** The JSON of a route's success answer (200, 201 or 202), per the document. */
export type AnswerOf<P extends ApiPath, M extends HttpMethod> =
    OperationOf<P, M> extends { responses: infer Rs }
        ? Rs extends { 200: infer R }
            ? JsonOf<R>
            : Rs extends { 201: infer R }
              ? JsonOf<R>
              : Rs extends { 202: infer R }
                ? JsonOf<R>
                : never
        : never;
