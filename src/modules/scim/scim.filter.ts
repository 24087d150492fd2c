// The SCIM filter language (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2), parsed by recursive
// descent into a small syntax tree. Written here rather than taken from a package: the ones
// published (scim2-parse-filter 0.2.10, used by scim-patch 0.8.3) decode "a\\b" as two
// backslashes, turn `emails[type eq "work"].value eq "x"` into two unrelated conditions,
// refuse `True`, and overflow the stack on deep nesting (docs/decisions.md, SCIM).
//
// Besides the RFC's grammar it accepts what provisioning clients send: keywords and literals
// in any case (ABNF literals are case-insensitive anyway), `valuePath.subAttr op value` (Entra's
// `emails[type eq "work"].value eq "x"`, meaning one element matching both), `not` without
// parentheses, and a bare word as a string value (`externalId eq jyoung`).

import { scimBadRequest } from './scim.errors.js';

export type ComparisonOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type FilterValue = string | number | boolean | null;

/** `[schema ":"] attribute ["." subAttribute]`; names as written (they compare case-insensitively). */
export interface AttributePath {
  schema: string | null;
  attribute: string;
  subAttribute: string | null;
}

export type Filter =
  | { kind: 'and' | 'or'; operands: Filter[] }
  | { kind: 'not'; operand: Filter }
  | { kind: 'present'; path: AttributePath }
  | { kind: 'compare'; path: AttributePath; operator: ComparisonOperator; value: FilterValue }
  /** Elements of the multi-valued `path` for which `filter` holds (at least one must). */
  | { kind: 'valuePath'; path: AttributePath; filter: Filter };

/** A PATCH target: an attribute, or elements of one chosen by a filter, optionally a sub-attribute of them. */
export interface PatchPath {
  path: AttributePath;
  filter: Filter | null;
  /** After `]`: `emails[type eq "work"].value`. */
  subAttribute: string | null;
}

const OPERATORS = new Set(['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']);
/** Deeper nesting (parentheses, brackets, not) is refused: no real filter needs it. */
const MAX_DEPTH = 32;
/** More comparisons than this is not a provisioning query; it also keeps the SQL small. */
const MAX_COMPARISONS = 100;
const ATTRIBUTE_NAME = /^(?:\$ref|[A-Za-z][A-Za-z0-9_-]*)$/;
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$/;
const BARE_WORD = /^[A-Za-z0-9._@+~-]+$/;

type Token =
  | { type: 'punct'; text: '(' | ')' | '[' | ']'; at: number }
  | { type: 'string'; value: string; at: number }
  | { type: 'word'; text: string; at: number; glued: boolean };

function fail(detail: string): never {
  throw scimBadRequest('invalidFilter', detail);
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < text.length) {
    const char = text[index]!;
    if (char === ' ' || char === '\t' || char === '\n' || char === '\r') {
      index++;
    } else if (char === '(' || char === ')' || char === '[' || char === ']') {
      tokens.push({ type: 'punct', text: char, at: index });
      index++;
    } else if (char === '"') {
      const start = index++;
      while (index < text.length && text[index] !== '"') index += text[index] === '\\' ? 2 : 1;
      if (index >= text.length)
        fail(`The string starting at character ${start + 1} is not closed.`);
      index++;
      let value: unknown;
      try {
        value = JSON.parse(text.slice(start, index));
      } catch {
        fail(`The string starting at character ${start + 1} is not a valid JSON string.`);
      }
      tokens.push({ type: 'string', value: value as string, at: start });
    } else {
      const start = index;
      while (index < text.length && !' \t\n\r()[]"'.includes(text[index]!)) index++;
      const previous = tokens.at(-1);
      const glued =
        previous?.type === 'punct' && previous.text === ']' && previous.at === start - 1;
      tokens.push({ type: 'word', text: text.slice(start, index), at: start, glued });
    }
  }
  return tokens;
}

/** `urn:…:User:name.givenName` → schema, attribute, sub-attribute; invalidFilter otherwise. */
export function parseAttributePath(text: string): AttributePath {
  const colon = text.lastIndexOf(':');
  const schema = colon === -1 ? null : text.slice(0, colon);
  const names = text.slice(colon + 1).split('.');
  if (names.length > 2 || !names.every((name) => ATTRIBUTE_NAME.test(name))) {
    fail(`"${text.slice(0, 200)}" is not an attribute path.`);
  }
  return { schema, attribute: names[0]!, subAttribute: names[1] ?? null };
}

class Parser {
  #position = 0;
  #depth = 0;
  #comparisons = 0;

  constructor(private readonly tokens: Token[]) {}

  get done(): boolean {
    return this.#position >= this.tokens.length;
  }

