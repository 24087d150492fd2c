import { randomUUID } from 'node:crypto';
import secureJson from 'secure-json-parse';
import type { Clock } from '../../clock.js';
import { type FieldError, domainError } from '../../domain-error.js';
import { MAX_JSON_DEPTH, exceedsJsonDepth } from '../../http/content-types.js';
import { DuplicateError, MissingParentError, USER_NAME_INDEX } from '../../store/errors.js';
import type {
  ImportConflictPolicy,
  ImportCounts,
  ImportErrorPosition,
  ImportErrorRecord,
  ImportFormat,
  ImportJobRecord,
  Store,
} from '../../store/store.js';
import { applicationNotFound } from '../applications/applications.service.js';
import type { ChangeOrigin } from '../changes.js';
import { checkUser } from '../users/users.domain.js';
import type {
  ImportOutcome,
  ImportPlan,
  ImportedUser,
  UsersService,
} from '../users/users.service.js';
import { type MappedUser, mapLine, pointerInLine } from './imports.formats.js';

// The console reads its upload form's provider map as the API reads its query.
export { parseProviderMap } from './imports.formats.js';
import { type SourceItem, jsonDocumentUsers, ndjsonLines } from './imports.lines.js';

/** How an import reads its body and what it does with users that exist. */
export interface ImportOptions {
  format: ImportFormat;
  dryRun: boolean;
  onConflict: ImportConflictPolicy;
  /** Source provider names → Tessera labels, over the format's defaults. */
  providerMap: ReadonlyMap<string, string>;
  /** Keycloak: whose clientRoles become roles; the application's client_id when null. */
  keycloakClient: string | null;
  /** NDJSON (one user a line), or a JSON document with a `users` array (a Keycloak realm export). */
  layout: 'ndjson' | 'document';
}

/**
 * The largest import body taken, by the API and the console alike (it is spooled to a temporary
 * file, not held in memory).
 */
export const MAX_IMPORT_BYTES = 8 * 1024 ** 3;

/**
 * Lines a batch holds: its users are read, planned and written together, in one transaction.
 * Kept short for two reasons. On SQLite the write holds the event loop (1,000 users took ~25 ms
 * on a quiet machine), and requests wait behind it. And what a batch holds lives until its
 * commit: past V8's young generation it is promoted, and the old generation grew by ~100 MB
 * before its next full GC (500 lines a batch: +143 MB RSS over 60,000 users; 250: +41 to +58
 * MB; bench/README.md). A commit costs 2–3 ms, so shorter batches cost throughput. While the
 * write waits on the store only the batch's users and its statements are held (see #record).
 */
export const IMPORT_BATCH_LINES = 250;

/** Error lines kept per job; past them lines are still counted invalid, but not listed. */
export const MAX_STORED_ERRORS = 100_000;

/** A running job records progress at least this often, so its heartbeat says it is alive. */
const HEARTBEAT_MS = 15_000;

/** A running job that recorded nothing for this long has lost its runner (a killed server). */
export const STALE_JOB_MS = 60_000;

/** How often a batch is planned again when a user it changes moved on meanwhile. */
const BATCH_ATTEMPTS = 5;

export const INTERRUPTED =
  'interrupted: the server running the import stopped before it finished; import the same file again (an import converges: what was written is found unchanged)';

const ZERO: ImportCounts = {
  read: 0,
  created: 0,
  updated: 0,
  unchanged: 0,
  skipped: 0,
  invalid: 0,
};

/**
 * A line read, mapped and checked, waiting for its batch: the user, and where its members came
 * from in the line (for error pointers); not the parsed line itself, nor its mapped input.
 */
interface PendingUser {
  line: number;
  sources: Pick<MappedUser, 'sources' | 'elementSources'>;
  user: ImportedUser;
}

/**
 * Bulk imports as jobs. A job reads its body item by item (constant memory), maps each item to
 * a user through its format, checks it with the users' domain rules, and writes batches of
 * users with their events, its error lines and its counts in one transaction each (see
 * ImportJobRepository.recordImportBatch): whatever stops it, what it acknowledged is written,
 * and running the same file again converges.
 */
