import { type Static, Type } from 'typebox';
import { named } from '../../http/openapi.js';
import { RULE_KEYWORD } from '../../http/validation.js';
import {
  Nullable,
  Page,
  PageQueryProperties,
  StringEnum,
  Timestamp,
  toTimestamp,
} from '../../http/schemas.js';
import type { ImportErrorRecord, ImportJobRecord, UserRecord } from '../../store/store.js';
import { ClientId } from '../applications/applications.schemas.js';
import { ListUsersQuery, User, toUserResource } from '../users/users.schemas.js';

export const NDJSON_MEDIA_TYPE = 'application/x-ndjson';

export const ImportFormatSchema = StringEnum(['tessera', 'auth0', 'keycloak'] as const, {
  description:
    '`tessera`: lines of a Tessera export (or user resources); `auth0`: an Auth0 user export ' +
    '(NDJSON); `keycloak`: the users of a Keycloak realm export (a JSON document with `users`, ' +
    'or one user representation a line).',
});

export const ImportQuery = Type.Object(
  {
    format: Type.Optional(ImportFormatSchema),
    dry_run: Type.Optional(
      Type.Boolean({ description: 'Check and count every line, write no user and no event.' }),
    ),
    on_conflict: Type.Optional(
      StringEnum(['update', 'skip', 'fail'] as const, {
        description:
          'What to do with a line whose user exists and differs: update it (default), skip it, ' +
          'or report the line as an error. A line equal to its stored user is `unchanged` whatever this says.',
      }),
    ),
    provider_map: Type.Optional(
      Type.String({
        maxLength: 4000,
        description:
          'Source provider names to Tessera provider labels, `name:label,…`, over the defaults ' +
          '(`google-oauth2:google_oauth2`, …; see docs/imports.md).',
        examples: ['google-oauth2:google_oauth2,acme-saml:acme_saml'],
      }),
    ),
    keycloak_client: Type.Optional({
      ...ClientId,
      description:
        'Keycloak: the client whose `clientRoles` become roles (default: the application’s client_id).',
    }),
  },
  { additionalProperties: false },
);
export type ImportQuery = Static<typeof ImportQuery>;

export const ImportCountsSchema = Type.Object({
  read: Type.Integer({ description: 'Lines (or users of a document) read so far.' }),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer({ description: 'Lines equal to the stored user: nothing written.' }),
  skipped: Type.Integer({
    description: 'Lines of existing, differing users under on_conflict=skip.',
  }),
  invalid: Type.Integer({ description: 'Lines refused; each has its errors under /errors.' }),
});

export const ImportJob = named(
  'ImportJob',
  Type.Object(
    {
      id: Type.String(),
      client_id: Type.String(),
      status: StringEnum(['running', 'succeeded', 'failed', 'cancelled'] as const),
      format: ImportFormatSchema,
      dry_run: Type.Boolean(),
      on_conflict: StringEnum(['update', 'skip', 'fail'] as const),
      counts: ImportCountsSchema,
      lines_per_second: Type.Number({
        description: 'Lines read per second, start to end (or now).',
      }),
      elapsed_seconds: Type.Number(),
      started_at: Timestamp,
      updated_at: { ...Timestamp, description: 'When the job last recorded progress.' },
      finished_at: Nullable(Timestamp),
      failure: Nullable(Type.String({ description: 'Why a failed job failed.' })),
      errors: Type.String({ description: 'Path of the list of its error lines.' }),
    },
    { description: 'A bulk import of users, running or done.' },
  ),
);
export type ImportJob = Static<typeof ImportJob>;

export const ImportError = named(
  'ImportError',
  Type.Object({
    line: Type.Integer({
      description: 'The line (from 1; for a JSON document, the user in `users`).',
    }),
    pointer: Type.String({ description: 'JSON Pointer into the line; "" for the whole line.' }),
    detail: Type.String(),
  }),
);
export type ImportError = Static<typeof ImportError>;

export const ImportErrorPage = Page(ImportError);

export const ImportParams = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9._~-]*$',
      [RULE_KEYWORD]: '1–64 characters of A–Z a–z 0–9 . _ ~ -',
      description: 'The job id, from the Location of the import.',
      examples: ['8d5f9a0e-3c1b-4f7a-9e2d-6b4c1a0f7e55'],
    }),
  },
  { additionalProperties: false },
);

export const ImportErrorsQuery = Type.Object(PageQueryProperties, { additionalProperties: false });

const {
  limit: _limit,
  cursor: _cursor,
  include_total: _total,
  ...filters
} = ListUsersQuery.properties;

export const ExportQuery = Type.Object(filters, { additionalProperties: false });
export type ExportQuery = Static<typeof ExportQuery>;

export const ExportedUser = named(
  'ExportedUser',
  Type.Object(
    {
      ...User.properties,
      external_id: Nullable(Type.String({ description: "SCIM's externalId, or null." })),
    },
    { description: 'One line of an export: a user resource with its SCIM externalId.' },
  ),
);

/** One line of an export, newline included. */
export function toExportLine(user: UserRecord): string {
  const { created_at, updated_at, ...resource } = toUserResource(user);
  return `${JSON.stringify({ ...resource, external_id: user.externalId, created_at, updated_at })}\n`;
}

export function toImportJobResource(
  job: ImportJobRecord,
  basePath: string,
  now: number,
): ImportJob {
  const end = job.finishedAt ?? (job.status === 'running' ? now : job.updatedAt);
  const elapsedMs = Math.max(0, end - job.createdAt);
  return {
    id: job.id,
    client_id: job.clientId,
    status: job.status,
    format: job.format,
    dry_run: job.dryRun,
    on_conflict: job.onConflict,
    counts: { ...job.counts },
    lines_per_second: elapsedMs === 0 ? 0 : Math.round((job.counts.read * 1000) / elapsedMs),
    elapsed_seconds: elapsedMs / 1000,
    started_at: toTimestamp(job.createdAt),
    updated_at: toTimestamp(job.updatedAt),
    finished_at: job.finishedAt === null ? null : toTimestamp(job.finishedAt),
    failure: job.failure,
    errors: `${basePath}/imports/${job.id}/errors`,
  };
}

export function toImportErrorResource(error: ImportErrorRecord): ImportError {
  return { line: error.line, pointer: error.pointer, detail: error.detail };
}
