// Hot queries compiled once. Building a Kysely query and compiling it costs a few µs and some
// garbage on every call; for the queries every request runs (find a user, an application, a
// page of users) the SQL text never changes, only the values. A precompiled query is built
// once with placeholders, and each call binds the values in the placeholders' order.

import type { Compilable, CompiledQuery } from 'kysely';

class Placeholder {
  constructor(readonly index: number) {}
}

/** Stands for the argument at `index` when the query is built; typed as the value it stands for. */
export type Parameter = <T>(index: number) => T;

const parameter: Parameter = <T>(index: number) => new Placeholder(index) as unknown as T;

/**
 * Compiles `build(parameter)` once and returns a function that binds `args[i]` wherever the
 * query used `parameter(i)`. Values given literally while building stay as they were.
 */
export function precompile<Row>(
  build: (parameter: Parameter) => Compilable<Row>,
): (...args: unknown[]) => CompiledQuery<Row> {
  const compiled = build(parameter).compile();
  const slots = compiled.parameters.map((value) =>
    value instanceof Placeholder ? value.index : { literal: value },
  );
  return (...args) => ({
    ...compiled,
    parameters: slots.map((slot) => (typeof slot === 'number' ? args[slot] : slot.literal)),
  });
}
