// The receiver of `npm run bench:webhooks`, in a process of its own so the load of the
// writers does not slow its answers: answers 204 to every POST and prints, per delivery, the
// user's identifier and the arrival time (epoch ms). Its first line is its port.
import http from 'node:http';

const server = http.createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const event = JSON.parse(Buffer.concat(chunks).toString());
    process.stdout.write(`${event.resource.id.identifier} ${Date.now()}\n`);
    response.writeHead(204).end();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => process.exit(0));
