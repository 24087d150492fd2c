// Files uploaded to the console for an import, kept between the dry run every console import
// starts with and the operator's confirmation, so the file is sent once. Each is a private
// temporary file (mode 0600: it holds personal data), kept for its session only and for a
// limited time, on the instance that received it; the import that runs from it removes it when
// it is done.

import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Clock } from '../../clock.js';
import { problem } from '../../problems.js';
import type { ImportOptions } from '../imports/imports.service.js';

/** A file written to disk as it arrived; `remove` deletes it (and is safe to call twice). */
export interface SpooledFile {
  path: string;
  bytes: number;
  remove: () => Promise<void>;
}

/** An upload waiting for the operator to confirm its import, after its dry run. */
export interface KeptUpload {
  file: SpooledFile;
  clientId: string;
  /** The choices of the dry run, which the import takes as they were. */
  options: Omit<ImportOptions, 'dryRun'>;
  /** The session that uploaded it (the digest of its id): no other may run it. */
  owner: string;
  keptUntil: number;
}

/** How long an upload waits for its confirmation. */
export const UPLOAD_KEPT_MS = 60 * 60 * 1000;
/** Uploads one session keeps at once; a further one drops its oldest. */
const UPLOADS_PER_SESSION = 3;
const SWEEP_MS = 60 * 1000;

export class ConsoleUploads {
  /** By the id of the dry run that checked the file. */
  readonly #kept = new Map<string, KeptUpload>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(private readonly deps: { clock: Clock; maxBytes: number }) {
    this.#sweeper = setInterval(() => void this.sweep(), SWEEP_MS);
    this.#sweeper.unref();
  }

  /**
   * Writes `source` to a new private temporary file as it streams in, refusing one past the
   * limit (413, and nothing is left on disk).
   */
  async spool(source: Readable): Promise<SpooledFile> {
    const directory = await mkdtemp(join(tmpdir(), 'tessera-console-import-'));
    const remove = () => rm(directory, { recursive: true, force: true });
    const path = join(directory, 'upload');
    const { maxBytes } = this.deps;
    let bytes = 0;
    try {
      await pipeline(
        source,
        new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            bytes += chunk.length;
            if (bytes > maxBytes) {
              callback(
                problem('payload-too-large', `An import file may hold at most ${maxBytes} bytes.`),
              );
            } else callback(null, chunk);
          },
        }),
        createWriteStream(path, { mode: 0o600 }),
      );
      return { path, bytes, remove };
    } catch (error) {
      await remove();
      throw error;
    }
  }

  /** Keeps `upload` for the confirmation of the dry run `jobId`. */
  keep(jobId: string, upload: Omit<KeptUpload, 'keptUntil'>): void {
    const mine = [...this.#kept].filter(([, kept]) => kept.owner === upload.owner);
    for (const [id] of mine.slice(0, Math.max(0, mine.length - UPLOADS_PER_SESSION + 1))) {
      this.discard(id);
    }
    this.#kept.set(jobId, { ...upload, keptUntil: this.deps.clock.now() + UPLOAD_KEPT_MS });
  }

  /** Whether the dry run `jobId` has its file kept for this session. */
  has(jobId: string, owner: string): boolean {
    const kept = this.#kept.get(jobId);
    return kept !== undefined && kept.owner === owner && kept.keptUntil > this.deps.clock.now();
  }

  /** Hands the kept upload over to its import (once): the caller removes the file after it. */
  take(jobId: string, owner: string): KeptUpload | undefined {
    if (!this.has(jobId, owner)) return undefined;
    const kept = this.#kept.get(jobId)!;
    this.#kept.delete(jobId);
    return kept;
  }

  /** Removes the upload kept for `jobId`, if any (a dry run cancelled). */
  discard(jobId: string): void {
    const kept = this.#kept.get(jobId);
    if (kept === undefined) return;
    this.#kept.delete(jobId);
    void kept.file.remove();
  }

  /** Removes the uploads whose time is up. */
  sweep(): void {
    const now = this.deps.clock.now();
    for (const [id, kept] of this.#kept) if (kept.keptUntil <= now) this.discard(id);
  }

  /** Removes every kept upload (the server is stopping). */
  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    const files = [...this.#kept.values()].map((kept) => kept.file.remove());
    this.#kept.clear();
    await Promise.all(files);
  }
}
