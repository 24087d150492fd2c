// What the primary and its workers say to each other over the cluster's IPC channel. Every
// message of Tessera's carries `tessera` (its kind), so prom-client's own messages on the same
// channel (its metrics requests) pass by untouched.

/** Primary → worker, once the worker asked (join): which worker it is. */
export interface StartMessage {
  tessera: 'start';
  /** 1…IAM_WORKERS; a worker that replaces a crashed one takes its number. 0: the preparer. */
  slot: number;
  /** Prepare the database for the cluster, then exit (0, or 2 / 1 as a failed start does). */
  prepare: boolean;
}

/**
 * Worker → primary: join (it listens for the start message), ready (it serves), write-turn (it
 * asks for SQLite's write turn), write-done (it hands the turn back); primary → workers: commit
 * (another worker committed events), write-turn (the turn is this worker's).
 */
export interface SignalMessage {
  tessera: 'join' | 'ready' | 'commit' | 'write-turn' | 'write-done';
}

/** Worker → primary: add to a limit counter the primary holds (SQLite). */
export interface CountRequest {
  tessera: 'count';
  id: number;
  key: string;
  points: number;
  now: number;
  windowMs: number;
}

/** Worker → primary: the whole cluster's metrics, as /metrics serves them. */
export interface MetricsRequest {
  tessera: 'metrics';
  id: number;
}

/** Primary → worker: the answer to a request, by its id. */
export type Reply =
  | { tessera: 'reply'; id: number; ok: true; value: unknown }
  | { tessera: 'reply'; id: number; ok: false; error: string };

export type WorkerMessage = SignalMessage | CountRequest | MetricsRequest;
export type PrimaryMessage = StartMessage | SignalMessage | Reply;

const KINDS = new Set([
  'start',
  'join',
  'ready',
  'commit',
  'write-turn',
  'write-done',
  'count',
  'metrics',
  'reply',
]);

/** True for a message of Tessera's (not prom-client's, nor anything else on the channel). */
export function isClusterMessage(message: unknown): message is WorkerMessage | PrimaryMessage {
  return (
    typeof message === 'object' &&
    message !== null &&
    KINDS.has((message as { tessera?: unknown }).tessera as string)
  );
}
