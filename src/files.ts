import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { chmod, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * mkdir -p, one level at a time, private to the owner (0700). Node's recursive mkdir can loop
 * forever where a missing parent keeps reporting ENOENT (under /proc).
 */
export function createPrivateDirectory(directory: string): void {
  const missing: string[] = [];
  for (let current = directory; !existsSync(current); current = dirname(current)) {
    missing.unshift(current);
    if (dirname(current) === current) break;
  }
  for (const path of missing) {
    try {
      mkdirSync(path, { mode: 0o700 });
    } catch (error) {
      throw new Error(`cannot create the directory ${path}`, { cause: error });
    }
  }
}

export interface StagedFile {
  /** Moves the staged file into place (atomically) and returns its path. */
  publish(): Promise<string>;
  /** Removes the staged file. */
  discard(): Promise<void>;
}

/**
 * Writes a secret to a new file readable only by this user, under a random name (created
 * exclusively, so nothing planted there beforehand is followed or reused), ready to be moved
 * into place once what it stands for exists.
 */
export async function stageSecretFile(
  directory: string,
  name: string,
  secret: string,
): Promise<StagedFile> {
  createPrivateDirectory(directory);
  const path = join(directory, name);
  const staged = join(directory, `.${name}.${randomUUID()}.tmp`);
  await writeFile(staged, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(staged, 0o600);
  return {
    publish: async () => {
      await rename(staged, path);
      return path;
    },
    discard: () => unlink(staged).catch(() => undefined),
  };
}

/** Flushes a file's data to the disk (fsync). */
export function fsyncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Flushes a directory's entries (fsync of the directory), so a file created or renamed in it
 * survives a crash of the machine under its new name.
 */
export function fsyncDirectory(directory: string): void {
  const fd = openSync(directory, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** 20261126T120000Z: a UTC time that sorts as text and fits in a file name. */
export function compactTimestamp(at: Date): string {
  return at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}
