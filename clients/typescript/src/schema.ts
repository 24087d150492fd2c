// Generated from the OpenAPI document by `npm run client:generate`: do not edit.
// `npm run check` fails when this file is stale.

export type $Read<T> = {
    readonly $read: T;
};
export type $Write<T> = {
    readonly $write: T;
};
export type Readable<T> = T extends $Write<any> ? never : T extends $Read<infer U> ? Readable<U> : T extends (infer E)[] ? Readable<E>[] : T extends object ? {
    [K in keyof T as NonNullable<T[K]> extends $Write<any> ? never : K]: Readable<T[K]>;
} : T;
export type Writable<T> = T extends $Read<any> ? never : T extends $Write<infer U> ? Writable<U> : T extends (infer E)[] ? Writable<E>[] : T extends object ? {
    [K in keyof T as NonNullable<T[K]> extends $Read<any> ? never : K]: Writable<T[K]>;
} & {
    [K in keyof T as NonNullable<T[K]> extends $Read<any> ? K : never]?: never;
} : T;
export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process is up */
        get: operations["getLiveness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: the store answers */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/jwks.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The public keys that verify Tessera's access tokens (RFC 7517) */
        get: operations["getJwks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/openid-configuration": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Discovery metadata: issuer, jwks_uri, token_endpoint */
        get: operations["getOpenIdConfiguration"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth2/token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * RFC 8693 token exchange: an outside ID token for a Tessera access token
         * @description Form-encoded. No API key: the ID token is the credential. Errors follow RFC 6749 §5.2; 503 `temporarily_unavailable` (with Retry-After) when the provider's keys cannot be fetched.
         */
        post: operations["exchangeToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/applications": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List applications, by client_id
         * @description Keyset-paginated. A restricted API key sees only its applications.
         */
        get: operations["listApplications"];
        put?: never;
        /** Create an application */
        post: operations["createApplication"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an application */
        get: operations["getApplication"];
        /**
         * Replace an application
         * @description Omitted optional members return to their defaults.
         */
        put: operations["replaceApplication"];
        post?: never;
        /** Delete an application and all its users */
        delete: operations["deleteApplication"];
        options?: never;
        head?: never;
        /** Change some members of an application (JSON Merge Patch) */
        patch: operations["patchApplication"];
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}/users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List an application's users, by (provider, identifier)
         * @description Keyset-paginated, in byte order of provider then identifier. Filters combine with AND; `email` matches exactly, ignoring case; `active` picks active or inactive users.
         */
        get: operations["listUsers"];
        put?: never;
        /** Enrol a user in an application */
        post: operations["createUser"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}/users/{provider}/{identifier}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a user */
        get: operations["getUser"];
        /**
         * Replace a user
         * @description Omitted optional members return to their defaults (`avatar` → null).
         */
        put: operations["replaceUser"];
        post?: never;
        /** Delete a user */
        delete: operations["deleteUser"];
        options?: never;
        head?: never;
        /** Change some members of a user (JSON Merge Patch) */
        patch: operations["patchUser"];
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}/users/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Import users in bulk (a job)
         * @description The body is NDJSON (`application/x-ndjson`), one user a line in the chosen format, or for `format=keycloak` also a realm export document (`application/json`). It is read as it streams in; once it is all received the job is created and answered `202` with its `Location`, and runs on its own (the client may go away). Each bad line is an error line of the job, never a stop.
         */
        post: operations["importUsers"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/imports/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an import job: status, counts, rate */
        get: operations["getImport"];
        put?: never;
        post?: never;
        /**
         * Cancel a running import job
         * @description The job stops at its next line; what it wrote stays written (importing the same file again finishes it). `409` when the job has finished already.
         */
        delete: operations["cancelImport"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/imports/{id}/errors": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List an import job's error lines, in line order */
        get: operations["listImportErrors"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}/users/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export an application's users as NDJSON
         * @description Every user matching the filters (those of the list), one `ExportedUser` a line, in list order, all from one consistent snapshot, streamed. Import the file with `format=tessera` to move the users to another instance, ids included.
         */
        get: operations["exportUsers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API keys, oldest first
         * @description A restricted key sees only keys restricted within its own applications. Revoked keys are kept, with `revoked_at`, and listed with `include_revoked=true`.
         */
        get: operations["listApiKeys"];
        put?: never;
        /**
         * Create an API key
         * @description The secret is in `key`, in this response only. A key can grant only a subset of its own roles, applications and lifetime.
         */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/api-keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an API key (never its secret) */
        get: operations["getApiKey"];
        put?: never;
        post?: never;
        /**
         * Revoke an API key
         * @description Takes effect on every instance within one second. The key is kept, with `revoked_at`; revoking it again changes nothing. A key can revoke only keys whose roles and restriction lie within its own (else 403). The last working key with every role and no application restriction is never revoked: 409 `last-admin-key` (create another such key first), so the service always has an administrator.
         */
        delete: operations["revokeApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/api-keys/{id}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Give an API key a new secret, the old one working for a while longer
         * @description The new secret is in `key`, in this response only. The previous secret keeps working until `previous_expires_at` (`previous_valid_for_seconds`, default one day; 0 ends it at once); rotating again ends that overlap. A key can rotate only keys it could have created (roles, restriction and lifetime within its own, else 403).
         */
        post: operations["rotateApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}/users/{provider}/{identifier}/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Issue an access token for an existing user (trusted back ends)
         * @description For a back end that has authenticated the user itself. The token is a JWT signed with the key published at /.well-known/jwks.json; it expires after the application's jwt_expiration_in_minutes. An inactive user gets none (409).
         */
        post: operations["issueUserToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/applications/{client_id}/external-tokens/validate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Dry run: check an outside ID token against the application's configuration
         * @description Runs every check of a token exchange and reports the decoded header and claims, the matched external_token_validation entry, the user it maps to, whether that user exists, and the first check that failed. Issues nothing and creates nothing.
         */
        post: operations["validateExternalToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/signing-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the keys that sign access tokens, oldest first
         * @description Each key with its state and times; never a private key.
         */
        get: operations["listSigningKeys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/signing-keys/{kid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a signing key
         * @description The key with its state and times; never its private part.
         */
        get: operations["getSigningKey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/signing-keys/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate: add a signing key that signs 10 minutes from now
         * @description The new key (of the configured algorithm, IAM_TOKEN_ALG) is published in the JWKS at once and starts signing at `activates_at`, 10 minutes later, so every instance and every verifier caching the JWKS has it before a token carries its kid (the first key of an empty store signs at once). The key signing now keeps signing until then, and stays published until every token it signed has expired. Recorded as `signing_key.rotated`. Signing keys serve every application, so a key restricted to some applications gets 403. Takes no body.
         */
        post: operations["rotateSigningKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/signing-keys/{kid}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke a leaked signing key: it leaves the JWKS at once
         * @description Tokens the key signed stop verifying as soon as verifiers refetch the JWKS (they do on the first token with an unknown kid). When the key is the one signing, a new key that signs at once is stored first. Revoking a revoked key changes nothing. Signing keys serve every application, so a key restricted to some applications gets 403.
         */
        post: operations["revokeSigningKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List webhooks
         * @description A restricted key sees only webhooks confined to its applications.
         */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Create a webhook
         * @description Events that occur from now on and match `event_types` (and `client_ids`) are POSTed to `url`, signed per the Standard Webhooks specification with the secret in `secret` — in this response only.
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a webhook (never its secret) */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /** Delete a webhook and its delivery log */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        /** Change some members of a webhook (JSON Merge Patch) */
        patch: operations["patchWebhook"];
        trace?: never;
    };
    "/iam/api/v1/webhooks/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Give a webhook a new signing secret; the old one signs too for 24 hours
         * @description The new secret is in `secret`, in this response only. Until `previous_secret_expires_at` every delivery carries two signatures (`v1,<new> v1,<old>`), so receivers can switch at their own pace.
         */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/webhooks/{id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Deliver again every matching event after a given one
         * @description Delivery restarts after `after` (null: from the oldest event kept), in order; a delivery waiting for its next attempt is dropped. Answers at once; deliveries follow.
         */
        post: operations["replayWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A webhook's delivery log, newest event first
         * @description One entry per event attempted: its status (`pending` waits for `next_attempt_at`), the number of attempts and the latest attempts with the status code each got.
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/iam/api/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read the audit trail: every change, in commit order
         * @description Ascending by id. Page on with `after` (the `next_after` of the previous page); with `wait`, an empty answer waits up to that many seconds for a matching event (a change feed). A restricted API key sees only the events of its applications.
         */
        get: operations["listEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/authzen-configuration": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** AuthZEN Policy Decision Point metadata: where each endpoint is */
        get: operations["getAuthzenConfiguration"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/access/v1/evaluation": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** May this user take this action on this resource? (AuthZEN Access Evaluation) */
        post: operations["evaluateAccess"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/access/v1/evaluations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Many questions in one request (AuthZEN Access Evaluations) */
        post: operations["evaluateAccessBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/access/v1/search/subject": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The users this action on this resource is allowed to (AuthZEN Subject Search) */
        post: operations["searchSubjects"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/access/v1/search/resource": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The resources this user may take this action on: of type `user`, the application's users (AuthZEN Resource Search) */
        post: operations["searchResources"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/access/v1/search/action": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The actions this user may take on this resource (AuthZEN Action Search) */
        post: operations["searchActions"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/ServiceProviderConfig": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** What this SCIM service supports */
        get: operations["getScimServiceProviderConfig"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/ResourceTypes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The resource types (User, Group) */
        get: operations["listScimResourceTypes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Schemas": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The schemas of User and Group */
        get: operations["listScimSchemas"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/ResourceTypes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A resource type by its name (User, Group) */
        get: operations["getScimResourceType"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Schemas/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A schema by its URN */
        get: operations["getScimSchema"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List or filter users (index or cursor paging) */
        get: operations["listScimUsers"];
        put?: never;
        /** Provision a user */
        post: operations["createScimUser"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Users/.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** List or filter users, the query in the body (RFC 7644 §3.4.3) */
        post: operations["searchScimUsers"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Search Users, then Groups (RFC 7644 §3.4.3; index paging) */
        post: operations["searchScim"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Users/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a user */
        get: operations["getScimUser"];
        /** Replace a user (active left out keeps its value) */
        put: operations["replaceScimUser"];
        post?: never;
        /** Delete a user */
        delete: operations["deleteScimUser"];
        options?: never;
        head?: never;
        /** Change a user (PatchOp) */
        patch: operations["patchScimUser"];
        trace?: never;
    };
    "/scim/v2/{client_id}/Groups": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List or filter groups (roles) */
        get: operations["listScimGroups"];
        put?: never;
        /** Create a group (a role); members get the role */
        post: operations["createScimGroup"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Groups/.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** List or filter groups, the query in the body (RFC 7644 §3.4.3) */
        post: operations["searchScimGroups"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/scim/v2/{client_id}/Groups/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a group */
        get: operations["getScimGroup"];
        /** Replace a group: its name and every member */
        put: operations["replaceScimGroup"];
        post?: never;
        /** Delete a group: its members lose the role */
        delete: operations["deleteScimGroup"];
        options?: never;
        head?: never;
        /**
         * Change a group (PatchOp): rename it, add or remove members
         * @description Answers 204 (with ETag), or 200 with the group when attributes or excludedAttributes is given.
         */
        patch: operations["patchScimGroup"];
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        AccessToken: {
            /** @description A signed JWT (RFC 9068 `at+jwt`). */
            access_token: string;
            /** @enum {string} */
            token_type: "Bearer";
            /** @description Seconds: 60 × jwt_expiration_in_minutes. */
            expires_in: number;
        };
        /** @description A key that authorises calls to this API; its secret is never shown again. */
        ApiKey: {
            id: $Read<string>;
            name: string;
            roles: string[];
            applications: string[] | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            expires_at: string | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            last_used_at: $Read<string | null>;
            /**
             * Format: date-time
             * @description Until when the secret replaced by the last rotation still works, or null.
             */
            previous_expires_at: $Read<string | null>;
            /**
             * Format: date-time
             * @description When the key was revoked (it never works again), or null.
             */
            revoked_at: $Read<string | null>;
        };
        ApiKeyCreate: {
            /** @description What the key is for; stored trimmed. */
            name: string;
            /** @description A subset of the calling key's roles. */
            roles: ("applications:read" | "applications:write" | "users:read" | "users:write" | "keys:read" | "keys:write" | "tokens:write" | "events:read" | "webhooks:read" | "webhooks:write" | "decisions:read")[];
            /** @description Restrict the key to these applications; null: all (only for unrestricted callers). */
            applications?: string[] | null;
            /**
             * Format: date-time
             * @description RFC 3339; in the future. Null: never (only for callers that never expire).
             */
            expires_at?: string | null;
        };
        ApiKeyPage: {
            items: components["schemas"]["ApiKey"][];
            /** @description Pass as `cursor` for the next page. */
            next_cursor: string | null;
            /** @description With `include_total=true`. */
            total?: number;
        };
        ApiKeyRotate: {
            /**
             * @description How long the current secret keeps working beside the new one: 0–604800 (7 days), default 86400.
             * @default 86400
             */
            previous_valid_for_seconds?: number;
        };
        ApiKeyWithSecret: {
            id: $Read<string>;
            name: string;
            roles: string[];
            applications: string[] | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            expires_at: string | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            last_used_at: $Read<string | null>;
            /**
             * Format: date-time
             * @description Until when the secret replaced by the last rotation still works, or null.
             */
            previous_expires_at: $Read<string | null>;
            /**
             * Format: date-time
             * @description When the key was revoked (it never works again), or null.
             */
            revoked_at: $Read<string | null>;
            /** @description The secret, `tsr_` + 256 random bits. Shown only in this response. */
            key: $Read<string>;
        };
        /** @description A client system registered with Tessera; its users belong to it. */
        Application: {
            /**
             * @description Unique, case-sensitive application id; URL-safe.
             * @example billing-web
             */
            client_id: string;
            display_name: string;
            description: string;
            /**
             * @description `internal`: users are enrolled beforehand; `external`: registered on first login.
             * @enum {string}
             */
            mode: "internal" | "external";
            /** @description Access-token lifetime in minutes (at most 30 days). */
            jwt_expiration_in_minutes: number;
            /** @description How to validate ID tokens issued outside Tessera, keyed by provider label. Any JSON object of at most 32 KiB serialized, stored and returned as given. */
            external_token_validation: {
                [key: string]: unknown;
            } | null;
            /**
             * @description The provider label of the users a SCIM client provisions at /scim/v2/<client_id>; null (the default) turns SCIM off.
             * @example google_oauth2
             */
            scim_provider: string | null;
            /**
             * @description Who may take which action, for authorization decisions (/access/v1/evaluation): `roles` may take an action on any resource, `owner_roles` only where `resource.properties[owner.resource_property]` equals the user's `owner.user_attribute`. An action not listed is denied. null (the default): an action named like a role the user holds is allowed. At most 32 KiB serialized.
             * @example {
             *       "actions": {
             *         "can_read_todos": {
             *           "roles": [
             *             "viewer",
             *             "editor",
             *             "admin",
             *             "evil_genius"
             *           ]
             *         },
             *         "can_update_todo": {
             *           "roles": [
             *             "evil_genius"
             *           ],
             *           "owner_roles": [
             *             "editor"
             *           ],
             *           "owner": {
             *             "resource_property": "ownerID",
             *             "user_attribute": "email"
             *           }
             *         }
             *       }
             *     }
             */
            authorization: {
                /** @description Action names (AuthZEN `action.name`) → who may take them; at most 256. */
                actions: {
                    [key: string]: {
                        /** @description Holders of any of these roles may take the action on any resource. */
                        roles?: string[];
                        /** @description Holders of any of these roles may take the action on a resource they own (see owner). */
                        owner_roles?: string[];
                        /** @description How ownership is decided: a resource property equal to a user attribute. */
                        owner?: {
                            /**
                             * @description The member of `resource.properties` that names the owner.
                             * @example ownerID
                             */
                            resource_property: string;
                            /**
                             * @description The member of the user it must equal (e-mail compared ignoring case).
                             * @enum {string}
                             */
                            user_attribute: "email" | "id" | "identifier";
                        };
                    };
                };
            } | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: $Read<string>;
        };
        ApplicationCreate: {
            /**
             * @description Unique, case-sensitive application id; URL-safe.
             * @example billing-web
             */
            client_id: string;
            /** @description Stored trimmed. */
            display_name: string;
            description: string;
            /**
             * @description `internal`: users are enrolled beforehand; `external`: registered on first login.
             * @enum {string}
             */
            mode?: "internal" | "external";
            /** @description Access-token lifetime in minutes (at most 30 days). */
            jwt_expiration_in_minutes?: number;
            /** @description How to validate ID tokens issued outside Tessera, keyed by provider label. Any JSON object of at most 32 KiB serialized, stored and returned as given. */
            external_token_validation?: {
                [key: string]: unknown;
            } | null;
            /**
             * @description The provider label of the users a SCIM client provisions at /scim/v2/<client_id>; null (the default) turns SCIM off.
             * @example google_oauth2
             */
            scim_provider?: string | null;
            /**
             * @description Who may take which action, for authorization decisions (/access/v1/evaluation): `roles` may take an action on any resource, `owner_roles` only where `resource.properties[owner.resource_property]` equals the user's `owner.user_attribute`. An action not listed is denied. null (the default): an action named like a role the user holds is allowed. At most 32 KiB serialized.
             * @example {
             *       "actions": {
             *         "can_read_todos": {
             *           "roles": [
             *             "viewer",
             *             "editor",
             *             "admin",
             *             "evil_genius"
             *           ]
             *         },
             *         "can_update_todo": {
             *           "roles": [
             *             "evil_genius"
             *           ],
             *           "owner_roles": [
             *             "editor"
             *           ],
             *           "owner": {
             *             "resource_property": "ownerID",
             *             "user_attribute": "email"
             *           }
             *         }
             *       }
             *     }
             */
            authorization?: {
                /** @description Action names (AuthZEN `action.name`) → who may take them; at most 256. */
                actions: {
                    [key: string]: {
                        /** @description Holders of any of these roles may take the action on any resource. */
                        roles?: string[];
                        /** @description Holders of any of these roles may take the action on a resource they own (see owner). */
                        owner_roles?: string[];
                        /** @description How ownership is decided: a resource property equal to a user attribute. */
                        owner?: {
                            /**
                             * @description The member of `resource.properties` that names the owner.
                             * @example ownerID
                             */
                            resource_property: string;
                            /**
                             * @description The member of the user it must equal (e-mail compared ignoring case).
                             * @enum {string}
                             */
                            user_attribute: "email" | "id" | "identifier";
                        };
                    };
                };
            } | null;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        ApplicationPage: {
            items: components["schemas"]["Application"][];
            /** @description Pass as `cursor` for the next page. */
            next_cursor: string | null;
            /** @description With `include_total=true`. */
            total?: number;
        };
        /** @description JSON Merge Patch (RFC 7396): `null` resets mode, jwt_expiration_in_minutes, external_token_validation, scim_provider and authorization to their defaults; members without a default cannot be null. */
        ApplicationPatch: {
            /** @description If present, must equal the path. */
            client_id?: string;
            /** @description Stored trimmed. */
            display_name?: string;
            description?: string;
            /**
             * @description `internal`: users are enrolled beforehand; `external`: registered on first login.
             * @enum {string|null}
             */
            mode?: "internal" | "external" | null;
            /** @description Access-token lifetime in minutes (at most 30 days). */
            jwt_expiration_in_minutes?: number | null;
            /** @description How to validate ID tokens issued outside Tessera, keyed by provider label. Any JSON object of at most 32 KiB serialized, stored and returned as given. */
            external_token_validation?: {
                [key: string]: unknown;
            } | null;
            /**
             * @description The provider label of the users a SCIM client provisions at /scim/v2/<client_id>; null (the default) turns SCIM off.
             * @example google_oauth2
             */
            scim_provider?: string | null;
            /** @description Merged into the current authorization (RFC 7396: `null` removes a member); the result must be a valid authorization. */
            authorization?: {
                [key: string]: unknown;
            } | null;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        ApplicationReplace: {
            /** @description If present, must equal the path. */
            client_id?: string;
            /** @description Stored trimmed. */
            display_name: string;
            description: string;
            /**
             * @description `internal`: users are enrolled beforehand; `external`: registered on first login.
             * @enum {string}
             */
            mode?: "internal" | "external";
            /** @description Access-token lifetime in minutes (at most 30 days). */
            jwt_expiration_in_minutes?: number;
            /** @description How to validate ID tokens issued outside Tessera, keyed by provider label. Any JSON object of at most 32 KiB serialized, stored and returned as given. */
            external_token_validation?: {
                [key: string]: unknown;
            } | null;
            /**
             * @description The provider label of the users a SCIM client provisions at /scim/v2/<client_id>; null (the default) turns SCIM off.
             * @example google_oauth2
             */
            scim_provider?: string | null;
            /**
             * @description Who may take which action, for authorization decisions (/access/v1/evaluation): `roles` may take an action on any resource, `owner_roles` only where `resource.properties[owner.resource_property]` equals the user's `owner.user_attribute`. An action not listed is denied. null (the default): an action named like a role the user holds is allowed. At most 32 KiB serialized.
             * @example {
             *       "actions": {
             *         "can_read_todos": {
             *           "roles": [
             *             "viewer",
             *             "editor",
             *             "admin",
             *             "evil_genius"
             *           ]
             *         },
             *         "can_update_todo": {
             *           "roles": [
             *             "evil_genius"
             *           ],
             *           "owner_roles": [
             *             "editor"
             *           ],
             *           "owner": {
             *             "resource_property": "ownerID",
             *             "user_attribute": "email"
             *           }
             *         }
             *       }
             *     }
             */
            authorization?: {
                /** @description Action names (AuthZEN `action.name`) → who may take them; at most 256. */
                actions: {
                    [key: string]: {
                        /** @description Holders of any of these roles may take the action on any resource. */
                        roles?: string[];
                        /** @description Holders of any of these roles may take the action on a resource they own (see owner). */
                        owner_roles?: string[];
                        /** @description How ownership is decided: a resource property equal to a user attribute. */
                        owner?: {
                            /**
                             * @description The member of `resource.properties` that names the owner.
                             * @example ownerID
                             */
                            resource_property: string;
                            /**
                             * @description The member of the user it must equal (e-mail compared ignoring case).
                             * @enum {string}
                             */
                            user_attribute: "email" | "id" | "identifier";
                        };
                    };
                };
            } | null;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        /**
         * @example {
         *       "name": "can_update_todo"
         *     }
         */
        AuthzenAction: {
            /** @description The action, as the application's `authorization` names it. */
            name: string;
            /** @description More attributes of the action (not used). */
            properties?: {
                [key: string]: unknown;
            };
        };
        AuthzenActionSearchRequest: {
            subject: components["schemas"]["AuthzenSubject"];
            resource: components["schemas"]["AuthzenResource"];
            context?: components["schemas"]["AuthzenContext"];
            /** @description Paging. A request with a token must repeat the first request exactly (entities and limit). */
            page?: {
                /** @description The `next_token` of the previous page; opaque. */
                token?: string;
                /** @description At most this many results (default 100, at most 1000; 0: none, a count). */
                limit?: number;
            };
        };
        AuthzenActionSearchResponse: {
            page: {
                /** @description Send as `page.token` for the next page; the empty string: this is the last. */
                next_token: string;
                /** @description How many results this page holds. */
                count: number;
            };
            results: {
                name: string;
            }[];
        };
        /** @description The environment of the request; Tessera reads `client_id`. */
        AuthzenContext: {
            /**
             * @description The application the question is about. May be left out when the API key is restricted to exactly one application.
             * @example billing-web
             */
            client_id?: string;
        } & {
            [key: string]: unknown;
        };
        AuthzenDecision: {
            /** @description true: allowed; false: denied. */
            decision: boolean;
        };
        AuthzenEntitySearchResponse: {
            page: {
                /** @description Send as `page.token` for the next page; the empty string: this is the last. */
                next_token: string;
                /** @description How many results this page holds. */
                count: number;
            };
            results: {
                type: string;
                id: string;
            }[];
        };
        AuthzenEvaluationRequest: {
            subject: components["schemas"]["AuthzenSubject"];
            action: components["schemas"]["AuthzenAction"];
            resource: components["schemas"]["AuthzenResource"];
            context?: components["schemas"]["AuthzenContext"];
        };
        AuthzenEvaluationsRequest: {
            subject?: components["schemas"]["AuthzenSubject"];
            action?: components["schemas"]["AuthzenAction"];
            resource?: components["schemas"]["AuthzenResource"];
            context?: components["schemas"]["AuthzenContext"];
            /** @description The questions, answered in this order. A member an item leaves out is taken from the top level (a context given in an item replaces the top-level one). */
            evaluations?: {
                subject?: components["schemas"]["AuthzenSubject"];
                action?: components["schemas"]["AuthzenAction"];
                resource?: components["schemas"]["AuthzenResource"];
                context?: components["schemas"]["AuthzenContext"];
            }[];
            options?: {
                /**
                 * @description `execute_all` (the default): every decision; `deny_on_first_deny`: up to and including the first deny; `permit_on_first_permit`: up to and including the first permit.
                 * @enum {string}
                 */
                evaluations_semantic?: "execute_all" | "deny_on_first_deny" | "permit_on_first_permit";
            };
        };
        /** @description The decisions in the order of the request's `evaluations`; a request without `evaluations` is answered as a single evaluation. */
        AuthzenEvaluationsResponse: {
            /** @description Only when the request held no `evaluations`. */
            decision?: boolean;
            evaluations?: components["schemas"]["AuthzenDecision"][];
        };
        AuthzenPdpMetadata: {
            /** @description This Tessera (IAM_ISSUER). */
            policy_decision_point: string;
            access_evaluation_endpoint: string;
            access_evaluations_endpoint: string;
            search_subject_endpoint: string;
            search_resource_endpoint: string;
            search_action_endpoint: string;
        };
        /**
         * @description What the action is taken on. An action open to owners compares a member of `properties` with the user (the application's `authorization`).
         * @example {
         *       "type": "todo",
         *       "id": "7240d0db",
         *       "properties": {
         *         "ownerID": "morty@example.com"
         *       }
         *     }
         */
        AuthzenResource: {
            /** @description The type of the resource. */
            type: string;
            /** @description The resource's id, scoped to its type. */
            id: string;
            /** @description More attributes of the resource. */
            properties?: {
                [key: string]: unknown;
            };
        };
        AuthzenResourceSearchRequest: {
            subject: components["schemas"]["AuthzenSubject"];
            action: components["schemas"]["AuthzenAction"];
            resource: {
                /** @description The type of the resource. */
                type: string;
                /** @description Ignored: this search lists the resources. */
                id?: string;
                /** @description More attributes of the resource. */
                properties?: {
                    [key: string]: unknown;
                };
            };
            context?: components["schemas"]["AuthzenContext"];
            /** @description Paging. A request with a token must repeat the first request exactly (entities and limit). */
            page?: {
                /** @description The `next_token` of the previous page; opaque. */
                token?: string;
                /** @description At most this many results (default 100, at most 1000; 0: none, a count). */
                limit?: number;
            };
        };
        /**
         * @description A user of the application: `type` `user`, `id` `<provider>:<identifier>` or the user's id. A subject of another type, or no such user, is denied.
         * @example {
         *       "type": "user",
         *       "id": "google_oauth2:108234823498234"
         *     }
         */
        AuthzenSubject: {
            /** @description The type of the subject. */
            type: string;
            /** @description The subject's id, scoped to its type. */
            id: string;
            /** @description More attributes of the subject. */
            properties?: {
                [key: string]: unknown;
            };
        };
        AuthzenSubjectSearchRequest: {
            subject: {
                /** @description The type of the subject. */
                type: string;
                /** @description Ignored: this search lists the subjects. */
                id?: string;
                /** @description More attributes of the subject. */
                properties?: {
                    [key: string]: unknown;
                };
            };
            action: components["schemas"]["AuthzenAction"];
            resource: components["schemas"]["AuthzenResource"];
            context?: components["schemas"]["AuthzenContext"];
            /** @description Paging. A request with a token must repeat the first request exactly (entities and limit). */
            page?: {
                /** @description The `next_token` of the previous page; opaque. */
                token?: string;
                /** @description At most this many results (default 100, at most 1000; 0: none, a count). */
                limit?: number;
            };
        };
        Event: {
            /** @description Sorts in commit order; pass as `after` to read on. */
            id: string;
            /** @example user.updated */
            type: string;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            occurred_at: string;
            actor: {
                /** @enum {string} */
                type: "api_key" | "operator" | "token_exchange" | "scim" | "cli" | "system" | "import";
                /** @description The API key id (api_key, scim), or null. */
                id: string | null;
            };
            client_id: string | null;
            resource: {
                /** @enum {string} */
                type: "application" | "user" | "api_key" | "signing_key" | "webhook" | "secret_key" | "cluster_setting";
                /** @description Its identifying members. */
                id: {
                    [key: string]: unknown;
                };
            };
            changes: {
                member: string;
                before: unknown;
                after: unknown;
            }[] | null;
            request_id: string | null;
        };
        EventPage: {
            items: components["schemas"]["Event"][];
            /** @description The id of the last event listed (or the `after` given, when none was): pass it as `after` to read on. */
            next_after: string | null;
        };
        /** @description One line of an export: a user resource with its SCIM externalId. */
        ExportedUser: {
            /**
             * @description Read-only: the user's immutable id, kept when its identifier is renamed (SCIM).
             * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
             */
            id: $Read<string>;
            /**
             * @description The user's id at the provider; percent-encode it in paths.
             * @example 108234823498234
             * @example CN=Ada Lovelace,OU=R&D,O=Example
             */
            identifier: string;
            /**
             * @description Identity-provider label, `<idp>_<kind>`.
             * @example google_oauth2
             */
            provider: string;
            name: string;
            avatar: string | null;
            email: string;
            locale: string;
            roles: string[];
            scopes: string[];
            /** @description Inactive users are kept and listed but get no access tokens. Default true; a PUT that leaves it out keeps the stored value. */
            active: boolean;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: $Read<string>;
            /** @description SCIM's externalId, or null. */
            external_id: string | null;
        };
        ExternalTokenValidationReport: {
            /** @description True when an exchange of this token would succeed now. */
            valid: boolean;
            /**
             * @description The first check that failed.
             * @enum {string|null}
             */
            failed_check: "format" | "issuer" | "entry" | "algorithm" | "jwks_uri" | "jwks" | "key" | "signature" | "audience" | "expiry" | "not_before" | "issued_at" | "claims" | "identifier" | "user" | "email" | null;
            /** @description What failed and why, or what an exchange would do. */
            detail: string;
            /** @description True when the provider's keys could not be fetched. */
            retryable: boolean;
            header: {
                [key: string]: unknown;
            } | null;
            claims: {
                [key: string]: unknown;
            } | null;
            /** @description The matched entry of external_token_validation. */
            provider: string | null;
            entry: {
                [key: string]: unknown;
            } | null;
            user: {
                provider: string;
                identifier: string;
            } | null;
            user_exists: boolean | null;
            /** @description What first login would register (external mode). */
            new_user: {
                name: string;
                email: string;
                locale: string;
                avatar: string | null;
            } | null;
        };
        ExternalTokenValidationRequest: {
            /** @description An outside ID token. */
            token: string;
        };
        HealthStatus: {
            status: string;
        };
        ImportError: {
            /** @description The line (from 1; for a JSON document, the user in `users`). */
            line: number;
            /** @description JSON Pointer into the line; "" for the whole line. */
            pointer: string;
            detail: string;
        };
        ImportErrorPage: {
            items: components["schemas"]["ImportError"][];
            /** @description Pass as `cursor` for the next page. */
            next_cursor: string | null;
            /** @description With `include_total=true`. */
            total?: number;
        };
        /** @description A bulk import of users, running or done. */
        ImportJob: {
            id: string;
            client_id: string;
            /** @enum {string} */
            status: "running" | "succeeded" | "failed" | "cancelled";
            /**
             * @description `tessera`: lines of a Tessera export (or user resources); `auth0`: an Auth0 user export (NDJSON); `keycloak`: the users of a Keycloak realm export (a JSON document with `users`, or one user representation a line).
             * @enum {string}
             */
            format: "tessera" | "auth0" | "keycloak";
            dry_run: boolean;
            /** @enum {string} */
            on_conflict: "update" | "skip" | "fail";
            counts: {
                /** @description Lines (or users of a document) read so far. */
                read: number;
                created: number;
                updated: number;
                /** @description Lines equal to the stored user: nothing written. */
                unchanged: number;
                /** @description Lines of existing, differing users under on_conflict=skip. */
                skipped: number;
                /** @description Lines refused; each has its errors under /errors. */
                invalid: number;
            };
            /** @description Lines read per second, start to end (or now). */
            lines_per_second: number;
            elapsed_seconds: number;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            started_at: string;
            /**
             * Format: date-time
             * @description When the job last recorded progress.
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            finished_at: string | null;
            /** @description Why a failed job failed. */
            failure: string | null;
            /** @description Path of the list of its error lines. */
            errors: string;
        };
        InvalidParam: {
            /** @description JSON Pointer into the request body */
            pointer?: string;
            /** @description Query or path parameter */
            parameter?: string;
            header?: string;
            detail: string;
        };
        Jwks: {
            keys: ({
                kty: string;
                kid: string;
                alg: string;
                /** @enum {string} */
                use: "sig";
            } & {
                [key: string]: unknown;
            })[];
        };
        /** @description RFC 6749 §5.2 error response */
        OAuthError: {
            /** @enum {string} */
            error: "invalid_request" | "invalid_client" | "invalid_grant" | "unsupported_grant_type" | "temporarily_unavailable" | "server_error";
            error_description: string;
        };
        OpenIdConfiguration: {
            issuer: string;
            jwks_uri: string;
            token_endpoint: string;
            /** @description Empty: Tessera has no authorization endpoint. */
            response_types_supported: string[];
            subject_types_supported: string[];
            grant_types_supported: string[];
            token_endpoint_auth_methods_supported: string[];
            subject_token_types_supported: string[];
            access_token_signing_alg_values_supported: string[];
        };
        /** @description RFC 9457 problem details */
        Problem: {
            /** @description URI identifying the kind of problem */
            type: string;
            title: string;
            status: number;
            detail: string;
            /** @description The request path (absent only if the request was unreadable) */
            instance?: string;
            errors?: components["schemas"]["InvalidParam"][];
        };
        ScimError: {
            schemas: "urn:ietf:params:scim:api:messages:2.0:Error"[];
            /** @description The HTTP status, as a string. */
            status: string;
            scimType?: string;
            detail: string;
        };
        /** @description A SCIM PatchOp message (RFC 7644 §3.5.2) for a Group. */
        ScimGroupPatchOp: {
            [key: string]: unknown;
        };
        /** @description A SCIM Group (RFC 7643 §4.2): its displayName is a role name. */
        ScimGroupRequest: {
            [key: string]: unknown;
        };
        /** @description A SCIM resource or message (RFC 7643, RFC 7644). */
        ScimResource: {
            schemas: string[];
            id?: string;
        } & {
            [key: string]: unknown;
        };
        /** @description A SCIM SearchRequest (RFC 7644 §3.4.3): a list query in a body. */
        ScimSearchRequest: {
            /** @description ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"] */
            schemas?: string[];
            attributes?: string[] | string;
            excludedAttributes?: string[] | string;
            /**
             * @description RFC 7644 §3.4.2.2.
             * @example displayName pr
             */
            filter?: string;
            /**
             * @description 1-based index paging; below 1 counts as 1.
             * @example 1
             */
            startIndex?: number;
            /**
             * @description Page size; 0–1000 (larger asks get 1000).
             * @example 10
             */
            count?: number;
            /** @description RFC 9865: empty for the first page, then nextCursor. */
            cursor?: string;
            /** @description Not supported (400). */
            sortBy?: string;
            /** @description Not supported (400). */
            sortOrder?: string;
        };
        /** @description A SCIM PatchOp message (RFC 7644 §3.5.2) for a User. */
        ScimUserPatchOp: {
            [key: string]: unknown;
        };
        /** @description A SCIM User (RFC 7643 §4.1). */
        ScimUserRequest: {
            [key: string]: unknown;
        };
        SigningKey: {
            kid: string;
            /** @enum {string} */
            alg: "ES256" | "EdDSA" | "RS256";
            /**
             * @description pending: published, signs later; active: signs now; retired: published for the tokens it signed; unpublished: no longer needed; revoked: removed from the JWKS in an emergency.
             * @enum {string}
             */
            state: "pending" | "active" | "retired" | "unpublished" | "revoked";
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            activates_at: string;
            /**
             * Format: date-time
             * @description When a newer key took over, or null.
             */
            retired_at: string | null;
            /**
             * Format: date-time
             * @description Until when a retired key stays in the JWKS, or null.
             */
            published_until: string | null;
            /**
             * Format: date-time
             * @description When it was revoked, or null.
             */
            revoked_at: string | null;
        };
        SigningKeyList: {
            items: components["schemas"]["SigningKey"][];
        };
        SigningKeyRevocation: {
            revoked: components["schemas"]["SigningKey"];
            /** @description The key that signs now (a new one when the revoked key was signing). */
            active: components["schemas"]["SigningKey"];
        };
        TokenExchangeRequest: {
            /** @description `urn:ietf:params:oauth:grant-type:token-exchange` */
            grant_type?: string;
            /** @description The application. */
            client_id?: string;
            /** @description An ID token from a provider the application trusts. */
            subject_token?: string;
            /** @description `urn:ietf:params:oauth:token-type:id_token` */
            subject_token_type?: string;
            /** @description Optional; only `urn:ietf:params:oauth:token-type:access_token`. */
            requested_token_type?: string;
        } & {
            [key: string]: unknown;
        };
        TokenExchangeResponse: {
            access_token: string;
            /** @enum {string} */
            issued_token_type: "urn:ietf:params:oauth:token-type:access_token";
            /** @enum {string} */
            token_type: "Bearer";
            expires_in: number;
        };
        /** @description One of an application's users, identified by (provider, identifier). */
        User: {
            /**
             * @description Read-only: the user's immutable id, kept when its identifier is renamed (SCIM).
             * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
             */
            id: $Read<string>;
            /**
             * @description The user's id at the provider; percent-encode it in paths.
             * @example 108234823498234
             * @example CN=Ada Lovelace,OU=R&D,O=Example
             */
            identifier: string;
            /**
             * @description Identity-provider label, `<idp>_<kind>`.
             * @example google_oauth2
             */
            provider: string;
            name: string;
            avatar: string | null;
            email: string;
            locale: string;
            roles: string[];
            scopes: string[];
            /** @description Inactive users are kept and listed but get no access tokens. Default true; a PUT that leaves it out keeps the stored value. */
            active: boolean;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: $Read<string>;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: $Read<string>;
        };
        UserCreate: {
            /**
             * @description The user's id at the provider; percent-encode it in paths.
             * @example 108234823498234
             * @example CN=Ada Lovelace,OU=R&D,O=Example
             */
            identifier: string;
            /**
             * @description Identity-provider label, `<idp>_<kind>`.
             * @example google_oauth2
             */
            provider: string;
            /** @description Read-only; accepted and ignored. */
            id?: $Read<unknown>;
            /** @description If present, must equal the path. */
            client_id?: string;
            /** @description Full name; stored trimmed. */
            name: string;
            /** Format: uri */
            avatar?: string | null;
            /** Format: email */
            email: string;
            /** @example pt-BR */
            locale: string;
            roles: string[];
            scopes: string[];
            /** @description Inactive users are kept and listed but get no access tokens. Default true; a PUT that leaves it out keeps the stored value. */
            active?: boolean;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        UserPage: {
            items: components["schemas"]["User"][];
            /** @description Pass as `cursor` for the next page. */
            next_cursor: string | null;
            /** @description With `include_total=true`. */
            total?: number;
        };
        /** @description JSON Merge Patch (RFC 7396): `null` resets avatar (to null) and active (to true) to their defaults; members without a default cannot be null. */
        UserPatch: {
            /** @description Read-only; accepted and ignored. */
            id?: $Read<unknown>;
            /** @description If present, must equal the path. */
            identifier?: string;
            /** @description If present, must equal the path. */
            provider?: string;
            /** @description If present, must equal the path. */
            client_id?: string;
            /** @description Full name; stored trimmed. */
            name?: string;
            /** Format: uri */
            avatar?: string | null;
            /** Format: email */
            email?: string;
            /** @example pt-BR */
            locale?: string;
            roles?: string[];
            scopes?: string[];
            /** @description Inactive users are kept and listed but get no access tokens. Default true; a PUT that leaves it out keeps the stored value. */
            active?: boolean | null;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        UserReplace: {
            /** @description If present, must equal the path. */
            identifier?: string;
            /** @description If present, must equal the path. */
            provider?: string;
            /** @description Read-only; accepted and ignored. */
            id?: $Read<unknown>;
            /** @description If present, must equal the path. */
            client_id?: string;
            /** @description Full name; stored trimmed. */
            name: string;
            /** Format: uri */
            avatar?: string | null;
            /** Format: email */
            email: string;
            /** @example pt-BR */
            locale: string;
            roles: string[];
            scopes: string[];
            /** @description Inactive users are kept and listed but get no access tokens. Default true; a PUT that leaves it out keeps the stored value. */
            active?: boolean;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        Webhook: {
            id: string;
            url: string;
            event_types: string[];
            client_ids: string[] | null;
            description: string;
            enabled: boolean;
            /** @description `gone` when Tessera disabled the webhook because its receiver answered 410. */
            disabled_reason: string | null;
            /**
             * Format: date-time
             * @description Until when the secret replaced by the last rotation still signs, or null.
             */
            previous_secret_expires_at: string | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
        };
        WebhookCreate: {
            /**
             * Format: uri
             * @description Where events are POSTed: https:, on a public address (http: and private addresses only with IAM_ALLOW_INSECURE_WEBHOOKS=true).
             * @example https://hooks.example.com/tessera
             */
            url: string;
            /** @description The event types delivered: exact types, `<family>.*`, or `*` for all. */
            event_types: string[];
            /** @description Only events of these applications; null: every event (including those of no application, such as API keys). A restricted API key must name some of its own. */
            client_ids?: string[] | null;
            description?: string;
            /** @default true */
            enabled?: boolean;
        };
        WebhookDelivery: {
            event_id: string;
            event_type: string;
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            attempts: number;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            first_attempt_at: string;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            last_attempt_at: string;
            /** Format: date-time */
            next_attempt_at: string | null;
            last_status_code: number | null;
            /** @description The latest attempts, oldest first. */
            log: {
                /**
                 * Format: date-time
                 * @description RFC 3339, UTC, millisecond precision
                 * @example 2026-11-21T09:30:00.000Z
                 */
                at: string;
                /** @description The answer, or null when none came. */
                status_code: number | null;
                error: string | null;
                duration_ms: number;
            }[];
        };
        WebhookDeliveryPage: {
            items: components["schemas"]["WebhookDelivery"][];
            /** @description Pass as `cursor` for the next page. */
            next_cursor: string | null;
            /** @description With `include_total=true`. */
            total?: number;
        };
        WebhookPage: {
            items: components["schemas"]["Webhook"][];
            /** @description Pass as `cursor` for the next page. */
            next_cursor: string | null;
            /** @description With `include_total=true`. */
            total?: number;
        };
        /** @description JSON Merge Patch (RFC 7396): `null` resets client_ids (every application), description ('') and enabled (true). Enabling a webhook that its receiver disabled (410) resumes delivery with the event that was refused. */
        WebhookPatch: {
            /**
             * Format: uri
             * @description Where events are POSTed: https:, on a public address (http: and private addresses only with IAM_ALLOW_INSECURE_WEBHOOKS=true).
             * @example https://hooks.example.com/tessera
             */
            url?: string;
            /** @description The event types delivered: exact types, `<family>.*`, or `*` for all. */
            event_types?: string[];
            /** @description Only events of these applications; null: every event (including those of no application, such as API keys). A restricted API key must name some of its own. */
            client_ids?: string[] | null;
            description?: string | null;
            enabled?: boolean | null;
            /** @description Read-only; accepted and ignored. */
            id?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            disabled_reason?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            previous_secret_expires_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            created_at?: $Read<unknown>;
            /** @description Read-only; accepted and ignored. */
            updated_at?: $Read<unknown>;
        };
        WebhookReplay: {
            /** @description Deliver again every matching event after this one; null: from the oldest kept. */
            after: string | null;
        };
        WebhookReplayResult: {
            webhook_id: string;
            after: string | null;
        };
        WebhookWithSecret: {
            id: string;
            url: string;
            event_types: string[];
            client_ids: string[] | null;
            description: string;
            enabled: boolean;
            /** @description `gone` when Tessera disabled the webhook because its receiver answered 410. */
            disabled_reason: string | null;
            /**
             * Format: date-time
             * @description Until when the secret replaced by the last rotation still signs, or null.
             */
            previous_secret_expires_at: string | null;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            created_at: string;
            /**
             * Format: date-time
             * @description RFC 3339, UTC, millisecond precision
             * @example 2026-11-21T09:30:00.000Z
             */
            updated_at: string;
            /** @description The signing secret, `whsec_` + 256 random bits in base64 (Standard Webhooks). Shown only in this response. */
            secret: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getLiveness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthStatus"];
                };
            };
            /** @description The request cannot be read (two Authorization headers; HTTP/1.1 without Host) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthStatus"];
                };
            };
            /** @description The request cannot be read (two Authorization headers; HTTP/1.1 without Host) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not ready: the store does not answer (Retry-After) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text exposition format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description The request cannot be read (two Authorization headers; HTTP/1.1 without Host) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getJwks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description JSON Web Key Set */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Jwks"];
                };
            };
            /** @description The request cannot be read (two Authorization headers; HTTP/1.1 without Host) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getOpenIdConfiguration: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Server metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OpenIdConfiguration"];
                };
            };
            /** @description The request cannot be read (two Authorization headers; HTTP/1.1 without Host) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    exchangeToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                 *       "client_id": "billing-web",
                 *       "subject_token": "eyJhbGciOiJSUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20iLCJzdWIiOiIxMDgyMzQ4MjM0OTgyMzQifQ.c2lnbmF0dXJl",
                 *       "subject_token_type": "urn:ietf:params:oauth:token-type:id_token"
                 *     }
                 */
                "application/x-www-form-urlencoded": components["schemas"]["TokenExchangeRequest"];
            };
        };
        responses: {
            /** @description The access token */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenExchangeResponse"];
                };
            };
            /** @description invalid_request, invalid_grant, unsupported_grant_type */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description invalid_client */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description temporarily_unavailable: too many refused requests from this address */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description temporarily_unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
        };
    };
    listApplications: {
        parameters: {
            query?: {
                /**
                 * @description Page size, 1–1000.
                 * @example 50
                 */
                limit?: number;
                /** @description Opaque; `next_cursor` of the previous page. */
                cursor?: string;
                /**
                 * @description Also count every matching item.
                 * @example true
                 */
                include_total?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of applications */
            200: {
                headers: {
                    /** @description `<…>; rel="next"` when there is a next page. */
                    link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApplicationPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createApplication: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "client_id": "billing-web",
                 *       "display_name": "Billing",
                 *       "description": "Invoices and payments for our customers",
                 *       "mode": "external",
                 *       "jwt_expiration_in_minutes": 60,
                 *       "external_token_validation": {
                 *         "google_oauth2": {
                 *           "issuer": "https://accounts.google.com",
                 *           "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs",
                 *           "audience": "123456789012-web.apps.googleusercontent.com",
                 *           "algorithms": [
                 *             "RS256"
                 *           ]
                 *         }
                 *       },
                 *       "scim_provider": "okta_scim",
                 *       "authorization": {
                 *         "actions": {
                 *           "can_read_invoices": {
                 *             "roles": [
                 *               "viewer",
                 *               "accountant"
                 *             ]
                 *           },
                 *           "can_refund_invoice": {
                 *             "roles": [
                 *               "accountant"
                 *             ],
                 *             "owner_roles": [
                 *               "viewer"
                 *             ],
                 *             "owner": {
                 *               "resource_property": "customer_email",
                 *               "user_attribute": "email"
                 *             }
                 *           }
                 *         }
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["ApplicationCreate"];
            };
        };
        responses: {
            /** @description The application, created */
            201: {
                headers: {
                    /** @description Path of the created resource. */
                    location?: string;
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Application"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getApplication: {
        parameters: {
            query?: never;
            header?: {
                /** @description Answer 304 if the resource still has this ETag. */
                "if-none-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The application */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Application"];
                };
            };
            /** @description Not modified: your copy is current. */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    replaceApplication: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "display_name": "Billing",
                 *       "description": "Invoices, payments and refunds",
                 *       "mode": "external",
                 *       "jwt_expiration_in_minutes": 60,
                 *       "external_token_validation": {
                 *         "google_oauth2": {
                 *           "issuer": "https://accounts.google.com",
                 *           "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs",
                 *           "audience": "123456789012-web.apps.googleusercontent.com",
                 *           "algorithms": [
                 *             "RS256"
                 *           ]
                 *         }
                 *       },
                 *       "scim_provider": "okta_scim",
                 *       "authorization": {
                 *         "actions": {
                 *           "can_read_invoices": {
                 *             "roles": [
                 *               "viewer",
                 *               "accountant"
                 *             ]
                 *           },
                 *           "can_refund_invoice": {
                 *             "roles": [
                 *               "accountant"
                 *             ],
                 *             "owner_roles": [
                 *               "viewer"
                 *             ],
                 *             "owner": {
                 *               "resource_property": "customer_email",
                 *               "user_attribute": "email"
                 *             }
                 *           }
                 *         }
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["ApplicationReplace"];
            };
        };
        responses: {
            /** @description The application, changed */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Application"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteApplication: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    patchApplication: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description JSON Merge Patch (RFC 7396): `null` resets mode, jwt_expiration_in_minutes, external_token_validation, scim_provider and authorization to their defaults; members without a default cannot be null. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "display_name": "Billing and refunds",
                 *       "jwt_expiration_in_minutes": 30
                 *     }
                 */
                "application/merge-patch+json": components["schemas"]["ApplicationPatch"];
                /**
                 * @example {
                 *       "display_name": "Billing and refunds",
                 *       "jwt_expiration_in_minutes": 30
                 *     }
                 */
                "application/json": components["schemas"]["ApplicationPatch"];
            };
        };
        responses: {
            /** @description The application, changed */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Application"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listUsers: {
        parameters: {
            query?: {
                /**
                 * @description Page size, 1–1000.
                 * @example 50
                 */
                limit?: number;
                /** @description Opaque; `next_cursor` of the previous page. */
                cursor?: string;
                /**
                 * @description Also count every matching item.
                 * @example true
                 */
                include_total?: boolean;
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider?: string;
                /**
                 * @description Exact, case-insensitive.
                 * @example ada@example.com
                 */
                email?: string;
                /** @example admin */
                role?: string;
                /** @example org:acme */
                scope?: string;
                /**
                 * @description Only active (true) or inactive users.
                 * @example true
                 */
                active?: boolean;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of users */
            200: {
                headers: {
                    /** @description `<…>; rel="next"` when there is a next page. */
                    link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "provider": "google_oauth2",
                 *       "identifier": "108234823498234",
                 *       "name": "Ada Lovelace",
                 *       "avatar": "https://example.com/avatars/ada.png",
                 *       "email": "ada@example.com",
                 *       "locale": "en-GB",
                 *       "roles": [
                 *         "admin"
                 *       ],
                 *       "scopes": [
                 *         "org:acme"
                 *       ],
                 *       "active": true
                 *     }
                 */
                "application/json": components["schemas"]["UserCreate"];
            };
        };
        responses: {
            /** @description The user, created */
            201: {
                headers: {
                    /** @description Path of the created resource. */
                    location?: string;
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getUser: {
        parameters: {
            query?: never;
            header?: {
                /** @description Answer 304 if the resource still has this ETag. */
                "if-none-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider: string;
                /** @description The user's id at the provider; percent-encode it in paths. */
                identifier: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The user */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description Not modified: your copy is current. */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    replaceUser: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider: string;
                /** @description The user's id at the provider; percent-encode it in paths. */
                identifier: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Ada Lovelace",
                 *       "avatar": "https://example.com/avatars/ada.png",
                 *       "email": "ada@example.com",
                 *       "locale": "en-GB",
                 *       "roles": [
                 *         "admin",
                 *         "billing"
                 *       ],
                 *       "scopes": [
                 *         "org:acme"
                 *       ],
                 *       "active": true
                 *     }
                 */
                "application/json": components["schemas"]["UserReplace"];
            };
        };
        responses: {
            /** @description The user, changed */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteUser: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider: string;
                /** @description The user's id at the provider; percent-encode it in paths. */
                identifier: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    patchUser: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider: string;
                /** @description The user's id at the provider; percent-encode it in paths. */
                identifier: string;
            };
            cookie?: never;
        };
        /** @description JSON Merge Patch (RFC 7396): `null` resets avatar (to null) and active (to true) to their defaults; members without a default cannot be null. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "Ada King",
                 *       "locale": "en"
                 *     }
                 */
                "application/merge-patch+json": components["schemas"]["UserPatch"];
                /**
                 * @example {
                 *       "name": "Ada King",
                 *       "locale": "en"
                 *     }
                 */
                "application/json": components["schemas"]["UserPatch"];
            };
        };
        responses: {
            /** @description The user, changed */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    importUsers: {
        parameters: {
            query?: {
                /** @description `tessera`: lines of a Tessera export (or user resources); `auth0`: an Auth0 user export (NDJSON); `keycloak`: the users of a Keycloak realm export (a JSON document with `users`, or one user representation a line). */
                format?: "tessera" | "auth0" | "keycloak";
                /** @description Check and count every line, write no user and no event. */
                dry_run?: boolean;
                /** @description What to do with a line whose user exists and differs: update it (default), skip it, or report the line as an error. A line equal to its stored user is `unchanged` whatever this says. */
                on_conflict?: "update" | "skip" | "fail";
                /**
                 * @description Source provider names to Tessera provider labels, `name:label,…`, over the defaults (`google-oauth2:google_oauth2`, …; see docs/imports.md).
                 * @example google-oauth2:google_oauth2,acme-saml:acme_saml
                 */
                provider_map?: string;
                /**
                 * @description Keycloak: the client whose `clientRoles` become roles (default: the application’s client_id).
                 * @example billing-web
                 */
                keycloak_client?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description NDJSON (one user a line, here one of a Tessera export), or a Keycloak realm export document. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "provider": "google_oauth2",
                 *       "identifier": "108234823498234",
                 *       "name": "Ada Lovelace",
                 *       "avatar": "https://example.com/avatars/ada.png",
                 *       "email": "ada@example.com",
                 *       "locale": "en-GB",
                 *       "roles": [
                 *         "admin"
                 *       ],
                 *       "scopes": [
                 *         "org:acme"
                 *       ],
                 *       "active": true
                 *     }
                 */
                "application/x-ndjson": unknown;
                /**
                 * @example {
                 *       "provider": "google_oauth2",
                 *       "identifier": "108234823498234",
                 *       "name": "Ada Lovelace",
                 *       "avatar": "https://example.com/avatars/ada.png",
                 *       "email": "ada@example.com",
                 *       "locale": "en-GB",
                 *       "roles": [
                 *         "admin"
                 *       ],
                 *       "scopes": [
                 *         "org:acme"
                 *       ],
                 *       "active": true
                 *     }
                 */
                "application/json": unknown;
            };
        };
        responses: {
            /** @description The job, started */
            202: {
                headers: {
                    /** @description Path of the created resource. */
                    location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImportJob"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getImport: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The job id, from the Location of the import.
                 * @example 8d5f9a0e-3c1b-4f7a-9e2d-6b4c1a0f7e55
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImportJob"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancelImport: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The job id, from the Location of the import.
                 * @example 8d5f9a0e-3c1b-4f7a-9e2d-6b4c1a0f7e55
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The job, cancelled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImportJob"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listImportErrors: {
        parameters: {
            query?: {
                /**
                 * @description Page size, 1–1000.
                 * @example 50
                 */
                limit?: number;
                /** @description Opaque; `next_cursor` of the previous page. */
                cursor?: string;
                /**
                 * @description Also count every matching item.
                 * @example true
                 */
                include_total?: boolean;
            };
            header?: never;
            path: {
                /**
                 * @description The job id, from the Location of the import.
                 * @example 8d5f9a0e-3c1b-4f7a-9e2d-6b4c1a0f7e55
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of error lines */
            200: {
                headers: {
                    /** @description `<…>; rel="next"` when there is a next page. */
                    link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImportErrorPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    exportUsers: {
        parameters: {
            query?: {
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider?: string;
                /**
                 * @description Exact, case-insensitive.
                 * @example ada@example.com
                 */
                email?: string;
                /** @example admin */
                role?: string;
                /** @example org:acme */
                scope?: string;
                /**
                 * @description Only active (true) or inactive users.
                 * @example true
                 */
                active?: boolean;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description NDJSON: one user a line */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": components["schemas"]["ExportedUser"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listApiKeys: {
        parameters: {
            query?: {
                /**
                 * @description Page size, 1–1000.
                 * @example 50
                 */
                limit?: number;
                /** @description Opaque; `next_cursor` of the previous page. */
                cursor?: string;
                /**
                 * @description Also count every matching item.
                 * @example true
                 */
                include_total?: boolean;
                /**
                 * @description Also list revoked keys.
                 * @example true
                 */
                include_revoked?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of keys */
            200: {
                headers: {
                    /** @description `<…>; rel="next"` when there is a next page. */
                    link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "name": "billing deploy",
                 *       "roles": [
                 *         "applications:read",
                 *         "users:read",
                 *         "users:write"
                 *       ],
                 *       "applications": [
                 *         "billing-web"
                 *       ],
                 *       "expires_at": "2099-01-01T00:00:00.000Z"
                 *     }
                 */
                "application/json": components["schemas"]["ApiKeyCreate"];
            };
        };
        responses: {
            /** @description The key, with its secret */
            201: {
                headers: {
                    /** @description Path of the created resource. */
                    location?: string;
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyWithSecret"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getApiKey: {
        parameters: {
            query?: never;
            header?: {
                /** @description Answer 304 if the resource still has this ETag. */
                "if-none-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the key was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKey"];
                };
            };
            /** @description Not modified: your copy is current. */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revokeApiKey: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the key was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rotateApiKey: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the key was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "previous_valid_for_seconds": 3600
                 *     }
                 */
                "application/json": components["schemas"]["ApiKeyRotate"];
            };
        };
        responses: {
            /** @description The key, with its new secret */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyWithSecret"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    issueUserToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description Identity-provider label, `<idp>_<kind>`.
                 * @example google_oauth2
                 */
                provider: string;
                /** @description The user's id at the provider; percent-encode it in paths. */
                identifier: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A new access token */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccessToken"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    validateExternalToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "token": "eyJhbGciOiJSUzI1NiIsImtpZCI6ImV4YW1wbGUifQ.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20iLCJzdWIiOiIxMDgyMzQ4MjM0OTgyMzQifQ.c2lnbmF0dXJl"
                 *     }
                 */
                "application/json": components["schemas"]["ExternalTokenValidationRequest"];
            };
        };
        responses: {
            /** @description What an exchange of this token would do */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExternalTokenValidationReport"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listSigningKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every signing key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningKeyList"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getSigningKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The `kid` of a key listed by GET /signing-keys.
                 * @example k3Jq9xZ0bW1vR2tUeXBlLXNpZ25pbmc
                 */
                kid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The signing key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningKey"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rotateSigningKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The new signing key */
            201: {
                headers: {
                    /** @description Path of the created resource. */
                    location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningKey"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    revokeSigningKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The `kid` of a key listed by GET /signing-keys.
                 * @example k3Jq9xZ0bW1vR2tUeXBlLXNpZ25pbmc
                 */
                kid: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The revoked key and the key that signs now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SigningKeyRevocation"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: {
                /**
                 * @description Page size, 1–1000.
                 * @example 50
                 */
                limit?: number;
                /** @description Opaque; `next_cursor` of the previous page. */
                cursor?: string;
                /**
                 * @description Also count every matching item.
                 * @example true
                 */
                include_total?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of webhooks */
            200: {
                headers: {
                    /** @description `<…>; rel="next"` when there is a next page. */
                    link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "url": "https://hooks.example.com/tessera",
                 *       "event_types": [
                 *         "user.*"
                 *       ],
                 *       "client_ids": [
                 *         "billing-web"
                 *       ],
                 *       "description": "User changes for the billing back end"
                 *     }
                 */
                "application/json": components["schemas"]["WebhookCreate"];
            };
        };
        responses: {
            /** @description The webhook, with its secret */
            201: {
                headers: {
                    /** @description Path of the created resource. */
                    location?: string;
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: {
                /** @description Answer 304 if the resource still has this ETag. */
                "if-none-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the webhook was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The webhook */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description Not modified: your copy is current. */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the webhook was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    patchWebhook: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the webhook was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        /** @description JSON Merge Patch (RFC 7396): `null` resets client_ids (every application), description ('') and enabled (true). Enabling a webhook that its receiver disabled (410) resumes delivery with the event that was refused. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "description": "User changes, billing",
                 *       "enabled": true
                 *     }
                 */
                "application/merge-patch+json": components["schemas"]["WebhookPatch"];
                /**
                 * @example {
                 *       "description": "User changes, billing",
                 *       "enabled": true
                 *     }
                 */
                "application/json": components["schemas"]["WebhookPatch"];
            };
        };
        responses: {
            /** @description The webhook, changed */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description Apply only if the resource still has this ETag (else 412); `*`: any version.
                 * @example *
                 */
                "if-match"?: string;
            };
            path: {
                /**
                 * @description The `id` the webhook was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The webhook, with its new secret */
            200: {
                headers: {
                    /** @description Strong entity tag of this version; send it in If-Match. */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Precondition failed */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    replayWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description The `id` the webhook was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "after": null
                 *     }
                 */
                "application/json": components["schemas"]["WebhookReplay"];
            };
        };
        responses: {
            /** @description Replay scheduled */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookReplayResult"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                /**
                 * @description Page size, 1–1000.
                 * @example 50
                 */
                limit?: number;
                /** @description Opaque; `next_cursor` of the previous page. */
                cursor?: string;
                /**
                 * @description Also count every matching item.
                 * @example true
                 */
                include_total?: boolean;
                status?: "pending" | "delivered" | "failed";
            };
            header?: never;
            path: {
                /**
                 * @description The `id` the webhook was created with.
                 * @example 3f1c9a0e-7b2d-4e8f-9c61-5a4b3d2e1f00
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of deliveries */
            200: {
                headers: {
                    /** @description `<…>; rel="next"` when there is a next page. */
                    link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                /** @description Event types, comma-separated; `application.*` matches every application event. */
                type?: string;
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id?: string;
                actor_id?: string;
                resource_type?: "application" | "user" | "api_key" | "signing_key" | "webhook" | "secret_key" | "cluster_setting";
                /** @description Events that occurred at or after this time. */
                since?: string;
                /** @description Events that occurred before this time. */
                until?: string;
                /** @description An event id: only events after it are listed (ids sort in commit order). */
                after?: string;
                /** @description Page size, 1–1000. */
                limit?: number;
                /** @description Long poll: when no event matches yet, wait up to this many seconds (1–30) for one. */
                wait?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventPage"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getAuthzenConfiguration: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description PDP metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthzenPdpMetadata"];
                };
            };
            /** @description The request cannot be read (two Authorization headers; HTTP/1.1 without Host) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    evaluateAccess: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "subject": {
                 *         "type": "user",
                 *         "id": "google_oauth2:108234823498234"
                 *       },
                 *       "action": {
                 *         "name": "can_read_invoices"
                 *       },
                 *       "resource": {
                 *         "type": "invoice",
                 *         "id": "inv-1"
                 *       },
                 *       "context": {
                 *         "client_id": "billing-web"
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["AuthzenEvaluationRequest"];
            };
        };
        responses: {
            /** @description The decision */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthzenDecision"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    evaluateAccessBatch: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "subject": {
                 *         "type": "user",
                 *         "id": "google_oauth2:108234823498234"
                 *       },
                 *       "context": {
                 *         "client_id": "billing-web"
                 *       },
                 *       "options": {
                 *         "evaluations_semantic": "execute_all"
                 *       },
                 *       "evaluations": [
                 *         {
                 *           "action": {
                 *             "name": "can_read_invoices"
                 *           },
                 *           "resource": {
                 *             "type": "invoice",
                 *             "id": "inv-1"
                 *           }
                 *         },
                 *         {
                 *           "action": {
                 *             "name": "can_refund_invoice"
                 *           },
                 *           "resource": {
                 *             "type": "invoice",
                 *             "id": "inv-1",
                 *             "properties": {
                 *               "customer_email": "ada@example.com"
                 *             }
                 *           }
                 *         }
                 *       ]
                 *     }
                 */
                "application/json": components["schemas"]["AuthzenEvaluationsRequest"];
            };
        };
        responses: {
            /** @description The decisions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthzenEvaluationsResponse"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    searchSubjects: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "subject": {
                 *         "type": "user"
                 *       },
                 *       "action": {
                 *         "name": "can_read_invoices"
                 *       },
                 *       "resource": {
                 *         "type": "invoice",
                 *         "id": "inv-1"
                 *       },
                 *       "context": {
                 *         "client_id": "billing-web"
                 *       },
                 *       "page": {
                 *         "limit": 50
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["AuthzenSubjectSearchRequest"];
            };
        };
        responses: {
            /** @description A page of users */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthzenEntitySearchResponse"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    searchResources: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "subject": {
                 *         "type": "user",
                 *         "id": "google_oauth2:108234823498234"
                 *       },
                 *       "action": {
                 *         "name": "can_read_invoices"
                 *       },
                 *       "resource": {
                 *         "type": "user"
                 *       },
                 *       "context": {
                 *         "client_id": "billing-web"
                 *       },
                 *       "page": {
                 *         "limit": 50
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["AuthzenResourceSearchRequest"];
            };
        };
        responses: {
            /** @description A page of resources */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthzenEntitySearchResponse"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    searchActions: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "subject": {
                 *         "type": "user",
                 *         "id": "google_oauth2:108234823498234"
                 *       },
                 *       "resource": {
                 *         "type": "invoice",
                 *         "id": "inv-1"
                 *       },
                 *       "context": {
                 *         "client_id": "billing-web"
                 *       },
                 *       "page": {
                 *         "limit": 50
                 *       }
                 *     }
                 */
                "application/json": components["schemas"]["AuthzenActionSearchRequest"];
            };
        };
        responses: {
            /** @description A page of actions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthzenActionSearchResponse"];
                };
            };
            /** @description The request is not valid */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Authentication required */
            401: {
                headers: {
                    /** @description `apikey` */
                    "www-authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Not allowed */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Unsupported media type */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Too many requests */
            429: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    /** @description Requests allowed per window. */
                    "ratelimit-limit"?: string;
                    /** @description Requests left in this window. */
                    "ratelimit-remaining"?: string;
                    /** @description Seconds until the window resets. */
                    "ratelimit-reset"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description Service unavailable */
            503: {
                headers: {
                    /** @description Seconds to wait before retrying. */
                    "retry-after"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getScimServiceProviderConfig: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description What this SCIM service supports */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    listScimResourceTypes: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The resource types (User, Group) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    listScimSchemas: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The schemas of User and Group */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    getScimResourceType: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The name of the resource type: `User` or `Group`.
                 * @example User
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A resource type by its name (User, Group) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    getScimSchema: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The URN of the schema.
                 * @example urn:ietf:params:scim:schemas:core:2.0:User
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A schema by its URN */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    listScimUsers: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
                /**
                 * @description RFC 7644 §3.4.2.2.
                 * @example displayName pr
                 */
                filter?: string;
                /**
                 * @description 1-based index paging; below 1 counts as 1.
                 * @example 1
                 */
                startIndex?: number;
                /**
                 * @description Page size; 0–1000 (larger asks get 1000).
                 * @example 10
                 */
                count?: number;
                /** @description RFC 9865: empty for the first page, then nextCursor. */
                cursor?: string;
                /** @description Not supported (400). */
                sortBy?: string;
                /** @description Not supported (400). */
                sortOrder?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A ListResponse */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    createScimUser: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM User (RFC 7643 §4.1). */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:schemas:core:2.0:User"
                 *       ],
                 *       "userName": "grace@example.com",
                 *       "name": {
                 *         "givenName": "Grace",
                 *         "familyName": "Hopper"
                 *       },
                 *       "emails": [
                 *         {
                 *           "primary": true,
                 *           "value": "grace@example.com",
                 *           "type": "work"
                 *         }
                 *       ],
                 *       "locale": "en-US",
                 *       "externalId": "00u1",
                 *       "active": true
                 *     }
                 */
                "application/json": components["schemas"]["ScimUserRequest"];
            };
        };
        responses: {
            /** @description The user */
            201: {
                headers: {
                    location?: string;
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description userName or displayName taken (uniqueness) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    searchScimUsers: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM SearchRequest (RFC 7644 §3.4.3): a list query in a body. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
                 *       ],
                 *       "filter": "userName eq \"ada@example.com\"",
                 *       "count": 10
                 *     }
                 */
                "application/json": components["schemas"]["ScimSearchRequest"];
            };
        };
        responses: {
            /** @description A ListResponse */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    searchScim: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM SearchRequest (RFC 7644 §3.4.3): a list query in a body. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
                 *       ],
                 *       "filter": "userName eq \"ada@example.com\"",
                 *       "count": 10
                 *     }
                 */
                "application/json": components["schemas"]["ScimSearchRequest"];
            };
        };
        responses: {
            /** @description A ListResponse */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    getScimUser: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The user */
            200: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Not modified */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    replaceScimUser: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM User (RFC 7643 §4.1). */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:schemas:core:2.0:User"
                 *       ],
                 *       "userName": "grace@example.com",
                 *       "name": {
                 *         "givenName": "Grace",
                 *         "familyName": "Hopper"
                 *       },
                 *       "emails": [
                 *         {
                 *           "primary": true,
                 *           "value": "grace@example.com",
                 *           "type": "work"
                 *         }
                 *       ],
                 *       "locale": "en-US",
                 *       "externalId": "00u1",
                 *       "active": true
                 *     }
                 */
                "application/json": components["schemas"]["ScimUserRequest"];
            };
        };
        responses: {
            /** @description The user */
            200: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description userName or displayName taken (uniqueness) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description If-Match does not match meta.version */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    deleteScimUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description If-Match does not match meta.version */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    patchScimUser: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM PatchOp message (RFC 7644 §3.5.2) for a User. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:api:messages:2.0:PatchOp"
                 *       ],
                 *       "Operations": [
                 *         {
                 *           "op": "replace",
                 *           "value": {
                 *             "active": false
                 *           }
                 *         }
                 *       ]
                 *     }
                 */
                "application/json": components["schemas"]["ScimUserPatchOp"];
            };
        };
        responses: {
            /** @description The user */
            200: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description userName or displayName taken (uniqueness) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description If-Match does not match meta.version */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    listScimGroups: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
                /**
                 * @description RFC 7644 §3.4.2.2.
                 * @example displayName pr
                 */
                filter?: string;
                /**
                 * @description 1-based index paging; below 1 counts as 1.
                 * @example 1
                 */
                startIndex?: number;
                /**
                 * @description Page size; 0–1000 (larger asks get 1000).
                 * @example 10
                 */
                count?: number;
                /** @description RFC 9865: empty for the first page, then nextCursor. */
                cursor?: string;
                /** @description Not supported (400). */
                sortBy?: string;
                /** @description Not supported (400). */
                sortOrder?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A ListResponse */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    createScimGroup: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM Group (RFC 7643 §4.2): its displayName is a role name. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:schemas:core:2.0:Group"
                 *       ],
                 *       "displayName": "billing-admins",
                 *       "members": []
                 *     }
                 */
                "application/json": components["schemas"]["ScimGroupRequest"];
            };
        };
        responses: {
            /** @description The group */
            201: {
                headers: {
                    location?: string;
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description userName or displayName taken (uniqueness) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    searchScimGroups: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM SearchRequest (RFC 7644 §3.4.3): a list query in a body. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:api:messages:2.0:SearchRequest"
                 *       ],
                 *       "filter": "userName eq \"ada@example.com\"",
                 *       "count": 10
                 *     }
                 */
                "application/json": components["schemas"]["ScimSearchRequest"];
            };
        };
        responses: {
            /** @description A ListResponse */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    getScimGroup: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The group */
            200: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Not modified */
            304: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    replaceScimGroup: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM Group (RFC 7643 §4.2): its displayName is a role name. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:schemas:core:2.0:Group"
                 *       ],
                 *       "displayName": "billing-admins",
                 *       "members": []
                 *     }
                 */
                "application/json": components["schemas"]["ScimGroupRequest"];
            };
        };
        responses: {
            /** @description The group */
            200: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description userName or displayName taken (uniqueness) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description If-Match does not match meta.version */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    deleteScimGroup: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description If-Match does not match meta.version */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
    patchScimGroup: {
        parameters: {
            query?: {
                /**
                 * @description Comma-separated: return only these (and id, schemas).
                 * @example displayName,meta
                 */
                attributes?: string;
                /**
                 * @description Comma-separated: return all but these.
                 * @example externalId
                 */
                excludedAttributes?: string;
            };
            header?: never;
            path: {
                /**
                 * @description Unique, case-sensitive application id; URL-safe.
                 * @example billing-web
                 */
                client_id: string;
                /**
                 * @description The `id` Tessera gave the resource.
                 * @example 5b2c5a4e-8f3d-4c1b-9a57-2f1e0d6c7b8a
                 */
                id: string;
            };
            cookie?: never;
        };
        /** @description A SCIM PatchOp message (RFC 7644 §3.5.2) for a Group. */
        requestBody: {
            content: {
                /**
                 * @example {
                 *       "schemas": [
                 *         "urn:ietf:params:scim:api:messages:2.0:PatchOp"
                 *       ],
                 *       "Operations": [
                 *         {
                 *           "op": "replace",
                 *           "value": {
                 *             "displayName": "billing-owners"
                 *           }
                 *         }
                 *       ]
                 *     }
                 */
                "application/json": components["schemas"]["ScimGroupPatchOp"];
            };
        };
        responses: {
            /** @description The group */
            200: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimResource"];
                };
            };
            /** @description Changed */
            204: {
                headers: {
                    etag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Bad request (scimType names the problem) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description A valid API key is required (Bearer or apikey) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description The key lacks the role, or is restricted to other applications */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Not found (or SCIM is off for the application) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description userName or displayName taken (uniqueness) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description If-Match does not match meta.version */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Body larger than the route reads (64 KiB for a user, 256 KiB for a Group) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Send application/scim+json or application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Too many requests for this key */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
            /** @description Store unavailable; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/scim+json": components["schemas"]["ScimError"];
                };
            };
        };
    };
}
