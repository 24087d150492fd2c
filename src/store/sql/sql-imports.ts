import type { CompiledQuery, Selectable } from 'kysely';
import type {
  ImportBatch,
  ImportCounts,
  ImportErrorPosition,
  ImportErrorRecord,
  ImportJobRecord,
  ImportJobRepository,
  ImportStatus,
  NewEvent,
  PageQuery,
} from '../store.js';
import { ConditionFailedError } from '../errors.js';
import type { SqlExecutor } from './sql-executor.js';
import { type EventRow, toEventRow, toMillis, toOptionalMillis } from './rows.js';
import type { SqlUserRepository } from './sql-users.js';
import type { ImportJobsTable } from './tables.js';

// Users per INSERT of a batch: 19 parameters a row make an array of 4,750 values, below V8's
// large-object size (a batch's 19,000 went straight to the old generation, a full GC to free).
const USERS_PER_INSERT = 250;
// Error lines per INSERT: 5 parameters a row.
const ERRORS_PER_INSERT = 1000;

// An import's inserts counted before the planner's statistics of the users are refreshed: at
// least this many, and at least as many users as those statistics counted (so a table's
// statistics are refreshed each time it has about doubled, a few times a million users).
const ANALYZE_AFTER_INSERTS = 10_000;

export class SqlImportRepository implements ImportJobRepository {
  /** Users this process's imports inserted since the statistics were last refreshed. */
  #insertedSinceAnalyze = 0;
  /** How many users those statistics counted. */
  #analyzedUsers = 0;
  #analyzing: Promise<void> | undefined;

  constructor(
    private readonly sql: SqlExecutor,
    private readonly users: SqlUserRepository,
  ) {}

  async insertImportJob(job: ImportJobRecord): Promise<void> {
    await this.sql.write([
      this.sql.db
        .insertInto('import_jobs')
        .values({
          id: job.id,
          application: job.clientId,
          format: job.format,
          dry_run: job.dryRun ? 1 : 0,
          on_conflict: job.onConflict,
          status: job.status,
          ...countColumns(job.counts),
          failure: job.failure,
          started_by: job.startedBy,
          created_at: job.createdAt,
          updated_at: job.updatedAt,
          finished_at: job.finishedAt,
        })
        .compile(),
    ]);
  }

  async findImportJob(id: string): Promise<ImportJobRecord | undefined> {
    const [row] = await this.sql.select(
      this.sql.db.selectFrom('import_jobs').selectAll().where('id', '=', id).compile(),
    );
    return row && toImportJobRecord(row);
  }

  // Not async: the statements and event rows are made at once, and the batch's records and
  // events are not kept while the transaction waits (see ImportBatchWriter in the imports).
  recordImportBatch(
    jobId: string,
    batch: ImportBatch,
    events: readonly NewEvent[],
  ): Promise<boolean> {
    const { db } = this.sql;
    // The job's row first: a cancelled job's batch changes nothing, and every statement must
    // change a row (a changed user's version moved on: the whole batch is left unwritten).
    const statements = [
      db
        .updateTable('import_jobs')
        .set({ ...countColumns(batch.counts), updated_at: batch.recordedAt })
        .where('id', '=', jobId)
        .where('status', '=', 'running')
        .compile(),
      ...(batch.inserts.length === 0
        ? []
        : this.users.insertStatements(batch.inserts, USERS_PER_INSERT)),
      ...batch.changes.map((change) =>
        this.users.replaceStatement(change.next, change.expectedEtag),
      ),
      ...errorInserts(jobId, batch.errors, this.sql),
    ];
    return this.#writeBatch(statements, events.map(toEventRow), batch.inserts.length);
  }

