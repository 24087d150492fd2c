// What the console's forms send, turned into the API's request bodies, so that the API's own
// schemas check them and their problem documents' pointers name the form's fields.

import { Type } from 'typebox';
import { type InvalidParam, invalid } from '../../problems.js';
import { RULE_KEYWORD, createBodyChecker } from '../../http/validation.js';
import { Nullable } from '../../http/schemas.js';
import { ActionName, ClientId } from '../applications/applications.schemas.js';
import { Email, Provider, Scope, UserRole } from '../users/users.schemas.js';

/** A parsed application/x-www-form-urlencoded body: every value of every name, in order. */
export type FormFields = Record<string, string[]>;

export function parseForm(text: string): FormFields {
  const fields: FormFields = {};
  for (const [name, value] of new URLSearchParams(text)) (fields[name] ??= []).push(value);
  return fields;
}

/** The first value of a field ('' when absent). */
export function formText(form: FormFields | undefined, name: string): string {
  return form?.[name]?.[0] ?? '';
}

/** Every non-empty value of a field, each also split on whitespace and commas. */
export function formList(form: FormFields | undefined, name: string): string[] {
  return (form?.[name] ?? []).flatMap((value) => value.split(/[\s,]+/)).filter((v) => v !== '');
}

/** Every value of a field, uniquely, in order (chips kept plus the ones typed). */
export function uniqueList(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** A whole number written plainly stays a number; anything else stays text, so the schema names it. */
export function formInteger(text: string): number | string {
  return /^-?(?:0|[1-9][0-9]*)$/.test(text.trim()) ? Number(text.trim()) : text;
}

/** JSON text → value ('' → null); unreadable JSON is a field error of `pointer`. */
export function formJson(text: string, pointer: string): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw invalid([{ pointer, detail: `must be valid JSON (${(error as Error).message})` }]);
  }
}

const checkBody = createBodyChecker();

/** Throws the API's 400 problem when `value` does not match the body schema. */
export function assertBody<T>(schema: object, value: unknown): T {
  const errors: InvalidParam[] = checkBody(schema, value);
  if (errors.length > 0) throw invalid(errors);
  return value as T;
}

/** The applications list's search box. */
export const ApplicationSearch = Type.Object(
  { prefix: Type.Union([Type.Literal(''), ClientId]) },
  { additionalProperties: false },
);

/** The application a users key names to see its users. */
export const ApplicationChoice = Type.Object(
  { client_id: ClientId },
  { additionalProperties: false },
);

/** The users list's filters, as the API's list query names them. */
export const UserFilters = Type.Object(
  {
    provider: Nullable(Provider),
    email: Nullable(Email),
    role: Nullable(UserRole),
    scope: Nullable(Scope),
    active: Nullable(Type.Boolean()),
  },
  { additionalProperties: false },
);

const PlainText = (maxLength: number) =>
  Type.String({
    maxLength,
    pattern: '^[^\\x00-\\x1f\\x7f-\\x9f]*$',
    [RULE_KEYWORD]: `at most ${maxLength} characters without control characters`,
  });

/** The application page's "would this user be allowed?": an AuthZEN question's members. */
export const DecisionQuestion = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: 1024 }),
    action: ActionName,
    resource_type: Type.Optional(PlainText(128)),
    resource_id: Type.Optional(PlainText(1024)),
    resource_properties: Type.Optional(Type.Unsafe<Record<string, unknown>>({ type: 'object' })),
  },
  { additionalProperties: false },
);
