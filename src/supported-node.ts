// Imported first by every entry point (`npm start`, `tessera`), so an unsupported Node.js is
// refused in one line before anything else loads. Node 20 reached end of life in April 2026,
// and better-sqlite3 13 (Node-API) needs Node 22 or newer.

const MINIMUM_MAJOR = 22;

/** The one line that refuses this Node.js version, or null when it is supported. */
export function unsupportedNodeRefusal(version: string): string | null {
  const major = Number(version.split('.')[0]);
  if (major >= MINIMUM_MAJOR) return null;
  // Many machines' system Node.js is older: say how to run on a supported one without
  // replacing it (scripts/with-node.sh fetches one from the npm registry, Linux x64).
  return (
    `tessera: Node.js ${version} is not supported; use Node.js ${MINIMUM_MAJOR} or 24 (the LTS ` +
    `lines): in a checkout, scripts/with-node.sh 24 npm ci && scripts/with-node.sh 24 npm start ` +
    `runs on Node.js 24 without installing it (Linux x64; elsewhere nvm, fnm or volta)`
  );
}

const refusal = unsupportedNodeRefusal(process.versions.node);
if (refusal !== null) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}
