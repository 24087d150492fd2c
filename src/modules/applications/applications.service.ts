import type { Clock } from '../../clock.js';
import {
  KeyedQueue,
  type VersionCondition,
  deleteConditionally,
  newVersion,
  updateConditionally,
} from '../conditional-writes.js';
import { invalid, problem } from '../../problems.js';
import { DuplicateError } from '../../store/errors.js';
import type { ApplicationRecord, Store } from '../../store/store.js';
import { applyMergePatch } from '../merge-patch.js';
import { type ChangeOrigin, applicationEvents } from '../changes.js';
import {
  type CreateApplicationBody,
  EXTERNAL_TOKEN_VALIDATION_MAX_BYTES,
  type PatchApplicationBody,
  type ReplaceApplicationBody,
} from './applications.schemas.js';

export const APPLICATION_DEFAULTS = {
  mode: 'internal',
  jwtExpirationInMinutes: 60,
  externalTokenValidation: null,
  scimProvider: null,
} as const;

type ApplicationFields = Pick<
  ApplicationRecord,
  | 'displayName'
  | 'description'
  | 'mode'
  | 'jwtExpirationInMinutes'
  | 'externalTokenValidation'
  | 'scimProvider'
>;

export class ApplicationsService {
  /** Writes to one application run one after another (see KeyedQueue). */
  readonly #writes = new KeyedQueue();

  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  async createApplication(
    body: CreateApplicationBody,
    origin: ChangeOrigin,
  ): Promise<ApplicationRecord> {
    const now = this.deps.clock.now();
    const application: ApplicationRecord = {
      clientId: body.client_id,
      ...checkedFields(body),
      createdAt: now,
      updatedAt: now,
      etag: newVersion(),
    };
    try {
      await this.deps.store.applications.insertApplication(
        application,
        applicationEvents(origin, now, null, application),
      );
    } catch (error) {
      if (error instanceof DuplicateError) {
        throw problem(
          'conflict',
          `An application with client_id "${body.client_id}" already exists.`,
        );
      }
      throw error;
    }
    return application;
  }

  async findApplication(clientId: string): Promise<ApplicationRecord> {
    const application = await this.deps.store.applications.findApplication(clientId);
    if (application === undefined) throw applicationNotFound(clientId);
    return application;
  }

  /**
   * Up to `limit` applications after `after`, in client_id order; `visible`: the caller's
   * restriction; `prefix`: only client_ids that start with it.
   */
  listApplications(options: {
    visible: readonly string[] | null;
    after: string | null;
    limit: number;
    prefix?: string | null;
  }): Promise<ApplicationRecord[]> {
    return this.deps.store.applications.listApplications(
      { clientIds: options.visible, clientIdPrefix: options.prefix ?? null },
      { after: options.after, limit: options.limit },
    );
  }

  countApplications(visible: readonly string[] | null): Promise<number> {
    return this.deps.store.applications.countApplications({ clientIds: visible });
  }