export class ImportsService {
  /** Jobs this process runs: cancelling one stops it at its next item. */
  readonly #running = new Map<string, AbortController>();

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      users: UsersService;
      /** Told when a job fails for a reason of the service's (a store error), for the log. */
      onJobError?: (jobId: string, error: unknown) => void;
    },
  ) {}

  /**
   * Creates a running job for the application and starts reading `source` in the background.
   * Returns the job as created, and a promise of it finished (never rejects). `not_found`
   * without the application.
   */
  async startImport(
    clientId: string,
    source: AsyncIterable<Uint8Array>,
    options: ImportOptions,
    origin: ChangeOrigin,
  ): Promise<{ job: ImportJobRecord; finished: Promise<ImportJobRecord> }> {
    const now = this.deps.clock.now();
    const job: ImportJobRecord = {
      id: randomUUID(),
      clientId,
      format: options.format,
      dryRun: options.dryRun,
      onConflict: options.onConflict,
      status: 'running',
      counts: ZERO,
      failure: null,
      startedBy: origin.actor.type === 'api_key' ? origin.actor.id : null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    try {
      await this.deps.store.imports.insertImportJob(job);
    } catch (error) {
      if (error instanceof MissingParentError) throw applicationNotFound(clientId);
      throw error;
    }
    const controller = new AbortController();
    this.#running.set(job.id, controller);
    const finished = this.#run(job, source, options, origin, controller.signal).finally(() =>
      this.#running.delete(job.id),
    );
    return { job, finished };
  }

  /** The job as it stands; `not_found` when there is none, or none the caller may see. */
  async findImport(
    id: string,
    visibleClientIds: readonly string[] | null,
  ): Promise<ImportJobRecord> {
    const job = await this.deps.store.imports.findImportJob(id);
    // A job outside a restricted key's applications is answered as missing: no probing.
    if (
      job === undefined ||
      (visibleClientIds !== null && !visibleClientIds.includes(job.clientId))
    ) {
      throw domainError('not_found', `There is no import "${id}".`, { resource: 'other' });
    }
    return this.#present(job);
  }

  /** A page of the job's error lines, in line order. */
  async listImportErrors(
    id: string,
    visibleClientIds: readonly string[] | null,
    after: ImportErrorPosition | null,
    limit: number,
  ): Promise<(ImportErrorRecord & ImportErrorPosition)[]> {
    await this.findImport(id, visibleClientIds);
    return this.deps.store.imports.listImportErrors(id, { after, limit });
  }

  /**
   * Cancels a running job: it stops at its next line, on whichever instance runs it; what it
   * wrote stays written. `conflict` when the job has finished already.
   */
  async cancelImport(
    id: string,
    visibleClientIds: readonly string[] | null,
  ): Promise<ImportJobRecord> {
    const job = await this.findImport(id, visibleClientIds);
    const cancelled = await this.deps.store.imports.finishImportJob(
      id,
      'cancelled',
      this.deps.clock.now(),
      null,
    );
    if (!cancelled) {
      throw domainError(
        'conflict',
        `The import "${id}" has ${job.status} already; it cannot be cancelled.`,
        {
          rule: 'other',
        },
      );
    }
    this.#running.get(id)?.abort();
    return this.findImport(id, visibleClientIds);
  }

  /** A running job nobody has moved on for STALE_JOB_MS is shown failed: its runner is gone. */
  #present(job: ImportJobRecord): ImportJobRecord {
    if (
      job.status === 'running' &&
      !this.#running.has(job.id) &&
      this.deps.clock.now() - job.updatedAt > STALE_JOB_MS
    ) {
      return { ...job, status: 'failed', failure: INTERRUPTED, finishedAt: job.updatedAt };
    }
    return job;
  }

  async #run(
    job: ImportJobRecord,
    source: AsyncIterable<Uint8Array>,
    options: ImportOptions,
    origin: ChangeOrigin,
    signal: AbortSignal,
  ): Promise<ImportJobRecord> {
    const batch = new ImportBatchWriter(this.deps, job, options, {
      actor: { type: 'import', id: job.id },
      requestId: origin.requestId,
    });
    const heartbeat = setInterval(() => {
      this.deps.store.imports.touchImportJob(job.id, this.deps.clock.now()).catch(() => undefined);
    }, HEARTBEAT_MS);
    heartbeat.unref();
    let status: 'succeeded' | 'failed' = 'succeeded';
    let failure: string | null = null;
    try {
      const items = options.layout === 'document' ? jsonDocumentUsers(source) : ndjsonLines(source);
      for await (const item of items) {
        if (signal.aborted) break;
        batch.add(item);
        if (batch.full()) {
          if (!(await batch.flush())) break;
          // The rest of the chunk read is parsed and planned in this same task otherwise: let
          // the requests waiting meanwhile (a GET user) be answered between two batches.
          await yieldToRequests();
        }
      }
      if (!signal.aborted) await batch.flush();
    } catch (error) {
      status = 'failed';
      failure = failureOf(error);
      if (!(error instanceof SourceError)) this.deps.onJobError?.(job.id, error);
    } finally {
      clearInterval(heartbeat);
    }
    await this.deps.store.imports
      .finishImportJob(job.id, status, this.deps.clock.now(), failure)
      .catch((error: unknown) => this.deps.onJobError?.(job.id, error));
    return (await this.deps.store.imports.findImportJob(job.id).catch(() => undefined)) ?? job;
  }
}

