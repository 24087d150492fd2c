// What a line of each import format says about a user, as the domain's UserInput (still
// unchecked: the users' domain core checks it, as it checks every door's input). Each mapping
// also says where each member came from in the line, so an error found in the UserInput is
// reported at the line's own JSON Pointer (`/identities/0/user_id`, not `/identifier`).
//
// Provider names of the sources become Tessera provider labels through a provider map: the
// defaults below (documented in docs/imports.md), overridden or extended per import.

import type { FieldError } from '../../domain-error.js';
import type { ImportFormat } from '../../store/store.js';
import { isValidUserField, nameFromText } from '../users/users.domain.js';

/** A line made into a user's input, with where each member came from. */
export interface MappedUser {
  /** A UserInput, unchecked. */
  input: Record<string, unknown>;
  /** The id the line gives the user (a Tessera export's), or null: a new user gets a new one. */
  id: string | null;
  /** Whether the line says `active` and `external_id`: members it leaves out keep their values. */
  sets: { active: boolean; externalId: boolean };
  /** JSON Pointer in the line of each UserInput member (missing: the member's own name). */
  sources: Record<string, string>;
  /** For members built from several places (roles): the pointer of each element. */
  elementSources?: Record<string, string[]>;
}

export type MappedLine = { ok: true; user: MappedUser } | { ok: false; errors: FieldError[] };

export interface FormatContext {
  /** Source provider (or connection, alias) name → Tessera provider label. */
  providerMap: ReadonlyMap<string, string>;
  /** Keycloak: the client whose clientRoles become the user's roles. */
  keycloakClient: string;
}

/**
 * Auth0's identity providers (an identity's `provider`) as Tessera labels. `samlp`, `waad`,
 * `adfs` and `oidc` are enterprise connections: their label is made from the connection's name
 * (see enterpriseLabel). `auth0` (Auth0's own database, with passwords) has no default.
 */
export const AUTH0_PROVIDERS: Readonly<Record<string, string>> = {
  'google-oauth2': 'google_oauth2',
  apple: 'apple_oauth2',
  windowslive: 'microsoft_oauth2',
  github: 'github_oauth2',
  facebook: 'facebook_oauth2',
  linkedin: 'linkedin_oauth2',
  twitter: 'twitter_oauth2',
  gitlab: 'gitlab_oauth2',
};

/** Auth0 enterprise connection strategies, and the kind their label ends with. */
const AUTH0_ENTERPRISE: Readonly<Record<string, string>> = {
  samlp: 'saml',
  adfs: 'saml',
  waad: 'oidc',
  oidc: 'oidc',
  okta: 'oidc',
};

/** Keycloak identity provider aliases (federatedIdentities[].identityProvider) as Tessera labels. */
export const KEYCLOAK_PROVIDERS: Readonly<Record<string, string>> = {
  google: 'google_oauth2',
  apple: 'apple_oauth2',
  microsoft: 'microsoft_oauth2',
  github: 'github_oauth2',
  facebook: 'facebook_oauth2',
  gitlab: 'gitlab_oauth2',
  linkedin: 'linkedin_oauth2',
  'linkedin-openid-connect': 'linkedin_oauth2',
  twitter: 'twitter_oauth2',
  saml: 'enterprise_saml',
  oidc: 'enterprise_oidc',
  'keycloak-oidc': 'keycloak_oidc',
};

/** Keycloak's built-in realm roles, given to every user: not the application's roles. */
function isBuiltInRealmRole(role: string): boolean {
  return (
    role === 'offline_access' || role === 'uma_authorization' || role.startsWith('default-roles-')
  );
}

/**
 * Parses `provider_map` (`name:label,name:label`): a map, or the entry that is not of that form.
 * A label is checked as a provider label.
 */
export function parseProviderMap(
  text: string,
): { ok: true; map: Map<string, string> } | { ok: false; detail: string } {
  const map = new Map<string, string>();
  if (text.trim() === '') return { ok: true, map };
  for (const entry of text.split(',')) {
    const at = entry.lastIndexOf(':');
    const name = entry.slice(0, at).trim();
    const label = entry.slice(at + 1).trim();
    if (at <= 0 || name === '' || !isValidUserField.provider(label)) {
      return {
        ok: false,
        detail: `"${entry.slice(0, 100)}" is not name:label with a provider label such as google_oauth2`,
      };
    }
    map.set(name, label);
  }
  return { ok: true, map };
}

/** Maps one parsed line of `format` to a user's input. */
export function mapLine(format: ImportFormat, value: unknown, context: FormatContext): MappedLine {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalidLine('', 'the line is not a JSON object');
  }
  const line = value as Record<string, unknown>;
  if (format === 'auth0') return mapAuth0(line, context);
  if (format === 'keycloak') return mapKeycloak(line, context);
  return mapTessera(line);
}

/** Members of an export line that are read-only: read past. */
const TESSERA_READ_ONLY = new Set(['id', 'client_id', 'created_at', 'updated_at']);

