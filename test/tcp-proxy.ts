// A TCP proxy between Tessera and PostgreSQL that a test can break and mend, so outages are
// simulated without touching the machine's shared PostgreSQL.
//
// - cut(): the database goes away — every connection is reset and new ones are refused
//   (a crashed or restarting server, a failover).
// - blackhole(): the network goes silent — connections stay open but nothing passes, and new
//   ones are accepted and never answered (a partition; only timeouts notice).
// - restore(): back to forwarding. Connections that were silenced are reset, so the client
//   notices them and opens new ones.

import { type Server, type Socket, connect, createServer } from 'node:net';

export interface TcpProxy {
  port: number;
  cut(): void;
  blackhole(): void;
  restore(): void;
  close(): Promise<void>;
}

type Mode = 'forward' | 'cut' | 'blackhole';

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: Mode = 'forward';
  const pairs = new Set<{ client: Socket; upstream?: Socket }>();

  const server: Server = createServer((client) => {
    client.on('error', () => undefined);
    if (mode === 'cut') {
      client.resetAndDestroy();
      return;
    }
    const pair: { client: Socket; upstream?: Socket } = { client };
    pairs.add(pair);
    client.once('close', () => {
      pair.upstream?.destroy();
      pairs.delete(pair);
    });
    if (mode === 'blackhole') {
      client.pause();
      return;
    }
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  const resetAll = () => {
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream?.destroy();
    }
    pairs.clear();
  };

  return {
    port,
    cut() {
      mode = 'cut';
      resetAll();
    },
    blackhole() {
      mode = 'blackhole';
      for (const { client, upstream } of pairs) {
        client.unpipe();
        upstream?.unpipe();
        client.pause();
        upstream?.pause();
      }
    },
    restore() {
      if (mode === 'blackhole') resetAll();
      mode = 'forward';
    },
    close() {
      resetAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