  peek(): Token | undefined {
    return this.tokens[this.#position];
  }

  next(what: string): Token {
    const token = this.tokens[this.#position++];
    if (token === undefined) fail(`The filter ends where ${what} was expected.`);
    return token;
  }

  keyword(): string | null {
    const token = this.peek();
    return token?.type === 'word' ? token.text.toLowerCase() : null;
  }

  expect(text: ')' | ']'): void {
    const token = this.next(`"${text}"`);
    if (token.type !== 'punct' || token.text !== text) {
      fail(`Expected "${text}" at character ${token.at + 1}.`);
    }
  }

  /** filter := term ("or" term)* */
  filter(): Filter {
    const operands = [this.term()];
    while (this.keyword() === 'or') {
      this.#position++;
      operands.push(this.term());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'or', operands };
  }

  /** term := factor ("and" factor)* */
  term(): Filter {
    const operands = [this.factor()];
    while (this.keyword() === 'and') {
      this.#position++;
      operands.push(this.factor());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'and', operands };
  }

  /** factor := "not" factor | "(" filter ")" | attrPath ("pr" | op value | "[" filter "]" [".sub" op value]) */
  factor(): Filter {
    if (++this.#depth > MAX_DEPTH) fail(`The filter nests deeper than ${MAX_DEPTH} levels.`);
    try {
      const token = this.next('an expression');
      if (token.type === 'punct') {
        if (token.text !== '(') fail(`Unexpected "${token.text}" at character ${token.at + 1}.`);
        const inner = this.filter();
        this.expect(')');
        return inner;
      }
      if (token.type === 'string') fail(`Expected an attribute at character ${token.at + 1}.`);
      if (token.text.toLowerCase() === 'not') return { kind: 'not', operand: this.factor() };
      const path = parseAttributePath(token.text);
      const after = this.peek();
      if (after?.type === 'punct' && after.text === '[') {
        this.#position++;
        return this.valuePath(path);
      }
      return this.comparison(path, token);
    } finally {
      this.#depth--;
    }
  }

  valuePath(path: AttributePath): Filter {
    if (path.subAttribute !== null) fail(`"${path.attribute}.${path.subAttribute}[" is not valid.`);
    const filter = this.filter();
    this.expect(']');
    const sub = this.peek();
    if (sub?.type === 'word' && sub.glued && sub.text.startsWith('.')) {
      // emails[type eq "work"].value eq "x": one element must match both.
      this.#position++;
      const subPath = parseAttributePath(sub.text.slice(1));
      if (subPath.schema !== null || subPath.subAttribute !== null) {
        fail(`"${sub.text}" is not a sub-attribute.`);
      }
      const condition = this.comparison(subPath, sub);
      return { kind: 'valuePath', path, filter: { kind: 'and', operands: [filter, condition] } };
    }
    return { kind: 'valuePath', path, filter };
  }

  comparison(path: AttributePath, at: Token): Filter {
    const operatorToken = this.next(`an operator after "${describe(at)}"`);
    const operator = operatorToken.type === 'word' ? operatorToken.text.toLowerCase() : '';
    if (++this.#comparisons > MAX_COMPARISONS) {
      fail(`The filter has more than ${MAX_COMPARISONS} comparisons.`);
    }
    if (operator === 'pr') return { kind: 'present', path };
    if (!OPERATORS.has(operator)) {
      fail(`"${describe(operatorToken)}" at character ${operatorToken.at + 1} is not an operator.`);
    }
    return {
      kind: 'compare',
      path,
      operator: operator as ComparisonOperator,
      value: this.value(),
    };
  }

  value(): FilterValue {
    const token = this.next('a value');
    if (token.type === 'string') return token.value;
    if (token.type === 'punct') fail(`Expected a value at character ${token.at + 1}.`);
    const lower = token.text.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
    if (lower === 'null') return null;
    if (NUMBER.test(token.text)) return Number(token.text);
    if (BARE_WORD.test(token.text) && !['and', 'or', 'not'].includes(lower)) return token.text;
    fail(`"${describe(token)}" at character ${token.at + 1} is not a value (quote strings).`);
  }
}

function describe(token: Token): string {
  const text =
    token.type === 'string' ? JSON.stringify(token.value) : 'text' in token ? token.text : '';
  return text.slice(0, 100);
}

/** Parses a `filter` query parameter; ScimError invalidFilter, saying where, when it is not one. */
export function parseFilter(text: string): Filter {
  const parser = new Parser(tokenize(text));
  if (parser.done) fail('The filter is empty.');
  const filter = parser.filter();
  const rest = parser.peek();
  if (rest !== undefined) {
    fail(`Unexpected "${describe(rest)}" at character ${rest.at + 1}.`);
  }
  return filter;
}

/** Parses a PATCH `path`; ScimError invalidPath when it is not one. */
export function parsePatchPath(text: string): PatchPath {
  try {
    const bracket = text.indexOf('[');
    if (bracket === -1) return { path: parseAttributePath(text), filter: null, subAttribute: null };
    const close = text.lastIndexOf(']');
    const tail = text.slice(close + 1);
    if (close < bracket || (tail !== '' && !tail.startsWith('.'))) {
      throw scimBadRequest('invalidPath', `"${text.slice(0, 200)}" is not a valid path.`);
    }
    const path = parseAttributePath(text.slice(0, bracket));
    if (path.subAttribute !== null) {
      throw scimBadRequest('invalidPath', `"${text.slice(0, 200)}" is not a valid path.`);
    }
    const filter = parseFilter(text.slice(bracket + 1, close));
    const subAttribute = tail === '' ? null : parseAttributePath(tail.slice(1));
    if (
      subAttribute !== null &&
      (subAttribute.schema !== null || subAttribute.subAttribute !== null)
    ) {
      throw scimBadRequest('invalidPath', `"${tail}" is not a sub-attribute.`);
    }
    return { path, filter, subAttribute: subAttribute?.attribute ?? null };
  } catch (error) {
    if (error instanceof Error && 'scimType' in error && error.scimType === 'invalidFilter') {
      throw scimBadRequest('invalidPath', `The path is not valid: ${(error as Error).message}`);
    }
    throw error;
  }
}
