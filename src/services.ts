// The services, composed: each one built once from the store, the clock and the settings, in
// the order they need each other. The app (app.ts), the CLI and the tests all start here; the
// modules never import this file: each declares the services it needs, and gets them passed in.

import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import type { Metrics } from './http/metrics.js';
import { ApiKeyAuthenticator } from './modules/api-keys/api-key-authenticator.service.js';
import { ApiKeysService } from './modules/api-keys/api-keys.service.js';
import { ApplicationsService } from './modules/applications/applications.service.js';
import { AuthzenService } from './modules/authzen/authzen.service.js';
import { type ConsoleSessionLimits, ConsoleSessions } from './modules/console/console.service.js';
import { ConsoleOidc, type ConsoleOidcSettings } from './modules/console/console-oidc.service.js';
import { EventsService } from './modules/events/events.service.js';
import { ImportsService } from './modules/imports/imports.service.js';
import { ScimGroupsService } from './modules/scim/scim-groups.service.js';
import { ScimService } from './modules/scim/scim.service.js';
import { AccessTokens } from './modules/tokens/access-tokens.service.js';
import { ExternalTokenVerifier } from './modules/tokens/external-tokens.js';
import { SealedSecrets } from './modules/secret-key/secret-key.service.js';
import { SigningKeys } from './modules/tokens/signing-keys.service.js';
import { TokenExchange } from './modules/tokens/token-exchange.service.js';
import { DEFAULT_TOKEN_SETTINGS, type TokenSettings } from './modules/tokens/token-settings.js';
import { UsersService } from './modules/users/users.service.js';
import { WebhookSender } from './modules/webhooks/webhook-delivery.js';
import {
  type DispatcherOptions,
  WebhookDispatcher,
} from './modules/webhooks/webhook-dispatcher.js';
import { toEventPayload } from './modules/webhooks/webhook-payload.js';
import { WebhooksService } from './modules/webhooks/webhooks.service.js';
import type { OutboundPolicy } from './modules/outbound-fence.js';
import type { Store } from './store/store.js';

export interface Services {
  authenticator: ApiKeyAuthenticator;
  applications: ApplicationsService;
  users: UsersService;
  /** Bulk imports of users, as jobs. */
  imports: ImportsService;
  /** Authorization decisions (AuthZEN): who may take which action, from current records. */
  authzen: AuthzenService;
  apiKeys: ApiKeysService;
  signingKeys: SigningKeys;
  /** IAM_SECRET_KEY and the secrets sealed with it; re-sealing after a rotation. */
  secrets: SealedSecrets;
  accessTokens: AccessTokens;
  tokenExchange: TokenExchange;
  scim: ScimService;
  scimGroups: ScimGroupsService;
  webhooks: WebhooksService;
  /** Delivers events to webhooks in the background while the app runs. */
  webhookDispatcher: WebhookDispatcher;
  events: EventsService;
  consoleSessions: ConsoleSessions;
  /** Console sign-in through the organisation's OpenID provider; null: not configured. */
  consoleOidc: ConsoleOidc | null;
}

/** How webhooks are delivered (IAM_ALLOW_INSECURE_WEBHOOKS; the rest for tests and benches). */
export interface WebhookSettings {
  /** Lift the outbound fence's scheme and address rules (local receivers, tests). */
  allowInsecure: boolean;
  dispatcher?: Partial<DispatcherOptions>;
  /** The attempt timeout (default 15 s). */
  timeoutMs?: number;
}

