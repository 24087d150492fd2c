// Which way imports point in src/ (docs/architecture.md, "Import directions"), held as specs:
// each boundary the code once crossed is a wrong-way import the lint rules refuse, and the
// import graph of src/ has no cycle, type imports counted.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { parseCircular, parseDependencyTree } from 'dpdm';
import { ESLint } from 'eslint';

// The import rules need no types: the type-aware parser and rules are left out, so this file
// takes a second, not the half minute of a type-checked lint.
const eslint = new ESLint({
  overrideConfig: {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: false } },
  },
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports',
});

/** What the import rules say of a file at this path of src/ holding `line`. */
async function importProblems(file: string, line: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${line}\nexport {};\n`, { filePath: file });
  return result!.messages
    .filter((message) => message.ruleId === 'no-restricted-imports')
    .map((message) => message.message);
}

const REFUSED: [file: string, line: string, why: RegExp][] = [
  // Six console route files imported Services from app.ts (a 7-file cycle).
  [
    'src/modules/console/console-users.routes.ts',
    "import type { Services } from '../../services.js';",
    /handed its services and settings by the composition/,
  ],
  [
    'src/modules/console/console-users.routes.ts',
    "import { buildApp } from '../../app.js';",
    /handed its services and settings by the composition/,
  ],
  // formProblem and noticeOf were exports of console-applications.routes.ts.
  [
    'src/modules/console/console-keys.routes.ts',
    "import { formProblem } from './console-applications.routes.js';",
    /only for its register function/,
  ],
  [
    'src/modules/scim/scim-groups.routes.ts',
    "import { readPaging } from './scim.routes.js';",
    /only for its register function/,
  ],
  // http/preconditions.ts imported a module.
  [
    'src/http/preconditions.ts',
    "import type { VersionCondition } from '../modules/conditional-writes.js';",
    /http\/ is below modules\//,
  ],
  // store/open-store.ts imported config.ts.
  [
    'src/store/open-store.ts',
    "import type { Config } from '../config.js';",
    /store\/ is the bottom layer/,
  ],
  [
    'src/store/store.ts',
    "import type { UsersService } from '../modules/users/users.service.js';",
    /store\/ is the bottom layer/,
  ],
  [
    'src/store/sql/sql-users.ts',
    "import { problem } from '../../problems.js';",
    /store errors, not problems/,
  ],
  ['src/store/store.ts', "import type { FastifyRequest } from 'fastify';", /knows nothing of HTTP/],
  ['src/clock.ts', "import type { Store } from './store/store.js';", /kernel file imports only/],
  [
    'src/modules/webhooks/webhooks.service.ts',
    "import { SignJWT } from 'jose';",
    /Only modules\/tokens\//,
  ],
  [
    'src/modules/console/console-users.routes.ts',
    "import { registerUserRoutes } from '../users/users.routes.js';",
    /through its face only/,
  ],
];

const ALLOWED: [file: string, line: string][] = [
  [
    'src/modules/console/console-kit.ts',
    "import type { UsersService } from '../users/users.service.js';",
  ],
  ['src/modules/scim/scim.users.ts', "import { Identifier } from '../users/users.schemas.js';"],
  [
    'src/modules/console/console.routes.ts',
    "import { registerConsoleUserRoutes } from './console-users.routes.js';",
  ],
  ['src/modules/tokens/external-tokens.ts', "import { jwtVerify } from 'jose';"],
  ['src/modules/users/users.service.ts', "import { userCreated } from '../changes.js';"],
  ['src/app.ts', "import { registerUserRoutes } from './modules/users/users.routes.js';"],
];

describe('import directions in src/', () => {
  for (const [file, line, why] of REFUSED) {
    it(`refuses in ${file}: ${line}`, async () => {
      const problems = await importProblems(file, line);
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0]!, why);
    });
  }

  for (const [file, line] of ALLOWED) {
    it(`allows in ${file}: ${line}`, async () => {
      assert.deepEqual(await importProblems(file, line), []);
    });
  }

  it('has no import cycle, type imports counted', async () => {
    const tree = await parseDependencyTree('src/**/*.ts', { transform: false });
    assert.deepEqual(parseCircular(tree), []);
  });
});