function mapTessera(line: Record<string, unknown>): MappedLine {
  const input: Record<string, unknown> = {};
  for (const [member, memberValue] of Object.entries(line)) {
    if (!TESSERA_READ_ONLY.has(member)) input[member] = memberValue;
  }
  const id = line.id;
  if (id !== undefined && !isUserId(id)) {
    return invalidLine('/id', 'must be a string of 1 to 128 characters without control characters');
  }
  return {
    ok: true,
    user: {
      input,
      id: id ?? null,
      sets: { active: 'active' in line, externalId: 'external_id' in line },
      sources: {},
    },
  };
}

function isUserId(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= 128 &&
    ![...value].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)
  );
}

function mapAuth0(line: Record<string, unknown>, context: FormatContext): MappedLine {
  const identities = Array.isArray(line.identities) ? (line.identities as unknown[]) : [];
  const userId = typeof line.user_id === 'string' ? line.user_id : null;
  // The primary identity is the one user_id names (`<provider>|<id>`); else the first.
  let index = identities.findIndex(
    (identity) =>
      isRecord(identity) &&
      userId !== null &&
      userId === `${String(identity.provider)}|${String(identity.user_id)}`,
  );
  if (index === -1 && identities.length > 0) index = 0;
  let providerName: string;
  let connection: string | null = null;
  let identifier: unknown;
  let providerSource: string;
  let identifierSource: string;
  if (index >= 0) {
    const identity = identities[index];
    if (!isRecord(identity)) return invalidLine(`/identities/${index}`, 'is not an object');
    if (typeof identity.provider !== 'string') {
      return invalidLine(`/identities/${index}/provider`, 'must be a string');
    }
    providerName = identity.provider;
    connection = typeof identity.connection === 'string' ? identity.connection : null;
    // Some providers' ids are numbers (GitHub's).
    identifier = typeof identity.user_id === 'number' ? String(identity.user_id) : identity.user_id;
    providerSource = `/identities/${index}/provider`;
    identifierSource = `/identities/${index}/user_id`;
  } else if (userId !== null && userId.includes('|')) {
    const bar = userId.indexOf('|');
    providerName = userId.slice(0, bar);
    identifier = userId.slice(bar + 1);
    providerSource = '/user_id';
    identifierSource = '/user_id';
  } else {
    return invalidLine(
      '/identities',
      'the user has no identity to take its provider and identifier from',
    );
  }
  const provider = auth0Label(providerName, connection, context);
  if (!provider.ok) return invalidLine(providerSource, provider.detail);
  const email = line.email;
  const appMetadata = isRecord(line.app_metadata) ? line.app_metadata : {};
  const roles = appMetadata.roles ?? [];
  const name =
    textOf(line.name) ||
    [textOf(line.given_name), textOf(line.family_name)].filter(Boolean).join(' ') ||
    textOf(line.nickname) ||
    (typeof email === 'string' ? nameFromText(email) : '') ||
    (typeof identifier === 'string' ? nameFromText(identifier) : '');
  return {
    ok: true,
    user: {
      input: {
        provider: provider.label,
        identifier,
        name,
        avatar: isValidUserField.avatar(line.picture) ? line.picture : null,
        email,
        locale: isValidUserField.locale(line.locale) ? line.locale : 'en',
        roles,
        scopes: [],
        active: line.blocked !== true,
      },
      id: null,
      sets: { active: true, externalId: false },
      sources: {
        provider: providerSource,
        identifier: identifierSource,
        name: '/name',
        email: '/email',
        roles: '/app_metadata/roles',
        active: '/blocked',
      },
    },
  };
}

function auth0Label(
  name: string,
  connection: string | null,
  context: FormatContext,
): { ok: true; label: string } | { ok: false; detail: string } {
  const mapped =
    (connection === null ? undefined : context.providerMap.get(connection)) ??
    context.providerMap.get(name) ??
    AUTH0_PROVIDERS[name];
  if (mapped !== undefined) return { ok: true, label: mapped };
  const kind = AUTH0_ENTERPRISE[name];
  if (kind !== undefined) {
    const label = enterpriseLabel(connection ?? 'enterprise', kind);
    if (label !== undefined) return { ok: true, label };
  }
  if (name === 'auth0') {
    return {
      ok: false,
      detail:
        "is Auth0's own database (users who sign in with a password), not a federated identity: " +
        'Tessera holds no passwords. Map it with provider_map=auth0:<label> if these users sign in through another provider',
    };
  }
  return unmapped(name);
}

/**
 * The label of an enterprise connection: its name in lower case, characters a label may not
 * hold as '-', without a trailing "-saml"/"_oidc" of the kind, then `_<kind>`: "Acme-SAML" →
 * "acme_saml".
 */
function enterpriseLabel(connection: string, kind: string): string | undefined {
  const base = connection
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(new RegExp(`[-]*${kind}$`), '')
    .replace(/^-+|-+$/g, '');
  const label = `${base === '' ? 'enterprise' : base.slice(0, 63 - kind.length)}_${kind}`;
  return isValidUserField.provider(label) ? label : undefined;
}