export function createServices(deps: {
  store: Store;
  clock: Clock;
  log: FastifyBaseLogger;
  tokens?: TokenSettings;
  webhooks?: WebhookSettings;
  /** The version in the User-Agent of webhook deliveries. */
  version?: string;
  /** Where the services report what they did (JWKS fetches); none in the CLI. */
  metrics?: Metrics;
  /** Admin console session limits; the defaults (30 min idle, 8 h) unless given. */
  console?: ConsoleSessionLimits;
  /** Console sign-in through an OpenID provider (IAM_CONSOLE_OIDC_*); none unless given. */
  consoleOidc?: ConsoleOidcSettings | null;
  /**
   * The outbound fences as the cluster decides them (ClusterSettings, read at each use);
   * without it, the instance's own settings (webhooks.allowInsecure, tokens.allowInsecureJwks).
   */
  outbound?: { webhooks: OutboundPolicy; jwks: OutboundPolicy };
}): Services {
  const { store, clock, log } = deps;
  const webhookSettings: WebhookSettings = deps.webhooks ?? { allowInsecure: false };
  const tokens = deps.tokens ?? DEFAULT_TOKEN_SETTINGS;
  const webhookPolicy = deps.outbound?.webhooks ?? { allowInsecure: webhookSettings.allowInsecure };
  const jwksPolicy = deps.outbound?.jwks ?? { allowInsecure: tokens.allowInsecureJwks };
  const authenticator = new ApiKeyAuthenticator(
    { store, clock },
    { onTouchFailed: (error) => log.warn({ err: error }, 'could not record an API key use') },
  );
  const users = new UsersService({ store, clock });
  const applications = new ApplicationsService({ store, clock });
  const secrets = new SealedSecrets({
    store,
    clock,
    secretKey: tokens.secretKey ?? null,
    previousSecretKey: tokens.previousSecretKey ?? null,
  });
  const signingKeys = new SigningKeys({ store, clock, algorithm: tokens.algorithm, secrets });
  const accessTokens = new AccessTokens({
    users,
    clock,
    signingKeys,
    issuer: tokens.issuer,
  });
  const verifier = new ExternalTokenVerifier({
    clock,
    policy: jwksPolicy,
    ...(tokens.jwksCooldownMs === undefined ? {} : { cooldownMs: tokens.jwksCooldownMs }),
    ...(tokens.jwksCacheMaxAgeMs === undefined ? {} : { cacheMaxAgeMs: tokens.jwksCacheMaxAgeMs }),
    ...(deps.metrics === undefined
      ? {}
      : { onJwksFetch: deps.metrics.jwksFetched.bind(deps.metrics) }),
  });
  // The dispatcher is told about webhook changes (after both exist).
  const webhooks = new WebhooksService({
    store,
    clock,
    policy: webhookPolicy,
    secrets,
    onChange: () => dispatcher.reconsider(),
  });
  const dispatcher = new WebhookDispatcher({
    store,
    webhooks,
    sender: new WebhookSender({
      policy: webhookPolicy,
      userAgent: `Tessera-Webhooks/${deps.version ?? 'dev'}`,
      ...(webhookSettings.timeoutMs === undefined ? {} : { timeoutMs: webhookSettings.timeoutMs }),
    }),
    toPayload: toEventPayload,
    log,
    ...(deps.metrics === undefined
      ? {}
      : { onAttempt: deps.metrics.webhookAttempted.bind(deps.metrics) }),
    ...(webhookSettings.dispatcher === undefined ? {} : { options: webhookSettings.dispatcher }),
  });
  return {
    authenticator,
    applications,
    users,
    imports: new ImportsService({
      store,
      clock,
      users,
      onJobError: (jobId, error) => log.error({ err: error, import_id: jobId }, 'an import failed'),
    }),
    authzen: new AuthzenService({ store }),
    apiKeys: new ApiKeysService({ store, clock, authenticator }),
    signingKeys,
    secrets,
    accessTokens,
    tokenExchange: new TokenExchange({ applications, verifier, accessTokens, users }),
    scim: new ScimService({ store, applications, users }),
    scimGroups: new ScimGroupsService({ store, users, clock }),
    webhooks,
    webhookDispatcher: dispatcher,
    events: new EventsService({ store, clock }),
    consoleSessions: new ConsoleSessions({
      store,
      clock,
      authenticator,
      ...(deps.console === undefined ? {} : { limits: deps.console }),
    }),
    consoleOidc:
      deps.consoleOidc === undefined || deps.consoleOidc === null
        ? null
        : new ConsoleOidc({ store, clock, settings: deps.consoleOidc }),
  };
}