  replaceApplication(
    clientId: string,
    body: ReplaceApplicationBody,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<ApplicationRecord> {
    assertSameClientId(clientId, body.client_id);
    const fields = checkedFields(body);
    return this.update(clientId, condition, origin, () => fields);
  }

  patchApplication(
    clientId: string,
    patch: PatchApplicationBody,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<ApplicationRecord> {
    assertSameClientId(clientId, patch.client_id);
    return this.update(clientId, condition, origin, (current) => {
      const externalTokenValidation =
        patch.external_token_validation === undefined
          ? current.externalTokenValidation
          : (applyMergePatch(
              current.externalTokenValidation,
              patch.external_token_validation,
            ) as Record<string, unknown> | null);
      assertExternalTokenValidationSize(externalTokenValidation);
      return {
        displayName: patch.display_name?.trim() ?? current.displayName,
        description: patch.description ?? current.description,
        mode: patchedValue(patch.mode, current.mode, APPLICATION_DEFAULTS.mode),
        jwtExpirationInMinutes: patchedValue(
          patch.jwt_expiration_in_minutes,
          current.jwtExpirationInMinutes,
          APPLICATION_DEFAULTS.jwtExpirationInMinutes,
        ),
        externalTokenValidation,
        scimProvider: patchedValue<string | null>(
          patch.scim_provider,
          current.scimProvider,
          APPLICATION_DEFAULTS.scimProvider,
        ),
      };
    });
  }

  /** Deletes the application and its users; one application.deleted event records both. */
  deleteApplication(
    clientId: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<void> {
    return this.#writes.run(clientId, () =>
      deleteConditionally({
        load: () => this.deps.store.applications.findApplication(clientId),
        notFound: () => applicationNotFound(clientId),
        condition,
        remove: (current) =>
          this.deps.store.applications.deleteApplicationCascade(
            clientId,
            current.etag,
            applicationEvents(origin, this.deps.clock.now(), current, null),
          ),
      }),
    );
  }

  private update(
    clientId: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
    fieldsFor: (current: ApplicationRecord) => ApplicationFields,
  ): Promise<ApplicationRecord> {
    return this.#writes.run(clientId, () => this.updateNow(clientId, condition, origin, fieldsFor));
  }

  private updateNow(
    clientId: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
    fieldsFor: (current: ApplicationRecord) => ApplicationFields,
  ): Promise<ApplicationRecord> {
    return updateConditionally({
      load: () => this.deps.store.applications.findApplication(clientId),
      notFound: () => applicationNotFound(clientId),
      condition,
      change: (current) => {
        const fields = fieldsFor(current);
        if (sameFields(current, fields)) return null;
        return { ...current, ...fields, updatedAt: this.deps.clock.now(), etag: newVersion() };
      },
      save: (next, expected, current) =>
        this.deps.store.applications.replaceApplication(
          next,
          expected,
          applicationEvents(origin, next.updatedAt, current, next),
        ),
    });
  }
}

export function applicationNotFound(clientId: string) {
  return problem('not-found', `No application with client_id "${clientId}".`);
}

/** The fields of a create or replace body, with defaults for omitted optional members. */
function checkedFields(body: CreateApplicationBody | ReplaceApplicationBody): ApplicationFields {
  const externalTokenValidation =
    body.external_token_validation ?? APPLICATION_DEFAULTS.externalTokenValidation;
  assertExternalTokenValidationSize(externalTokenValidation);
  return {
    displayName: body.display_name.trim(),
    description: body.description,
    mode: body.mode ?? APPLICATION_DEFAULTS.mode,
    jwtExpirationInMinutes:
      body.jwt_expiration_in_minutes ?? APPLICATION_DEFAULTS.jwtExpirationInMinutes,
    externalTokenValidation,
    scimProvider: body.scim_provider ?? APPLICATION_DEFAULTS.scimProvider,
  };
}

/** Merge-patch semantics for a member with a default: absent keeps, null resets. */
function patchedValue<T>(patch: T | null | undefined, current: T, fallback: T): T {
  if (patch === undefined) return current;
  return patch ?? fallback;
}

function sameFields(current: ApplicationRecord, fields: ApplicationFields): boolean {
  return (
    current.displayName === fields.displayName &&
    current.description === fields.description &&
    current.mode === fields.mode &&
    current.jwtExpirationInMinutes === fields.jwtExpirationInMinutes &&
    current.scimProvider === fields.scimProvider &&
    JSON.stringify(current.externalTokenValidation) ===
      JSON.stringify(fields.externalTokenValidation)
  );
}

function assertSameClientId(path: string, body: string | undefined): void {
  if (body !== undefined && body !== path) {
    throw invalid([
      { pointer: '/client_id', detail: 'must equal the client_id in the path (it cannot change)' },
    ]);
  }
}

function assertExternalTokenValidationSize(value: unknown): void {
  if (value === null) return;
  if (Buffer.byteLength(JSON.stringify(value)) > EXTERNAL_TOKEN_VALIDATION_MAX_BYTES) {
    throw invalid([
      { pointer: '/external_token_validation', detail: 'must be at most 32 KiB when serialized' },
    ]);
  }
}
