import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Which way imports point in src/ (docs/architecture.md, "Import directions"). Each part may
// import the parts below it and never one above; a wrong-way import, type imports included,
// fails `npm run lint` (and `npm run lint:cycles` fails on any import cycle). Imports are
// relative, so each rule names the parts a file keeps out by their paths.
const IMPORT = '^(\\.{1,2}/)+';
const FILES_OF = (names) => `${IMPORT}(${names.join('|')})\\.js$`;
const FOLDERS_OF = (names) => `${IMPORT}(${names.join('|')})/`;

/** What runs the whole, and what assembles it: nothing below imports them. */
const ENTRY = ['main', 'server'];
const COMPOSITION = ['app', 'operations-app', 'services', 'access', 'scheduled-backups'];
/** The files at the root of src/ that are not kernel; every other one is. */
const ROOT_PARTS = ['problems', 'config', ...COMPOSITION, ...ENTRY];

const MODULE_KEEPS_OUT = [
  [FOLDERS_OF(['cli']), 'A module does not import the CLI.'],
  [
    '^\\./[^/]+\\.routes\\.js$',
    "A routes file is imported only for its register function; what a module's routes share has a file of its own (console-kit.ts, scim.paging.ts).",
    { importNamePattern: '^(?!register)' },
  ],
  [
    FILES_OF(['config', ...COMPOSITION, ...ENTRY]),
    'A module is handed its services and settings by the composition (services.ts, app.ts); it never imports it, nor config.ts.',
  ],
];

/** Another module's face, what a module may import of it: its services, schemas and domain. */
const OTHER_MODULE_BEHIND_ITS_FACE = [
  '^\\.\\./(?!\\.\\./)[^/]+/(?![^/]+\\.(service|schemas|domain)\\.js$)',
  'Another module is used through its face only: its *.service.ts, *.schemas.ts or *.domain.ts.',
];

const KERNEL_ONLY =
  'A kernel file imports only other kernel files (a file at the root of src/ is kernel unless eslint.config.js names its part).';

const LAYERS = {
  // clock.ts, roles.ts, failures.ts, files.ts, …: imported by every part, importing none.
  kernel: {
    files: ['src/*.ts'],
    ignores: ROOT_PARTS.map((name) => `src/${name}.ts`),
    keepOut: [
      [FOLDERS_OF(['store', 'http', 'modules', 'cli']), KERNEL_ONLY],
      [FILES_OF(ROOT_PARTS), KERNEL_ONLY],
    ],
  },
  store: {
    files: ['src/store/**/*.ts'],
    keepOut: [
      [
        FOLDERS_OF(['http', 'modules', 'cli']),
        'store/ is the bottom layer: it imports none of http/, modules/ or cli/.',
      ],
      [
        FILES_OF(ROOT_PARTS),
        'store/ is the bottom layer: it speaks store errors, not problems, and knows no configuration or composition.',
      ],
      ['^(fastify|@fastify/.+)$', 'store/ knows nothing of HTTP.'],
    ],
  },
  http: {
    files: ['src/http/**/*.ts', 'src/problems.ts'],
    keepOut: [
      [FOLDERS_OF(['modules', 'cli']), 'http/ is below modules/: it imports no module.'],
      [
        FILES_OF(['config', ...COMPOSITION, ...ENTRY]),
        'http/ knows no configuration or composition.',
      ],
    ],
  },
  config: {
    files: ['src/config.ts'],
    keepOut: [
      [
        FOLDERS_OF(['http', 'modules', 'cli']),
        'config.ts reads the environment; it imports only store defaults.',
      ],
      [FILES_OF(['problems', ...COMPOSITION, ...ENTRY]), 'config.ts imports no composition.'],
    ],
  },
  // The files at the root of modules/ (changes.ts, conditional-writes.ts, …) serve every module.
  sharedModules: { files: ['src/modules/*.ts'], keepOut: MODULE_KEEPS_OUT },
  modules: {
    files: ['src/modules/*/**/*.ts'],
    ignores: ['src/modules/tokens/**'],
    keepOut: [...MODULE_KEEPS_OUT, OTHER_MODULE_BEHIND_ITS_FACE],
  },
  tokens: {
    files: ['src/modules/tokens/**/*.ts'],
    keepOut: [...MODULE_KEEPS_OUT, OTHER_MODULE_BEHIND_ITS_FACE],
    jose: true,
  },
  composition: {
    files: ['src/services.ts', 'src/access.ts', 'src/scheduled-backups.ts'],
    keepOut: [
      [FOLDERS_OF(['cli']), 'The services are composed below the CLI.'],
      [FILES_OF(['app', ...ENTRY]), 'The services are composed below the app and the server.'],
    ],
  },
  app: {
    files: ['src/app.ts', 'src/operations-app.ts'],
    keepOut: [
      [FOLDERS_OF(['cli']), 'The app is built below the CLI.'],
      [FILES_OF(ENTRY), 'The app is built apart from the server that runs it.'],
    ],
  },
  entry: { files: ['src/main.ts', 'src/server.ts', 'src/cli/**/*.ts'], keepOut: [] },
};

const JOSE = {
  name: 'jose',
  message: 'Only modules/tokens/ imports jose: tokens are signed and checked there alone.',
};

/** Values from node:http(s) come through http/node-http.ts (why: there). */
const NODE_HTTP = ['node:http', 'node:https', 'http', 'https'].map((name) => ({
  name,
  allowTypeImports: true,
  message:
    "Use nodeHttp/nodeHttps from src/http/node-http.ts: an ES import of node:http loads Node's fetch (undici), which Tessera does not use.",
}));

/** no-restricted-imports for some files: the parts they may not import, and jose unless allowed. */
function restrictImports({ files, ignores = [], keepOut, jose = false }) {
  return {
    files,
    // Tests beside the code may reach across parts, as test/ does.
    ignores: [...ignores, 'src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...(jose ? [] : [JOSE]), ...NODE_HTTP],
          patterns: keepOut.map(([regex, message, more]) => ({ regex, message, ...more })),
        },
      ],
    },
  };
}

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'data/',
      'coverage/',
      'bench/results/',
      // Generated by npm run client:generate.
      'clients/typescript/src/schema.ts',
      // The client's build, made by npm pack (its prepack).
      'clients/typescript/dist/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setImmediate: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // The admin console's own script runs in the browser.
    files: ['src/modules/console/assets/*.js'],
    languageOptions: { globals: { document: 'readonly', navigator: 'readonly' } },
  },
  {
    // Type-aware rules: a promise nobody awaits loses its rejection (and crashes the process).
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test awaits the promises of describe() and it() itself.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'suite', 'test'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  ...Object.values(LAYERS).map(restrictImports),
);
