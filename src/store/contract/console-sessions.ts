import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError } from '../errors.js';
import type { ConsoleSessionRecord, ConsoleSignInRecord } from '../store.js';
import { type ContractContext, T0 } from './fixtures.js';

function signInRecord(stateDigest: string, createdAt = T0): ConsoleSignInRecord {
  return {
    stateDigest,
    browserDigest: `browser-${stateDigest}`,
    nonce: `nonce-${stateDigest}`,
    codeVerifier: `verifier-${stateDigest}`,
    createdAt,
  };
}

function sessionRecord(
  idDigest: string,
  overrides: Partial<ConsoleSessionRecord> = {},
): ConsoleSessionRecord {
  return {
    idDigest,
    apiKeyId: 'key-1',
    keyDigest: 'f'.repeat(64),
    operator: null,
    csrfToken: `csrf-${idDigest}`,
    createdAt: T0,
    lastSeenAt: T0,
    ...overrides,
  };
}

export function describeConsoleSessionsContract(ctx: ContractContext): void {
  describe('console sessions', () => {
    it('finds what it stored, and nothing for another digest', async () => {
      const session = sessionRecord('a'.repeat(64), { createdAt: T0 + 1, lastSeenAt: T0 + 2 });
      await ctx.store.consoleSessions.insertConsoleSession(session);
      assert.deepEqual(
        await ctx.store.consoleSessions.findConsoleSession(session.idDigest),
        session,
      );
      assert.equal(await ctx.store.consoleSessions.findConsoleSession('b'.repeat(64)), undefined);
    });

    it('refuses a second session with the same digest', async () => {
      await ctx.store.consoleSessions.insertConsoleSession(sessionRecord('a'));
      await assert.rejects(
        ctx.store.consoleSessions.insertConsoleSession(sessionRecord('a', { apiKeyId: 'other' })),
        DuplicateError,
      );
      assert.equal((await ctx.store.consoleSessions.findConsoleSession('a'))?.apiKeyId, 'key-1');
    });

    it('moves last_seen_at forwards only', async () => {
      await ctx.store.consoleSessions.insertConsoleSession(sessionRecord('a'));
      await ctx.store.consoleSessions.touchConsoleSession('a', T0 + 5_000);
      await ctx.store.consoleSessions.touchConsoleSession('a', T0 + 1_000);
      assert.equal(
        (await ctx.store.consoleSessions.findConsoleSession('a'))?.lastSeenAt,
        T0 + 5_000,
      );
    });

    it('deletes one session, once', async () => {
      await ctx.store.consoleSessions.insertConsoleSession(sessionRecord('a'));
      await ctx.store.consoleSessions.insertConsoleSession(sessionRecord('b'));
      assert.equal(await ctx.store.consoleSessions.deleteConsoleSession('a'), true);
      assert.equal(await ctx.store.consoleSessions.deleteConsoleSession('a'), false);
      assert.equal(await ctx.store.consoleSessions.findConsoleSession('a'), undefined);
      assert.ok(await ctx.store.consoleSessions.findConsoleSession('b'));
    });

    it('deletes the sessions idle or old past the given times, and only those', async () => {
      await ctx.store.consoleSessions.insertConsoleSession(
        sessionRecord('idle', { createdAt: T0 + 100, lastSeenAt: T0 + 100 }),
      );
      await ctx.store.consoleSessions.insertConsoleSession(
        sessionRecord('old', { createdAt: T0, lastSeenAt: T0 + 1_000 }),
      );
      await ctx.store.consoleSessions.insertConsoleSession(
        sessionRecord('live', { createdAt: T0 + 100, lastSeenAt: T0 + 1_000 }),
      );
      assert.equal(
        await ctx.store.consoleSessions.deleteExpiredConsoleSessions(T0 + 500, T0 + 50),
        2,
      );
      assert.equal(await ctx.store.consoleSessions.findConsoleSession('idle'), undefined);
      assert.equal(await ctx.store.consoleSessions.findConsoleSession('old'), undefined);
      assert.ok(await ctx.store.consoleSessions.findConsoleSession('live'));
    });

    it("keeps an operator's session, who they are and their powers, without a key", async () => {
      const session = sessionRecord('op', {
        apiKeyId: null,
        keyDigest: null,
        operator: {
          issuer: 'https://idp.example.test/realms/ops',
          subject: 'f3b0c2',
          name: 'Ada Lovelace',
          roles: ['users:read', 'events:read'],
          applications: ['shop-web'],
        },
      });
      await ctx.store.consoleSessions.insertConsoleSession(session);
      assert.deepEqual(await ctx.store.consoleSessions.findConsoleSession('op'), session);
    });

    it('gives a sign-in begun to one taker, once', async () => {
      await ctx.store.consoleSessions.insertConsoleSignIn(signInRecord('s1'));
      await ctx.store.consoleSessions.insertConsoleSignIn(signInRecord('s2'));
      await assert.rejects(
        ctx.store.consoleSessions.insertConsoleSignIn(signInRecord('s1')),
        DuplicateError,
      );
      const takers = await Promise.all([
        ctx.store.consoleSessions.takeConsoleSignIn('s1'),
        ctx.store.consoleSessions.takeConsoleSignIn('s1'),
      ]);
      assert.deepEqual(
        takers.filter((taken) => taken !== undefined),
        [signInRecord('s1')],
      );
      assert.equal(await ctx.store.consoleSessions.takeConsoleSignIn('s1'), undefined);
      assert.deepEqual(await ctx.store.consoleSessions.takeConsoleSignIn('s2'), signInRecord('s2'));
    });

    it('deletes the sign-ins begun before the given time, and only those', async () => {
      await ctx.store.consoleSessions.insertConsoleSignIn(signInRecord('old', T0));
      await ctx.store.consoleSessions.insertConsoleSignIn(signInRecord('new', T0 + 1_000));
      assert.equal(await ctx.store.consoleSessions.deleteExpiredConsoleSignIns(T0 + 500), 1);
      assert.equal(await ctx.store.consoleSessions.takeConsoleSignIn('old'), undefined);
      assert.ok(await ctx.store.consoleSessions.takeConsoleSignIn('new'));
    });
  });
}
