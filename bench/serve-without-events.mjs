// The server of bench/events.ts's "without events" side: dist/ exactly as `npm start` runs it,
// but with writes recording no event, to measure what the audit trail costs. No setting of the
// service turns the audit trail off; only this bench entry point does, in code.
import '../dist/supported-node.js';
import { loadConfig } from '../dist/config.js';
import { startServer } from '../dist/server.js';

await startServer(loadConfig(), { recordEvents: false });
