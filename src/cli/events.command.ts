// `tessera events tail`: the change feed on the command line, read from the store the server
// writes (DATABASE_URL), one JSON line per event as it commits.

import type { Command } from 'commander';
import { toEventResource } from '../modules/events/events.schemas.js';
import type { EventFilter } from '../store/store.js';
import { type CliContext, UsageError } from './context.js';

const TYPE_LIST = /^[a-z_]+\.(?:[a-z_]+|\*)(?:,[a-z_]+\.(?:[a-z_]+|\*))*$/;
const EVENT_ID = /^[0-9]{1,16}$/;
/** How long one read waits for new events before it asks again. */
const WAIT_MS = 1000;

interface TailOptions {
  type?: string;
  clientId?: string;
  after?: string;
  count?: string;
}

export function registerEventsCommands(program: Command, cli: CliContext): void {
  const events = program.command('events').description('read the audit trail');
  events
    .command('tail')
    .description('follow the change feed: one JSON line per event, in commit order, as they commit')
    .option('--type <types>', 'only these event types, comma-separated (user.*, api_key.revoked)')
    .option('--client-id <client_id>', 'only the events of this application')
    .option('--after <event_id>', 'start after this event (default: after the newest one now)')
    .option('--count <n>', 'stop after n events (default: follow until interrupted)')
    .action((options: TailOptions) => tailEvents(cli, options));
}

async function tailEvents(cli: CliContext, options: TailOptions): Promise<void> {
  if (options.type !== undefined && !TYPE_LIST.test(options.type)) {
    throw new UsageError(
      '--type takes event types separated by commas, such as user.*,api_key.revoked',
    );
  }
  if (options.after !== undefined && !EVENT_ID.test(options.after)) {
    throw new UsageError('--after takes an event id (up to 16 digits)');
  }
  const count = options.count === undefined ? Infinity : Number(options.count);
  if (!Number.isInteger(count) || count < 1) {
    throw new UsageError('--count takes a whole number of events, at least 1');
  }
  const filter: EventFilter = {
    types:
      options.type === undefined
        ? null
        : options.type.split(',').map((type) => (type.endsWith('.*') ? type.slice(0, -1) : type)),
    clientId: options.clientId ?? null,
    actorId: null,
    resourceType: null,
    since: null,
    until: null,
    visibleClientIds: null,
  };
  await cli.withStore(async (store) => {
    const events = cli.servicesFor(store).events;
    let after = options.after ?? (await store.events.lastEventId()) ?? '0';
    let printed = 0;
    while (printed < count) {
      const page = await events.listEvents({
        filter,
        after,
        limit: Math.min(100, count - printed),
        waitMs: WAIT_MS,
      });
      for (const event of page) cli.io.stdout.write(`${JSON.stringify(toEventResource(event))}\n`);
      printed += page.length;
      after = page.at(-1)?.id ?? after;
    }
  });
}
