// Authorization decisions (OpenID AuthZEN 1.0) in the domain's words: evaluations,
// and searches for the subjects, resources and actions a decision would allow. Every decision
// reads the user's current record: nothing is cached, so a role removed or a user deactivated
// changes the next decision on every instance. The wire format is authzen.routes.ts's.

import type { AuthorizationModel } from '../applications/applications.schemas.js';
import type { ApplicationRecord, Store, UserPosition, UserRecord } from '../../store/store.js';
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

/** How a subject id names a user: by identity when it reads `<provider>:<identifier>`, and by id. */
interface UserNaming {
  identity: { provider: string; identifier: string } | null;
  id: string | null;
}

// A provider label (applications.schemas.ts) and the rest, after the first colon.
const IDENTITY = /^([a-z0-9_-]+_[a-z0-9_-]+):(.+)$/s;
/** Longer subject ids cannot name a user (identifiers are at most 256 characters). */
const MAX_SUBJECT_ID_LENGTH = 1024;

function namingOf(subject: SubjectRef): UserNaming {
  if (subject.type !== USER_SUBJECT || subject.id.length > MAX_SUBJECT_ID_LENGTH) {
    return { identity: null, id: null };
  }
  const match = IDENTITY.exec(subject.id);
  return {
    identity: match === null ? null : { provider: match[1]!, identifier: match[2]! },
    id: subject.id,
  };
}

/** An application and the users its questions name, as one statement read them. */
class LoadedSubjects {
  readonly #byIdentity = new Map<string, UserRecord>();
  readonly #byId = new Map<string, UserRecord>();

  constructor(
    readonly application: ApplicationRecord | undefined,
    users: readonly UserRecord[],
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
  userOf(subject: SubjectRef): UserRecord | undefined {
    const naming = namingOf(subject);
    if (naming.identity !== null) {
      const user = this.#byIdentity.get(
        `${naming.identity.provider}:${naming.identity.identifier}`,
      );
      if (user !== undefined) return user;
    }
    return naming.id === null ? undefined : this.#byId.get(naming.id);
  }
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
    const subjects = (await this.load([evaluation])).get(evaluation.clientId)!;
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

  private decideLoaded(subjects: LoadedSubjects, evaluation: EvaluationInput): Decision {
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
  private async load(
    evaluations: readonly Pick<EvaluationInput, 'clientId' | 'subject'>[],
  ): Promise<Map<string, LoadedSubjects>> {
    const named = new Map<
      string,
      { ids: Set<string>; identities: Map<string, UserNaming['identity']> }
    >();
    for (const { clientId, subject } of evaluations) {
      let refs = named.get(clientId);
      if (refs === undefined)
        named.set(clientId, (refs = { ids: new Set(), identities: new Map() }));
      const naming = namingOf(subject);
      if (naming.id !== null) refs.ids.add(naming.id);
      if (naming.identity !== null) refs.identities.set(subject.id, naming.identity);
    }
    const loaded = await Promise.all(
      [...named].map(async ([clientId, refs]) => {
        const found = await this.deps.store.users.findApplicationWithUsers(clientId, {
          ids: [...refs.ids],
          identities: [...refs.identities.values()].filter((identity) => identity !== null),
        });
        return [clientId, new LoadedSubjects(found?.application, found?.users ?? [])] as const;
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
