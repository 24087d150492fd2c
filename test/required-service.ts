// The policy for tests that need a service of the machine (PostgreSQL, Redis): run when it
// answers; in CI (CI=true) fail when it does not; elsewhere skip with the reason printed.

/** The `skip` option for a describe(): false when `unavailable` is undefined, else the reason. */
export function skipUnless(service: string, unavailable: string | undefined): string | false {
  if (unavailable === undefined) return false;
  if (process.env.CI === 'true') throw new Error(`${service} is required in CI: ${unavailable}`);
  process.stdout.write(`# skipping ${service} tests: ${unavailable}\n`);
  return `${service} tests skipped: ${unavailable}`;
}
