// Tessera's own access tokens (RFC 9068): a JWT signed with the current signing
// key, naming the user and the application, valid for the application's
// jwt_expiration_in_minutes.

import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { domainError } from '../../domain-error.js';
import type { ApplicationRecord, TokenUserRecord, UserIdentity } from '../../store/store.js';
import type { UsersService } from '../users/users.service.js';
import type { SigningKeys } from './signing-keys.service.js';

export interface IssuedToken {
  accessToken: string;
  /** Seconds until it expires. */
  expiresIn: number;
}

export class AccessTokens {
  constructor(
    private readonly deps: {
      users: UsersService;
      clock: Clock;
      signingKeys: SigningKeys;
      issuer: string;
    },
  ) {}

  /** The `iss` of every token (IAM_ISSUER). */
  get issuer(): string {
    return this.deps.issuer;
  }

  /**
   * A token for an existing, active user (the trusted back-end route); 404 for a missing one,
   * 409 for an inactive (deprovisioned) one.
   */
  async issueForUser(identity: UserIdentity): Promise<IssuedToken> {
    const { application, user } = await this.deps.users.findUserWithApplication(identity);
    if (!user.active) {
      throw domainError(
        'inactive',
        'The user is inactive (deprovisioned); activate it before issuing tokens for it.',
      );
    }
    return this.issue(application, user);
  }

  async issue(
    application: Pick<ApplicationRecord, 'clientId' | 'jwtExpirationInMinutes'>,
    user: TokenUserRecord,
  ): Promise<IssuedToken> {
    const signer = await this.deps.signingKeys.currentSigner();
    const issuedAt = Math.floor(this.deps.clock.now() / 1000);
    const expiresIn = 60 * application.jwtExpirationInMinutes;
    const accessToken = await signer.sign({
      iss: this.deps.issuer,
      sub: `${user.provider}|${user.identifier}`,
      aud: application.clientId,
      iat: issuedAt,
      exp: issuedAt + expiresIn,
      jti: randomUUID(),
      client_id: application.clientId,
      provider: user.provider,
      identifier: user.identifier,
      roles: user.roles,
      scopes: user.scopes,
      email: user.email,
      name: user.name,
      locale: user.locale,
    });
    return { accessToken, expiresIn };
  }
}