function mapKeycloak(line: Record<string, unknown>, context: FormatContext): MappedLine {
  const federated = Array.isArray(line.federatedIdentities)
    ? (line.federatedIdentities as unknown[])
    : [];
  if (federated.length === 0) {
    return invalidLine(
      '/federatedIdentities',
      "the user has no federated identity (Keycloak's own users sign in with passwords, which Tessera does not hold)",
    );
  }
  // The first identity whose provider has a label; else the first, whose error is reported.
  let index = federated.findIndex(
    (identity) =>
      isRecord(identity) &&
      typeof identity.identityProvider === 'string' &&
      keycloakLabel(identity.identityProvider, context).ok,
  );
  if (index === -1) index = 0;
  const identity = federated[index];
  if (!isRecord(identity)) return invalidLine(`/federatedIdentities/${index}`, 'is not an object');
  if (typeof identity.identityProvider !== 'string') {
    return invalidLine(`/federatedIdentities/${index}/identityProvider`, 'must be a string');
  }
  const provider = keycloakLabel(identity.identityProvider, context);
  if (!provider.ok)
    return invalidLine(`/federatedIdentities/${index}/identityProvider`, provider.detail);
  const identifier = identity.userId;
  const email = line.email;
  const attributes = isRecord(line.attributes) ? line.attributes : {};
  const locales = Array.isArray(attributes.locale)
    ? (attributes.locale as unknown[])
    : [attributes.locale];
  const locale = locales[0];
  const roles: unknown[] = [];
  const roleSources: string[] = [];
  const seen = new Set<unknown>();
  const addRoles = (list: unknown, pointer: string, keep: (role: string) => boolean) => {
    if (!Array.isArray(list)) return;
    list.forEach((role, position) => {
      if (typeof role === 'string' && !keep(role)) return;
      if (seen.has(role)) return;
      seen.add(role);
      roles.push(role);
      roleSources.push(`${pointer}/${position}`);
    });
  };
  const clientRoles = isRecord(line.clientRoles) ? line.clientRoles : {};
  addRoles(
    clientRoles[context.keycloakClient],
    `/clientRoles/${escapePointer(context.keycloakClient)}`,
    () => true,
  );
  addRoles(line.realmRoles, '/realmRoles', (role) => !isBuiltInRealmRole(role));
  const name =
    [textOf(line.firstName), textOf(line.lastName)].filter(Boolean).join(' ') ||
    textOf(line.username) ||
    (typeof email === 'string' ? nameFromText(email) : '') ||
    (typeof identifier === 'string' ? nameFromText(identifier) : '');
  return {
    ok: true,
    user: {
      input: {
        provider: provider.label,
        identifier,
        name,
        avatar: null,
        email,
        locale: isValidUserField.locale(locale) ? locale : 'en',
        roles,
        scopes: [],
        active: line.enabled !== false,
      },
      id: null,
      sets: { active: true, externalId: false },
      sources: {
        provider: `/federatedIdentities/${index}/identityProvider`,
        identifier: `/federatedIdentities/${index}/userId`,
        name: '/firstName',
        email: '/email',
        roles: '/realmRoles',
        active: '/enabled',
      },
      elementSources: { roles: roleSources },
    },
  };
}

function keycloakLabel(
  alias: string,
  context: FormatContext,
): { ok: true; label: string } | { ok: false; detail: string } {
  const mapped = context.providerMap.get(alias) ?? KEYCLOAK_PROVIDERS[alias];
  if (mapped !== undefined) return { ok: true, label: mapped };
  for (const kind of ['saml', 'oidc']) {
    if (new RegExp(`.[-_]${kind}$`).test(alias.toLowerCase())) {
      const label = enterpriseLabel(alias, kind);
      if (label !== undefined) return { ok: true, label };
    }
  }
  return unmapped(alias);
}

/** A name with no default label: taken as it is when it is a label already. */
function unmapped(name: string): { ok: true; label: string } | { ok: false; detail: string } {
  if (isValidUserField.provider(name)) return { ok: true, label: name };
  return {
    ok: false,
    detail: `has no Tessera provider label for "${name.slice(0, 64)}": add provider_map=${name.slice(0, 64)}:<idp>_<kind>`,
  };
}

/** Where a UserInput error points in the line the input was mapped from. */
export function pointerInLine(
  user: Pick<MappedUser, 'sources' | 'elementSources'>,
  path: string,
): string {
  const [, member = '', ...rest] = path.split('/');
  if (member === '') return path;
  const elements = user.elementSources?.[member];
  if (elements !== undefined && rest.length > 0) {
    const element = elements[Number(rest[0])];
    if (element !== undefined) return [element, ...rest.slice(1)].join('/');
  }
  const source = user.sources[member];
  if (source === undefined) return path;
  return rest.length === 0 ? source : `${source}/${rest.join('/')}`;
}

function invalidLine(path: string, detail: string): MappedLine {
  return { ok: false, errors: [{ path, detail }] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? nameFromText(value) : '';
}

function escapePointer(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}
