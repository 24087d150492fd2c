// node:http and node:https as CommonJS exports. An ES `import … from 'node:http'` builds the
// module's namespace, which reads every export, and three of them (WebSocket, CloseEvent,
// MessageEvent) load Node's fetch implementation, undici, which Tessera never uses: 2.3 MB of
// heap, and in a bare process 14 MB resident (Node.js 24.21). Fastify and pg reach node:http
// through require(), which reads nothing.

export const nodeHttp = process.getBuiltinModule('node:http');
export const nodeHttps = process.getBuiltinModule('node:https');
