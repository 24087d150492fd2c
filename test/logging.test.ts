import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { createLogger, dropListeningText } from '../src/server.js';

function collector() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it('redacts Authorization wherever a request or its headers are logged', () => {
    for (const format of ['json', 'pretty'] as const) {
      const { lines, stream } = collector();
      const logger = createLogger('info', stream, format);
      const authorization = 'apikey tsr_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG';
      logger.info({ req: { method: 'GET', headers: { authorization } } }, 'a request');
      logger.info({ headers: { authorization, accept: 'application/json' } }, 'some headers');
      logger.info({ authorization }, 'a bare header');
      assert.equal(lines.length, 3, format);
      for (const line of lines) {
        assert.ok(!line.includes('tsr_'), line);
        assert.match(line, /"authorization":"\[redacted\]"/);
      }
      assert.match(lines[1]!, /"accept":"application\/json"/, 'other headers are kept');
    }
  });

  it('LOG_FORMAT=pretty writes one readable line per entry: time, level, message, members', () => {
    const { lines, stream } = collector();
    const logger = createLogger('info', stream, 'pretty');
    logger
      .child({ request_id: 'r-1' })
      .info({ method: 'GET', route: '/iam/api/v1/applications', status: 200 }, 'request');
    logger.warn('IAM_SECRET_KEY is not set');
    assert.equal(lines.length, 2);
    assert.match(
      lines[0]!,
      /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: request \{"request_id":"r-1","method":"GET","route":"\/iam\/api\/v1\/applications","status":200\}\n$/,
    );
    assert.match(lines[1]!, /^\[[\d:.]+\] WARN: IAM_SECRET_KEY is not set\n$/);
    assert.ok(!lines.join('').includes('\u001b['), 'no colour codes when not on a terminal');
  });

  it('drops Fastify\'s own "Server listening" line: Tessera logs one line of its own', async () => {
    for (const format of ['json', 'pretty'] as const) {
      const { lines, stream } = collector();
      const app = Fastify({ loggerInstance: createLogger('info', stream, format) });
      try {
        // As server.ts listens.
        await app.listen({ port: 0, host: '127.0.0.1', ...dropListeningText });
        app.log.info('something else');
      } finally {
        await app.close();
      }
      assert.equal(lines.length, 1, lines.join(''));
      assert.match(lines[0]!, /something else/);
    }
  });
});

/** A child process that logs through createLogger to its stdout, as the server does. */
function loggingChild(program: string) {
  const server = JSON.stringify(new URL('../src/server.ts', import.meta.url).pathname);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import { createLogger } from ${server}; const logger = createLogger('info'); ${program}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, output: () => output, errors: () => errors, exited };
}

describe('the log on stdout', () => {
  it("writes a quiet process's line within a fraction of a second, not at exit", async () => {
    const { child, output, errors, exited } = loggingChild(
      "logger.info('a quiet line'); process.stderr.write('logged'); setTimeout(() => {}, 30_000);",
    );
    try {
      // Starting the child (tsx compiling the server's modules) takes seconds on a busy machine.
      for (let waited = 0; !errors().includes('logged'); waited += 20) {
        assert.ok(waited < 25_000, `the child did not start: ${errors()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      for (let waited = 0; !output().includes('a quiet line'); waited += 20) {
        assert.ok(waited < 3_000, 'the line was not written within 3 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(child.exitCode, null, 'written while the process runs');
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });

  it('writes every pending line when the process dies of an uncaught exception', async () => {
    const { output, exited } = loggingChild(
      "for (let n = 0; n < 500; n++) logger.info({ n }, 'line'); " +
        "setImmediate(() => { throw new Error('fatal'); });",
    );
    assert.equal(await exited, 1);
    const numbers = output()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as { n: number }).n);
    assert.deepEqual(
      numbers,
      Array.from({ length: 500 }, (_, n) => n),
    );
  });
});