/** Resolves on the event loop's next turn, after the I/O that waits. */
function yieldToRequests(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The body could not be read to its end (the client went away, the file failed). */
export class SourceError extends Error {
  override readonly name = 'SourceError';
}

function failureOf(error: unknown): string {
  if (error instanceof SourceError) return error.message;
  if (error instanceof MissingParentError) return 'the application was deleted during the import';
  return 'the store failed during the import; import the same file again to finish it';
}

/**
 * The batch a job is filling: lines read since the last write, their users and error lines,
 * and the counts as last written.
 */
class ImportBatchWriter {
  #pending: PendingUser[] = [];
  #keys = new Set<string>();
  #errors: ImportErrorRecord[] = [];
  /** Lines read into this batch, and invalid among them before planning. */
  #read = 0;
  #invalid = 0;
  #written: ImportCounts = ZERO;
  #storedErrors = 0;
  /** A line whose user this batch holds already: written first, then the line is added. */
  #held: SourceItem[] = [];

  constructor(
    private readonly deps: { store: Store; clock: Clock; users: UsersService },
    private readonly job: ImportJobRecord,
    private readonly options: ImportOptions,
    private readonly origin: ChangeOrigin,
  ) {}

  /** Reads one item into the batch. */
  add(item: SourceItem): void {
    if (item.error !== undefined)
      return this.#invalidLine(item.line, [{ path: '', detail: item.error }]);
    let value: unknown;
    try {
      if (exceedsJsonDepth(item.text, MAX_JSON_DEPTH)) {
        throw new SyntaxError(`nested deeper than ${MAX_JSON_DEPTH} levels`);
      }
      value = secureJson.parse(item.text, undefined, {
        protoAction: 'error',
        constructorAction: 'error',
      });
    } catch (error) {
      return this.#invalidLine(item.line, [
        { path: '', detail: `not valid JSON: ${(error as Error).message.slice(0, 200)}` },
      ]);
    }
    const mapped = mapLine(this.options.format, value, {
      providerMap: this.options.providerMap,
      keycloakClient: this.options.keycloakClient ?? this.job.clientId,
    });
    if (!mapped.ok) return this.#invalidLine(item.line, mapped.errors);
    const checked = checkUser(mapped.user.input);
    if (!checked.ok) {
      return this.#invalidLine(
        item.line,
        checked.errors.map((error) => ({ ...error, path: pointerInLine(mapped.user, error.path) })),
      );
    }
    const key = `${checked.value.provider}\u001f${checked.value.identifier}`;
    if (this.#keys.has(key)) {
      // The same user twice in one batch: it waits for the batch before it to be written.
      this.#held.push(item);
      return;
    }
    this.#read++;
    this.#keys.add(key);
    const { sources, elementSources } = mapped.user;
    this.#pending.push({
      line: item.line,
      sources: elementSources === undefined ? { sources } : { sources, elementSources },
      user: { fields: checked.value, id: mapped.user.id, sets: mapped.user.sets },
    });
  }

  full(): boolean {
    return this.#read >= IMPORT_BATCH_LINES || this.#held.length > 0;
  }

  /**
   * Writes the batch (and then the lines it held back); false when the job is no longer
   * running (cancelled) and must stop.
   */
  async flush(): Promise<boolean> {
    for (;;) {
      if (!(await this.#write())) return false;
      const held = this.#held;
      if (held.length === 0) return true;
      this.#held = [];
      for (const item of held) this.add(item);
    }
  }

  #invalidLine(line: number, errors: FieldError[]): void {
    this.#read++;
    this.#invalid++;
    this.#errors.push(
      ...errors.map((error) => ({ line, pointer: error.path, detail: error.detail })),
    );
  }

  async #write(): Promise<boolean> {
    if (this.#read === 0) return true;
    for (let attempt = 1; ; attempt++) {
      let recorded: boolean;
      try {
        recorded = await this.#planAndRecord();
      } catch (error) {
        if (!(error instanceof DuplicateError)) throw error;
        // A user created meanwhile by another door, or a SCIM userName taken in another case:
        // the batch goes user by user, so the one line that clashes is the one that fails.
        return this.#writeOneByOne();
      }
      if (recorded) {
        this.#clear();
        return true;
      }
      if (!(await this.#stillRunning())) return false;
      if (attempt === BATCH_ATTEMPTS) return this.#writeOneByOne();
    }
  }

  async #writeOneByOne(): Promise<boolean> {
    const pending = this.#pending;
    // The batch's error lines go with its first write (an empty one when it has no user).
    let errors = this.#errors;
    let read = this.#read - pending.length;
    let invalid = this.#invalid;
    if (pending.length === 0) {
      if (!(await this.#record([], emptyPlan(), errors, read, invalid))) return false;
      this.#clear();
      return true;
    }
    for (const user of pending) {
      read++;
      let recorded = false;
      for (let attempt = 1; !recorded && attempt <= BATCH_ATTEMPTS; attempt++) {
        const plan = await this.#plan([user]);
        try {
          recorded = await this.#record([user], plan, errors, read, invalid);
        } catch (error) {
          if (!(error instanceof DuplicateError)) throw error;
          const detail =
            error.index === USER_NAME_INDEX
              ? "another user of the application's SCIM provider has this identifier in another case (SCIM userNames ignore case)"
              : 'a user with this provider and identifier was created meanwhile; import the line again';
          recorded = await this.#record(
            [user],
            {
              outcomes: [{ kind: 'invalid', errors: [{ path: '/identifier', detail }] }],
              inserts: [],
              changes: [],
              events: [],
            },
            errors,
            read,
            invalid,
          );
        }
        if (!recorded && !(await this.#stillRunning())) return false;
      }
      if (!recorded) throw new Error('a user of the import kept changing under it');
      errors = [];
      read = 0;
      invalid = 0;
    }
    this.#clear();
    return true;
  }

  /**
   * Plans the batch and records it. The plan is only ever an argument (of #record, which is not
   * async): no suspended function holds it while the write waits on the store.
   */
  #planAndRecord(): Promise<boolean> {
    const pending = this.#pending;
    return this.#plan(pending).then((plan) =>
      this.#record(pending, plan, this.#errors, this.#read, this.#invalid),
    );
  }

  #plan(users: readonly PendingUser[]): Promise<ImportPlan> {
    if (users.length === 0) return Promise.resolve(emptyPlan());
    return this.deps.users.planImport(
      this.job.clientId,
      users.map((pending) => pending.user),
      this.options.onConflict,
      this.origin,
    );
  }

  /**
   * Records `users`' plan with the error lines so far (and the counts: `read` lines of this
   * batch so far, `invalid` of them refused before planning). Updates the written counts.
   *
   * Not async, on purpose: the plan (records, events) is handed to the store, which makes its
   * statements of it at once, and nothing holds the plan while the transaction runs. What a
   * batch holds across that wait is what V8 moves to its old generation (a scavenge runs while
   * the main thread waits on the store), and the old generation grows to four times what it
   * keeps before collecting it (bench/README.md).
   */
  #record(
    users: readonly PendingUser[],
    plan: ImportPlan,
    parseErrors: readonly ImportErrorRecord[],
    read: number,
    invalid: number,
  ): Promise<boolean> {
    const counts: ImportCounts = { ...this.#written };
    counts.read += read;
    counts.invalid += invalid;
    const errors = [...parseErrors];
    plan.outcomes.forEach((outcome: ImportOutcome, index) => {
      counts[outcome.kind]++;
      if (outcome.kind === 'invalid') {
        const pending = users[index]!;
        errors.push(
          ...outcome.errors.map((error) => ({
            line: pending.line,
            pointer: pointerInLine(pending.sources, error.path),
            detail: error.detail,
          })),
        );
      }
    });
    // Error lines in line order; past the cap, counted but not kept.
    errors.sort((a, b) => a.line - b.line);
    const room = Math.max(0, MAX_STORED_ERRORS - this.#storedErrors);
    const kept = errors.length <= room ? errors : errors.slice(0, room);
    const dryRun = this.options.dryRun;
    const recording = this.deps.store.imports.recordImportBatch(
      this.job.id,
      {
        counts,
        errors: kept,
        inserts: dryRun ? [] : plan.inserts,
        changes: dryRun ? [] : plan.changes,
        recordedAt: this.deps.clock.now(),
      },
      dryRun ? [] : plan.events,
    );
    return this.#recorded(recording, counts, kept.length);
  }

  async #recorded(recording: Promise<boolean>, counts: ImportCounts, kept: number) {
    const recorded = await recording;
    if (recorded) {
      this.#written = counts;
      this.#storedErrors += kept;
    }
    return recorded;
  }

  async #stillRunning(): Promise<boolean> {
    const job = await this.deps.store.imports.findImportJob(this.job.id);
    return job?.status === 'running';
  }

  #clear(): void {
    this.#pending = [];
    this.#keys = new Set();
    this.#errors = [];
    this.#read = 0;
    this.#invalid = 0;
  }
}

function emptyPlan(): ImportPlan {
  return { outcomes: [], inserts: [], changes: [], events: [] };
}
