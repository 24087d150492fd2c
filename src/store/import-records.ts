// The store's side of bulk imports: a job's record and the error lines it found. Part of the
// Store interface (store.ts, which holds the repository that records an import's batches with
// their users), in a file of its own like the events' and webhooks' records.

export type ImportFormat = 'tessera' | 'auth0' | 'keycloak';
export type ImportConflictPolicy = 'update' | 'skip' | 'fail';
export type ImportStatus = 'running' | 'succeeded' | 'failed' | 'cancelled';

/** What a job has done so far: lines read, and what became of each. */
export interface ImportCounts {
  read: number;
  created: number;
  updated: number;
  unchanged: number;
  skipped: number;
  invalid: number;
}

export interface ImportJobRecord {
  id: string;
  clientId: string;
  format: ImportFormat;
  dryRun: boolean;
  onConflict: ImportConflictPolicy;
  status: ImportStatus;
  counts: ImportCounts;
  /** Why a failed job failed (one sentence, no input echoed beyond a short excerpt); else null. */
  failure: string | null;
  /** The API key that started it, or null (the CLI). */
  startedBy: string | null;
  createdAt: number;
  /** The last time the job recorded progress: a running job whose runner died stops moving. */
  updatedAt: number;
  finishedAt: number | null;
}

/** One error of one line: the line's number (from 1), a JSON Pointer into it, and what is wrong. */
export interface ImportErrorRecord {
  line: number;
  pointer: string;
  detail: string;
}

/** Where a page of error lines starts: after this line's error number `index` (from 0). */
export interface ImportErrorPosition {
  line: number;
  index: number;
}
