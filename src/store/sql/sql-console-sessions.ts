import type { ConsoleSessionRecord, ConsoleSessionRepository } from '../store.js';
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
}
