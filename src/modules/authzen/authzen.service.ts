// Authorization decisions (OpenID AuthZEN 1.0) in the domain's words: evaluations,
// and searches for the subjects, resources and actions a decision would allow. Every decision
// reads the user's current record and the application's current version in one statement:
// a role removed or a user deactivated changes the next decision on every instance. (The store
// keeps the application's parsed record by that version, never by time.) The wire format is
// authzen.routes.ts's.

import type { AuthorizationModel } from '../applications/applications.schemas.js';
import type {
  ApplicationRecord,
  DecidingUserRecord,
  Store,
  UserPosition,
  UserRecord,
} from '../../store/store.js';
import {
  type Decision,
  type ResourceProperties,
  allowedActions,
  decide,
  grantOf,
  mayActAnywhere,
} from './authzen.decision.js';

export type { Decision, DecisionReason } from './authzen.decision.js';

/** AuthZEN's subject: a user is `<provider>:<identifier>` or its id. */
export interface SubjectRef {
  type: string;
  id: string;
}

export interface ResourceRef {
  type: string;
  properties?: ResourceProperties;
}

/** One question: may the subject take the action on the resource, in this application? */
export interface EvaluationInput {
  clientId: string;
  subject: SubjectRef;
  action: string;
  resource: ResourceRef;
}

export const EVALUATIONS_SEMANTICS = [
  'execute_all',
  'deny_on_first_deny',
  'permit_on_first_permit',
] as const;
export type EvaluationsSemantic = (typeof EVALUATIONS_SEMANTICS)[number];

/** The only subject type Tessera knows; any other names nobody, and is denied. */
export const USER_SUBJECT = 'user';

/** A page of a search: its items, and where the next page starts (null: this is the last). */
export interface SearchPage<Item, Position> {
  items: Item[];
  next: Position | null;
}

// A provider label (applications.schemas.ts) and the rest, after the first colon: the
// subject `<provider>:<identifier>`, exactly as `${provider}:${identifier}` reads.
const IDENTITY = /^([a-z0-9_-]+_[a-z0-9_-]+):(.+)$/s;
/** Longer subject ids cannot name a user (identifiers are at most 256 characters). */
const MAX_SUBJECT_ID_LENGTH = 1024;

/** Whether the subject can name a user at all (by id, and maybe by identity). */
function namesUser(subject: SubjectRef): boolean {
  return subject.type === USER_SUBJECT && subject.id.length <= MAX_SUBJECT_ID_LENGTH;
}

/**
 * An application and the users its questions name, as one statement read them. A subject
 * names a user by identity first, then by id.
 */
class LoadedSubjects<User extends DecidingUserRecord> {
  /** Users by `<provider>:<identifier>` (how the subject ids in identityNamed read), and by id. */
  readonly #byIdentity = new Map<string, User>();
  readonly #byId = new Map<string, User>();

  constructor(
    readonly application: ApplicationRecord | undefined,
    users: readonly User[],
    private readonly identityNamed: ReadonlySet<string>,
  ) {
    for (const user of users) {
      this.#byIdentity.set(`${user.provider}:${user.identifier}`, user);
      this.#byId.set(user.id, user);
    }
  }

  get authorization(): AuthorizationModel | null {
    return (this.application?.authorization ?? null) as AuthorizationModel | null;
  }

  /** The user a subject names: by identity first, then by id. */
  userOf(subject: SubjectRef): User | undefined {
    if (!namesUser(subject)) return undefined;
    if (this.identityNamed.has(subject.id)) {
      const user = this.#byIdentity.get(subject.id);
      if (user !== undefined) return user;
    }
    return this.#byId.get(subject.id);
  }
}

/** The refs of one application's questions: ids, and identities by the subject id naming them. */
interface NamedUsers {
  ids: Set<string>;
  identities: Map<string, { provider: string; identifier: string }>;
}

export class AuthzenService {
  constructor(private readonly deps: { store: Store }) {}

  /**
   * The decisions, in order: all of them (execute_all), or up to and including the first deny
   * (deny_on_first_deny) or permit (permit_on_first_permit). The users of each application
   * are read in one statement, whatever the number of questions.
   */
  async evaluate(
    evaluations: readonly EvaluationInput[],
    semantic: EvaluationsSemantic = 'execute_all',
  ): Promise<boolean[]> {
    const loaded = await this.load(evaluations);
    const decisions: boolean[] = [];
    for (const evaluation of evaluations) {
      const decision = this.decideLoaded(loaded.get(evaluation.clientId)!, evaluation).decision;
      decisions.push(decision);
      if (semantic === 'deny_on_first_deny' && !decision) break;
      if (semantic === 'permit_on_first_permit' && decision) break;
    }
    return decisions;
  }

  /** One decision with its reason and the user it concerns (the console's dry run). */
  async explain(evaluation: EvaluationInput): Promise<Decision & { user: UserRecord | null }> {
    const subjects = (await this.load([evaluation], 'records')).get(evaluation.clientId)!;
    return {
      ...this.decideLoaded(subjects, evaluation),
      user: subjects.userOf(evaluation.subject) ?? null,
    };
  }