  async #writeBatch(
    statements: CompiledQuery[],
    events: EventRow[],
    inserted: number,
  ): Promise<boolean> {
    try {
      await this.sql.write(statements, { everyStatementChanges: true, events });
      await this.#keepStatistics(inserted);
      return true;
    } catch (error) {
      if (error instanceof ConditionFailedError) return false;
      throw error;
    }
  }

  /**
   * PostgreSQL's planner chooses the users' indexes from statistics that autovacuum refreshes
   * about once a minute, after a tenth of the table changed. An import grows the table faster
   * than that: with statistics taken when it held a few rows, the planner read a user by its key
   * through the smallest index on the application alone, filtering every user of it (300 ms a
   * GET user at 200,000 users, and an import's lookup of 250 keys past the statement timeout).
   * So the import refreshes them itself each time the table has about doubled. A refresh that
   * fails is left to autovacuum: it changes no data.
   */
  async #keepStatistics(inserted: number): Promise<void> {
    if (this.sql.analyze === undefined || inserted === 0) return;
    this.#insertedSinceAnalyze += inserted;
    if (this.#insertedSinceAnalyze < Math.max(ANALYZE_AFTER_INSERTS, this.#analyzedUsers)) return;
    // Jobs running side by side share one refresh.
    this.#analyzing ??= this.sql
      .analyze('users')
      .then(
        (users) => {
          this.#analyzedUsers = users;
          this.#insertedSinceAnalyze = 0;
        },
        () => {
          this.#insertedSinceAnalyze = 0;
        },
      )
      .finally(() => (this.#analyzing = undefined));
    await this.#analyzing;
  }

  async finishImportJob(
    id: string,
    status: Exclude<ImportStatus, 'running'>,
    finishedAt: number,
    failure: string | null,
  ): Promise<boolean> {
    const [changed] = await this.sql.write([
      this.sql.db
        .updateTable('import_jobs')
        .set({ status, failure, finished_at: finishedAt, updated_at: finishedAt })
        .where('id', '=', id)
        .where('status', '=', 'running')
        .compile(),
    ]);
    return changed === 1;
  }

  async touchImportJob(id: string, at: number): Promise<void> {
    await this.sql.write([
      this.sql.db
        .updateTable('import_jobs')
        .set({ updated_at: at })
        .where('id', '=', id)
        .where('status', '=', 'running')
        .where('updated_at', '<', at)
        .compile(),
    ]);
  }

  async listImportErrors(
    jobId: string,
    page: PageQuery<ImportErrorPosition>,
  ): Promise<(ImportErrorRecord & ImportErrorPosition)[]> {
    let query = this.sql.db
      .selectFrom('import_errors')
      .select(['line', 'position', 'pointer', 'detail'])
      .where('job_id', '=', jobId);
    const after = page.after;
    if (after !== null) {
      query = query.where((eb) =>
        eb.or([
          eb('line', '>', after.line),
          eb.and([eb('line', '=', after.line), eb('position', '>', after.index)]),
        ]),
      );
    }
    const rows = await this.sql.select(
      query.orderBy('line').orderBy('position').limit(page.limit).compile(),
    );
    return rows.map((row) => ({
      line: Number(row.line),
      index: Number(row.position),
      pointer: row.pointer,
      detail: row.detail,
    }));
  }
}

/** The INSERTs of a batch's error lines; a line's errors are numbered in the order given. */
function errorInserts(jobId: string, errors: readonly ImportErrorRecord[], sql: SqlExecutor) {
  const rows: {
    job_id: string;
    line: number;
    position: number;
    pointer: string;
    detail: string;
  }[] = [];
  let previous = -1;
  let position = 0;
  for (const error of errors) {
    position = error.line === previous ? position + 1 : 0;
    previous = error.line;
    rows.push({ job_id: jobId, line: error.line, position, ...pick(error) });
  }
  const statements = [];
  for (let start = 0; start < rows.length; start += ERRORS_PER_INSERT) {
    statements.push(
      sql.db
        .insertInto('import_errors')
        .values(rows.slice(start, start + ERRORS_PER_INSERT))
        .compile(),
    );
  }
  return statements;
}

function pick(error: ImportErrorRecord): { pointer: string; detail: string } {
  return { pointer: error.pointer, detail: error.detail };
}

function countColumns(counts: ImportCounts) {
  return {
    lines_read: counts.read,
    created_count: counts.created,
    updated_count: counts.updated,
    unchanged_count: counts.unchanged,
    skipped_count: counts.skipped,
    invalid_count: counts.invalid,
  };
}

function toImportJobRecord(row: Selectable<ImportJobsTable>): ImportJobRecord {
  return {
    id: row.id,
    clientId: row.application,
    format: row.format as ImportJobRecord['format'],
    dryRun: Number(row.dry_run) === 1,
    onConflict: row.on_conflict as ImportJobRecord['onConflict'],
    status: row.status as ImportStatus,
    counts: {
      read: Number(row.lines_read),
      created: Number(row.created_count),
      updated: Number(row.updated_count),
      unchanged: Number(row.unchanged_count),
      skipped: Number(row.skipped_count),
      invalid: Number(row.invalid_count),
    },
    failure: row.failure,
    startedBy: row.started_by,
    createdAt: toMillis(row.created_at),
    updatedAt: toMillis(row.updated_at),
    finishedAt: toOptionalMillis(row.finished_at),
  };
}
