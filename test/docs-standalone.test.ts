// The repository stands alone: a reader has only it. Every relative link in its Markdown files
// resolves to a file inside it, and nothing cites a specification kept elsewhere.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { repository } from './server-process.js';

const SKIPPED = new Set(['node_modules', 'dist', 'data', 'coverage', '.git']);

function filesEndingWith(directory: string, endings: readonly string[]): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name)) return [];
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return filesEndingWith(path, endings);
    return endings.some((ending) => entry.name.endsWith(ending)) ? [path] : [];
  });
}

describe('the repository stands alone', () => {
  it('links only to files inside it, and they exist', () => {
    const broken: string[] = [];
    const markdown = filesEndingWith(repository, ['.md']);
    assert.ok(markdown.length >= 5, 'the Markdown files are found');
    for (const file of markdown) {
      const text = readFileSync(file, 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(?:https?:|mailto:|#)/.test(target!)) continue;
        const path = resolve(dirname(file), target!.split('#')[0]!);
        const inside = !relative(repository, path).startsWith('..');
        if (!inside || !existsSync(path)) broken.push(`${relative(repository, file)}: ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('cites no specification kept outside it', () => {
    const citing = filesEndingWith(repository, ['.md', '.ts', '.mjs', '.js', '.yaml', '.json'])
      .filter((file) => !file.endsWith('package-lock.json'))
      .filter((file) => /SPEC(?:\.md| §)|\.\.\/shared\//.test(readFileSync(file, 'utf8')))
      .map((file) => relative(repository, file));
    assert.deepEqual(citing, []);
  });
});

describe('the Markdown files render as written', () => {
  it('has no table cut in two: each run of table rows starts with a header and its delimiter', () => {
    const cut: string[] = [];
    for (const file of filesEndingWith(repository, ['.md'])) {
      const lines = readFileSync(file, 'utf8').split('\n');
      let inFence = false;
      for (let index = 0; index < lines.length; index++) {
        const line = lines[index]!;
        if (/^\s*```/.test(line)) inFence = !inFence;
        const startsRun = line.startsWith('|') && !lines[index - 1]?.startsWith('|');
        // A run of rows without its delimiter is shown as text, `|` and all.
        if (!inFence && startsRun && !/^\|(\s*:?-+:?\s*\|)+\s*$/.test(lines[index + 1] ?? '')) {
          cut.push(`${relative(repository, file)}:${index + 1}: ${line.slice(0, 60)}`);
        }
      }
    }
    assert.deepEqual(cut, []);
  });
});
