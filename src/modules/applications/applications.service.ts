import type { Clock } from '../../clock.js';
import { type DomainError, domainError, invalidFields, valueOrThrow } from '../../domain-error.js';
import {
  KeyedQueue,
  type VersionCondition,
  deleteConditionally,
  newVersion,
  updateConditionally,
} from '../conditional-writes.js';
import { DuplicateError, USER_NAME_INDEX } from '../../store/errors.js';
import type { ApplicationRecord, Store } from '../../store/store.js';
import { applyMergePatch } from '../merge-patch.js';
import { type ChangeOrigin, applicationEvents } from '../changes.js';
import {
  APPLICATION_DEFAULTS,
  type ApplicationFields,
  type ApplicationInput,
  type ApplicationSettings,
  applicationChangeErrors,
  checkApplication,
} from './applications.domain.js';

/** A JSON Merge Patch of an application (RFC 7396): null resets a member to its default. */
export interface ApplicationPatch {
  display_name?: string;
  description?: string;
  mode?: ApplicationRecord['mode'] | null;
  jwt_expiration_in_minutes?: number | null;
  /** Merged into the current value (RFC 7396), not replacing it. */
  external_token_validation?: Record<string, unknown> | null;
  scim_provider?: string | null;
  /** Merged into the current value (RFC 7396); the result must be a valid authorization. */
  authorization?: Record<string, unknown> | null;
}

type ApplicationChanges = Omit<ApplicationFields, 'clientId'>;

export class ApplicationsService {
  /** Writes to one application run one after another (see KeyedQueue). */
  readonly #writes = new KeyedQueue();

  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /** `invalid` for a rule the input breaks, `conflict` for a taken client_id. */
  async createApplication(
    input: ApplicationInput,
    origin: ChangeOrigin,
  ): Promise<ApplicationRecord> {
    const fields = valueOrThrow(checkApplication(input));
    const now = this.deps.clock.now();
    const application: ApplicationRecord = {
      ...fields,
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
        throw domainError(
          'conflict',
          `An application with client_id "${fields.clientId}" already exists.`,
          { rule: 'client_id' },
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

  /** Replaces every setting (PUT): omitted optional members return to their defaults. */
  replaceApplication(
    clientId: string,
    settings: ApplicationSettings,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<ApplicationRecord> {
    return this.update(clientId, condition, origin, () => ({
      displayName: settings.display_name,
      description: settings.description,
      mode: settings.mode ?? APPLICATION_DEFAULTS.mode,
      jwtExpirationInMinutes:
        settings.jwt_expiration_in_minutes ?? APPLICATION_DEFAULTS.jwtExpirationInMinutes,
      externalTokenValidation:
        settings.external_token_validation ?? APPLICATION_DEFAULTS.externalTokenValidation,
      scimProvider: settings.scim_provider ?? APPLICATION_DEFAULTS.scimProvider,
      authorization: settings.authorization ?? APPLICATION_DEFAULTS.authorization,
    }));
  }

  /** Changes the members the merge patch names; null resets one to its default. */
  patchApplication(
    clientId: string,
    patch: ApplicationPatch,
    condition: VersionCondition,
    origin: ChangeOrigin,
  ): Promise<ApplicationRecord> {
    return this.update(clientId, condition, origin, (current) => {
      const externalTokenValidation =
        patch.external_token_validation === undefined
          ? current.externalTokenValidation
          : (applyMergePatch(
              current.externalTokenValidation,
              patch.external_token_validation,
            ) as Record<string, unknown> | null);
      return {
        displayName: patch.display_name ?? current.displayName,
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
        authorization:
          patch.authorization === undefined
            ? current.authorization
            : (applyMergePatch(current.authorization, patch.authorization) as Record<
                string,
                unknown
              > | null),
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
    fieldsFor: (current: ApplicationRecord) => ApplicationChanges,
  ): Promise<ApplicationRecord> {
    return this.#writes.run(clientId, () => this.updateNow(clientId, condition, origin, fieldsFor));
  }

  /** Why a provider cannot become the application's SCIM provider: users apart only by case. */
  private async userNameClash(
    clientId: string,
    provider: string,
    cause: DuplicateError,
  ): Promise<DomainError> {
    const clashes = await this.deps.store.users.findUserNameClashes(clientId, provider, 6);
    const named = clashes.map((user) => JSON.stringify(user.identifier.slice(0, 80))).join(', ');
    return domainError(
      'conflict',
      `"${provider}" cannot be the SCIM provider of application "${clientId}": some of its ` +
        `users have identifiers that differ only in ASCII case (${named}${clashes.length === 6 ? ', …' : ''}), ` +
        `and SCIM userNames ignore case. Rename or delete all but one of each, then try again.`,
      { rule: 'user_name', cause },
    );
  }

  private updateNow(
    clientId: string,
    condition: VersionCondition,
    origin: ChangeOrigin,
    fieldsFor: (current: ApplicationRecord) => ApplicationChanges,
  ): Promise<ApplicationRecord> {
    return updateConditionally({
      load: () => this.deps.store.applications.findApplication(clientId),
      notFound: () => applicationNotFound(clientId),
      condition,
      change: (current) => {
        const changes = fieldsFor(current);
        const next = { ...current, ...changes, displayName: changes.displayName.trim() };
        if (sameFields(current, next)) return null;
        const errors = applicationChangeErrors(current, next);
        if (errors.length > 0) throw invalidFields(errors);
        return { ...next, updatedAt: this.deps.clock.now(), etag: newVersion() };
      },
      save: (next, expected, current) =>
        this.deps.store.applications
          .replaceApplication(
            next,
            expected,
            applicationEvents(origin, next.updatedAt, current, next),
          )
          .catch(async (error: unknown) => {
            if (!(error instanceof DuplicateError) || error.index !== USER_NAME_INDEX) throw error;
            throw await this.userNameClash(clientId, next.scimProvider ?? '', error);
          }),
    });
  }
}

export function applicationNotFound(clientId: string): DomainError {
  return domainError('not_found', `No application with client_id "${clientId}".`, {
    resource: 'application',
  });
}

/** Merge-patch semantics for a member with a default: absent keeps, null resets. */
function patchedValue<T>(patch: T | null | undefined, current: T, fallback: T): T {
  if (patch === undefined) return current;
  return patch ?? fallback;
}

function sameFields(current: ApplicationRecord, fields: ApplicationChanges): boolean {
  return (
    current.displayName === fields.displayName &&
    current.description === fields.description &&
    current.mode === fields.mode &&
    current.jwtExpirationInMinutes === fields.jwtExpirationInMinutes &&
    current.scimProvider === fields.scimProvider &&
    JSON.stringify(current.externalTokenValidation) ===
      JSON.stringify(fields.externalTokenValidation) &&
    JSON.stringify(current.authorization) === JSON.stringify(fields.authorization)
  );
}
