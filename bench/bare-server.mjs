// The ceiling: a bare node:http server that answers every request with bytes captured from
// Tessera for the same scenario (status, headers, body), chosen by request method. It reads
// each request body to its end first, as Tessera does, and keeps connections alive as long.
// Plain JavaScript run by plain `node`, exactly as Tessera's compiled dist/ is.
//
// Its parent (bench/run.ts) sets the answers over the IPC channel:
//   { responses: { GET: { status, headers: [name, value, …], body: base64 }, PUT: … } }
// and gets { ready: true } back; on start it sends { port } once listening.

import { createServer } from 'node:http';

/** @type {Map<string, { status: number, headers: string[], body: Buffer }>} */
let responses = new Map();

const server = createServer((request, response) => {
  request.on('data', () => {});
  request.on('end', () => {
    const answer = responses.get(request.method ?? 'GET');
    if (answer === undefined) {
      response.writeHead(500).end();
      return;
    }
    response.writeHead(answer.status, answer.headers);
    response.end(answer.body);
  });
});
// Tessera's settings (src/app.ts): keep-alive 72 s, request timeout 30 s.
server.keepAliveTimeout = 72_000;
server.requestTimeout = 30_000;

process.on('message', (message) => {
  responses = new Map(
    Object.entries(message.responses).map(([method, answer]) => [
      method,
      { status: answer.status, headers: answer.headers, body: Buffer.from(answer.body, 'base64') },
    ]),
  );
  process.send?.({ ready: true });
});
process.on('disconnect', () => process.exit(0));

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.send?.({ port: server.address().port });
});
