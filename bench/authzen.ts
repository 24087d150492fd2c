// Issue 31: authorization decisions (OpenID AuthZEN) against the bare server, like GET user.
// One evaluation should cost no more than a GET of the user (its ratio to the bare server within
// 10 % of get-user's, same run); a batch of 100 evaluations, each about a different random user,
// under 2 ms of the server's CPU.

import type { RequestShape, Scenario } from './scenario.js';

/** The bench application's model: one action open to a role, one to owners. */
export const BENCH_AUTHORIZATION = {
  actions: {
    read_invoice: { roles: ['billing:read'] },
    update_invoice: {
      roles: ['billing:admin'],
      owner_roles: ['member'],
      owner: { resource_property: 'ownerEmail', user_attribute: 'email' },
    },
    delete_invoice: { roles: ['billing:admin'] },
  },
} as const;

/** The batch scenario's size. */
export const BATCH_SIZE = 100;

interface Users {
  /** A random row of the seeded users. */
  randomRow: () => number;
  /** The AuthZEN subject id of row n: `<provider>:<identifier>`. */
  subjectOf: (n: number) => string;
  /** The e-mail of row n. */
  emailOf: (n: number) => string;
}

export function authzenScenarios(
  options: { apiKey: string; clientId: string } & Users,
): Scenario[] {
  // AuthZEN's PEPs send the key as a Bearer token.
  const headers = {
    authorization: `Bearer ${options.apiKey}`,
    'content-type': 'application/json',
  };
  let sent = 0;
  /** An allowed owner check, a denied one, an allowed role check, a denied action, in turn. */
  const question = (n: number) => {
    const kind = sent++ % 4;
    const owner = kind === 1 ? options.emailOf(n + 1) : options.emailOf(n);
    return {
      subject: { type: 'user', id: options.subjectOf(n) },
      action: {
        name: kind === 2 ? 'read_invoice' : kind === 3 ? 'delete_invoice' : 'update_invoice',
      },
      resource: { type: 'invoice', id: `inv-${n}`, properties: { ownerEmail: owner } },
    };
  };
  const context = { client_id: options.clientId };
  const evaluation = (): RequestShape => ({
    method: 'POST',
    path: '/access/v1/evaluation',
    headers,
    body: JSON.stringify({ ...question(options.randomRow()), context }),
  });
  const batch = (): RequestShape => ({
    method: 'POST',
    path: '/access/v1/evaluations',
    headers,
    body: JSON.stringify({
      context,
      evaluations: Array.from({ length: BATCH_SIZE }, () => question(options.randomRow())),
    }),
  });
  return [
    {
      name: 'authzen-evaluation',
      description: 'AuthZEN: one evaluation about a random user (owner and role checks)',
      expect: 200,
      next: evaluation,
      samples: () => [evaluation()],
    },
    {
      name: 'authzen-evaluations-100',
      description: `AuthZEN: a batch of ${BATCH_SIZE} evaluations, each about a random user`,
      expect: 200,
      next: batch,
      samples: () => [batch()],
    },
  ];
}
