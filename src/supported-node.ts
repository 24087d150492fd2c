// Imported first by every entry point (`npm start`, `tessera`), so an unsupported Node.js is
// refused in one line before anything else loads. Node 20 reached end of life in April 2026,
// and better-sqlite3 13 (Node-API) needs Node 22 or newer.

const MINIMUM_MAJOR = 22;

const major = Number(process.versions.node.split('.')[0]);
if (major < MINIMUM_MAJOR) {
  process.stderr.write(
    `tessera: Node.js ${process.versions.node} is not supported; use Node.js ${MINIMUM_MAJOR} or 24 (the LTS lines)\n`,
  );
  process.exit(1);
}
