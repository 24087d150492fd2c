// Writes to one resource: read, check the caller's precondition, compute, then a conditional
// write on the version read, so the database decides between racing writers. Within one
// process, writes to the same resource also queue behind each other, so they never race.

import { randomFillSync } from 'node:crypto';
import { domainError } from '../domain-error.js';

export interface Versioned {
  etag: string;
}

/** Whether the caller's precondition (HTTP If-Match) holds for a resource at this version. */
export type VersionCondition = (version: string) => boolean;

/** No precondition: any existing version will do. */
export const anyVersion: VersionCondition = () => true;

const VERSION_BYTES = 12;
/**
 * Random bytes for the next 256 versions, drawn from the CSPRNG at once: one randomBytes(12)
 * per write cost 3-4 µs of CPU (a native job each time), a slice of the pool well under one
 * (Node's randomUUID keeps a pool the same way). Each slice is used once.
 */
const versionPool = Buffer.alloc(VERSION_BYTES * 256);
let versionOffset = versionPool.length;

/** A fresh version token: 96 random bits, so a recreated resource never reuses an ETag. */
export function newVersion(): string {
  if (versionOffset === versionPool.length) {
    randomFillSync(versionPool);
    versionOffset = 0;
  }
  const start = versionOffset;
  versionOffset += VERSION_BYTES;
  return versionPool.toString('base64url', start, versionOffset);
}

/**
 * Runs tasks one after another per key, and tasks of different keys independently. Writes
 * to one resource queue here instead of racing each other through retries.
 */
export class KeyedQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** `task` is told whether it waited for an earlier task of its key. */
  run<T>(key: string, task: (waited: boolean) => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key);
    const result =
      previous === undefined
        ? new Promise<T>((resolve) => resolve(task(false)))
        : previous.then(
            () => task(true),
            () => task(true),
          );
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}

// Only writers in other processes (instances sharing a database) can still race; they back
// off with jitter. Past this many lost races the request is refused as a transient failure.
const MAX_ATTEMPTS = 20;

function backOff(attempt: number): Promise<void> {
  const delay = Math.random() * Math.min(100, 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, delay));
}

function preconditionFailed() {
  return domainError(
    'version_mismatch',
    'If-Match does not match the current ETag of the resource.',
  );
}

function tooMuchContention() {
  return domainError(
    'busy',
    'Other requests kept changing this resource while this one was applied; retry.',
    { retryAfterSeconds: 1 },
  );
}

/**
 * Read → check the precondition → compute → conditional write, retried when a writer in
 * another process won the race. With a precondition, a lost race surfaces as 412 on the next
 * read, as it must. `change` returns null when nothing would change: then nothing is written
 * and the resource (with its updated_at and ETag) is returned as it is.
 */
export async function updateConditionally<R extends Versioned>(options: {
  load: () => Promise<R | undefined>;
  /** The resource as just read, for the first attempt instead of load() (saves a read). */
  initial?: R;
  notFound: () => Error;
  condition: VersionCondition;
  /** May be async when computing the change reads other resources (a group's members). */
  change: (current: R) => R | null | Promise<R | null>;
  /** Writes `next` if the stored version is still `expectedVersion` (that of `current`). */
  save: (next: R, expectedVersion: string, current: R) => Promise<boolean>;
}): Promise<R> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (attempt > 0) await backOff(attempt);
    const current =
      attempt === 0 && options.initial !== undefined ? options.initial : await options.load();
    if (current === undefined) throw options.notFound();
    if (!options.condition(current.etag)) throw preconditionFailed();
    const next = await options.change(current);
    if (next === null) return current;
    if (await options.save(next, current.etag, current)) return next;
  }
  throw tooMuchContention();
}

/** Read → check the precondition → conditional delete, retried like updateConditionally. */
export async function deleteConditionally<R extends Versioned>(options: {
  load: () => Promise<R | undefined>;
  /** As for updateConditionally. */
  initial?: R;
  notFound: () => Error;
  condition: VersionCondition;
  remove: (current: R) => Promise<boolean>;
}): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (attempt > 0) await backOff(attempt);
    const current =
      attempt === 0 && options.initial !== undefined ? options.initial : await options.load();
    if (current === undefined) throw options.notFound();
    if (!options.condition(current.etag)) throw preconditionFailed();
    if (await options.remove(current)) return;
  }
  throw tooMuchContention();
}
