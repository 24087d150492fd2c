// A condition on users that every store evaluates in its own query language (SCIM filters
// are translated into it). Its meaning, identical on every store:
// - `identifier`, `name` and `email` compare without regard to ASCII case (A–Z = a–z);
//   `id` and `externalId` compare exactly. Text orders by UTF-8 bytes (after folding).
// - `active` is a boolean (eq, ne); `createdAt` and `updatedAt` are epoch milliseconds.
// - Only `externalId` can be absent: then `present` is false, every comparison is false
//   except `ne`, which is true (an absent value differs from every value).
// - `co`, `sw`, `ew` with an empty string hold for every present value.
// Values have the attribute's type; the layer that builds a predicate checks that.

export type UserAttribute =
  'id' | 'identifier' | 'externalId' | 'active' | 'name' | 'email' | 'createdAt' | 'updatedAt';

export type ComparisonOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';

export type UserPredicate =
  | { kind: 'all' }
  | { kind: 'none' }
  | { kind: 'and' | 'or'; operands: UserPredicate[] }
  | { kind: 'not'; operand: UserPredicate }
  | { kind: 'present'; attribute: UserAttribute }
  | {
      kind: 'compare';
      attribute: UserAttribute;
      operator: ComparisonOperator;
      value: string | number | boolean;
    };

/** Attributes compared without regard to ASCII case. */
export const CASE_INSENSITIVE_ATTRIBUTES: ReadonlySet<UserAttribute> = new Set([
  'identifier',
  'name',
  'email',
]);

/** A–Z → a–z, nothing else: the case folding of every case-insensitive comparison. */
export function foldAsciiCase(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}