  /**
   * The active users the action on the resource is allowed to, in (provider, identifier)
   * order: holders of its roles, and the resource's owners when it has owner roles.
   */
  async searchSubjects(query: {
    clientId: string;
    subjectType: string;
    action: string;
    resource: ResourceRef;
    after: UserPosition | null;
    limit: number;
  }): Promise<SearchPage<UserRecord, UserPosition>> {
    if (query.subjectType !== USER_SUBJECT || query.limit === 0) return { items: [], next: null };
    const application = await this.deps.store.applications.findApplication(query.clientId);
    if (application === undefined) return { items: [], next: null };
    const grant = grantOf(
      application.authorization as AuthorizationModel | null,
      query.clientId,
      query.action,
      query.resource.properties,
    );
    if (grant === null) return { items: [], next: null };
    const rows = await this.deps.store.users.listGrantedUsers(grant, {
      after: query.after,
      limit: query.limit + 1,
    });
    return userPage(rows, query.limit);
  }

  /**
   * The resources the subject may take the action on. Tessera keeps one kind of resource, the
   * application's users (type `user`): all of them when the subject may take the action on
   * any resource; none when only as an owner (Tessera does not know who owns a user). Of any
   * other type it knows none.
   */
  async searchResources(query: {
    clientId: string;
    subject: SubjectRef;
    action: string;
    resourceType: string;
    after: UserPosition | null;
    limit: number;
  }): Promise<SearchPage<UserRecord, UserPosition>> {
    if (query.resourceType !== USER_SUBJECT || query.limit === 0) return { items: [], next: null };
    const subjects = (await this.load([query])).get(query.clientId)!;
    if (!mayActAnywhere(subjects.authorization, subjects.userOf(query.subject), query.action)) {
      return { items: [], next: null };
    }
    const rows = await this.deps.store.users.listUsers(
      {
        clientId: query.clientId,
        provider: null,
        email: null,
        role: null,
        scope: null,
        active: null,
      },
      { after: query.after, limit: query.limit + 1 },
    );
    return userPage(rows, query.limit);
  }

  /** The actions the subject may take on the resource, in byte order, after `after`. */
  async searchActions(query: {
    clientId: string;
    subject: SubjectRef;
    resource: ResourceRef;
    after: string | null;
    limit: number;
  }): Promise<SearchPage<string, string>> {
    const subjects = (await this.load([query])).get(query.clientId)!;
    const all = allowedActions(
      subjects.authorization,
      subjects.userOf(query.subject),
      query.resource.properties,
    );
    const rest =
      query.after === null
        ? all
        : all.filter(
            (action) => Buffer.compare(Buffer.from(action), Buffer.from(query.after!)) > 0,
          );
    const items = rest.slice(0, query.limit);
    return { items, next: rest.length > query.limit && items.length > 0 ? items.at(-1)! : null };
  }

  private decideLoaded(
    subjects: LoadedSubjects<DecidingUserRecord>,
    evaluation: EvaluationInput,
  ): Decision {
    if (subjects.application === undefined)
      return { decision: false, reason: 'unknown_application' };
    return decide(
      subjects.authorization,
      subjects.userOf(evaluation.subject),
      evaluation.action,
      evaluation.resource.properties,
    );
  }

  /** Per application: the application and the users its questions name, one statement each. */
  private load(
    evaluations: readonly Pick<EvaluationInput, 'clientId' | 'subject'>[],
  ): Promise<Map<string, LoadedSubjects<DecidingUserRecord>>>;
  private load(
    evaluations: readonly Pick<EvaluationInput, 'clientId' | 'subject'>[],
    whole: 'records',
  ): Promise<Map<string, LoadedSubjects<UserRecord>>>;
  private async load(
    evaluations: readonly Pick<EvaluationInput, 'clientId' | 'subject'>[],
    whole?: 'records',
  ): Promise<Map<string, LoadedSubjects<DecidingUserRecord>>> {
    const named = new Map<string, NamedUsers>();
    for (const { clientId, subject } of evaluations) {
      let refs = named.get(clientId);
      if (refs === undefined)
        named.set(clientId, (refs = { ids: new Set(), identities: new Map() }));
      if (!namesUser(subject) || refs.ids.has(subject.id)) continue;
      refs.ids.add(subject.id);
      const match = IDENTITY.exec(subject.id);
      if (match !== null) {
        refs.identities.set(subject.id, { provider: match[1]!, identifier: match[2]! });
      }
    }
    const { users } = this.deps.store;
    const loaded = await Promise.all(
      [...named].map(async ([clientId, refs]) => {
        const wanted = { ids: [...refs.ids], identities: [...refs.identities.values()] };
        // A decision reads a few columns of each user; the console's dry run shows the user.
        const found =
          whole === 'records'
            ? await users.findApplicationWithUsers(clientId, wanted)
            : await users.findApplicationWithDecidingUsers(clientId, wanted);
        const identityNamed = new Set(refs.identities.keys());
        return [
          clientId,
          new LoadedSubjects<DecidingUserRecord>(
            found?.application,
            found?.users ?? [],
            identityNamed,
          ),
        ] as const;
      }),
    );
    return new Map(loaded);
  }
}

function userPage(rows: UserRecord[], limit: number): SearchPage<UserRecord, UserPosition> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return {
    items,
    next:
      rows.length > limit && last !== undefined
        ? { provider: last.provider, identifier: last.identifier }
        : null,
  };
}
