import type {
  ConsoleOperator,
  ConsoleSessionRecord,
  ConsoleSessionRepository,
  ConsoleSignInRecord,
} from '../store.js';
import type { SqlExecutor } from './sql-executor.js';

export class SqlConsoleSessionRepository implements ConsoleSessionRepository {
  constructor(private readonly sql: SqlExecutor) {}

  async insertConsoleSession(session: ConsoleSessionRecord): Promise<void> {
    await this.sql.write([
      this.sql.db
        .insertInto('console_sessions')
        .values({
          id_digest: session.idDigest,
          api_key_id: session.apiKeyId,
          key_digest: session.keyDigest,
          operator: session.operator === null ? null : JSON.stringify(session.operator),
          csrf_token: session.csrfToken,
          created_at: session.createdAt,
          last_seen_at: session.lastSeenAt,
        })
        .compile(),
    ]);
  }

  async findConsoleSession(idDigest: string): Promise<ConsoleSessionRecord | undefined> {
    const [row] = await this.sql.select(
      this.sql.db
        .selectFrom('console_sessions')
        .selectAll()
        .where('id_digest', '=', idDigest)
        .compile(),
    );
    return (
      row && {
        idDigest: row.id_digest,
        apiKeyId: row.api_key_id,
        keyDigest: row.key_digest,
        operator: row.operator === null ? null : (JSON.parse(row.operator) as ConsoleOperator),
        csrfToken: row.csrf_token,
        createdAt: Number(row.created_at),
        lastSeenAt: Number(row.last_seen_at),
      }
    );
  }

  async touchConsoleSession(idDigest: string, lastSeenAt: number): Promise<void> {
    await this.sql.write([
      this.sql.db
        .updateTable('console_sessions')
        .set({ last_seen_at: lastSeenAt })
        .where('id_digest', '=', idDigest)
        .where('last_seen_at', '<', lastSeenAt)
        .compile(),
    ]);
  }

  async deleteConsoleSession(idDigest: string): Promise<boolean> {
    const [deleted] = await this.sql.write([
      this.sql.db.deleteFrom('console_sessions').where('id_digest', '=', idDigest).compile(),
    ]);
    return deleted === 1;
  }

  async deleteExpiredConsoleSessions(idleSince: number, createdSince: number): Promise<number> {
    const [deleted] = await this.sql.write([
      this.sql.db
        .deleteFrom('console_sessions')
        .where((eb) =>
          eb.or([eb('last_seen_at', '<', idleSince), eb('created_at', '<', createdSince)]),
        )
        .compile(),
    ]);
    return deleted ?? 0;
  }

  async insertConsoleSignIn(signIn: ConsoleSignInRecord): Promise<void> {
    await this.sql.write([
      this.sql.db
        .insertInto('console_sign_ins')
        .values({
          state_digest: signIn.stateDigest,
          browser_digest: signIn.browserDigest,
          nonce: signIn.nonce,
          code_verifier: signIn.codeVerifier,
          created_at: signIn.createdAt,
        })
        .compile(),
    ]);
  }

  async takeConsoleSignIn(stateDigest: string): Promise<ConsoleSignInRecord | undefined> {
    // One DELETE … RETURNING: of two callbacks with the same state, one gets the row.
    const [row] = await this.sql.writeReturning(
      this.sql.db
        .deleteFrom('console_sign_ins')
        .where('state_digest', '=', stateDigest)
        .returningAll()
        .compile(),
    );
    return (
      row && {
        stateDigest: row.state_digest,
        browserDigest: row.browser_digest,
        nonce: row.nonce,
        codeVerifier: row.code_verifier,
        createdAt: Number(row.created_at),
      }
    );
  }

  async deleteExpiredConsoleSignIns(createdSince: number): Promise<number> {
    const [deleted] = await this.sql.write([
      this.sql.db.deleteFrom('console_sign_ins').where('created_at', '<', createdSince).compile(),
    ]);
    return deleted ?? 0;
  }
}
