// The receiver of `npm run bench:webhooks`, in a process of its own so the load of the
// writers does not slow its answers: answers 204 to every POST and prints, per delivery, the
// user's identifier, the arrival time (epoch ms) and the path it was sent to. A POST to /hang
// is never answered (a receiver that hangs), its connection left open. Its first line is its
// port.
import http from 'node:http';

const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.url === '/hang') return;
    const event = JSON.parse(Buffer.concat(chunks).toString());
    process.stdout.write(`${event.resource.id.identifier} ${Date.now()} ${request.url}\n`);
    response.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
