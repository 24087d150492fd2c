// Reading an import's body as it streams in, in constant memory: NDJSON split into lines, or
// the `users` array of a JSON document (a Keycloak realm export) split into its elements. Each
// item is numbered from 1 (lines of NDJSON; elements of the array) and decoded as UTF-8; an item
// that cannot be read is an item with an error, and reading goes on with the next one.

/** One item of an import's body: its number (from 1) and its text, or why it cannot be read. */
export type SourceItem =
  | { line: number; text: string; error?: undefined }
  | { line: number; text?: undefined; error: string };

/** The longest item read: anything longer is an error item, and skipped without being kept. */
export const MAX_ITEM_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;

/**
 * The lines of an NDJSON byte stream. Blank lines are skipped (but counted in the numbering), a
 * trailing carriage return is dropped, a line past MAX_ITEM_BYTES or not valid UTF-8 is an error.
 */
export async function* ndjsonLines(source: AsyncIterable<Uint8Array>): AsyncGenerator<SourceItem> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let parts: Uint8Array[] = [];
  let size = 0;
  let tooLong = false;
  let line = 0;
  const finish = (): SourceItem | undefined => {
    line++;
    if (tooLong) {
      tooLong = false;
      return { line, error: `the line is longer than ${MAX_ITEM_BYTES} bytes` };
    }
    const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    parts = [];
    size = 0;
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      return { line, error: 'the line is not valid UTF-8' };
    }
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (/^\s*$/.test(text)) return undefined;
    return { line, text };
  };
  for await (const chunk of source) {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      if (!tooLong) {
        if (size + piece.length > MAX_ITEM_BYTES) {
          tooLong = true;
          parts = [];
          size = 0;
        } else if (piece.length > 0) {
          // A copy: the stream may reuse its chunk's memory.
          parts.push(Uint8Array.prototype.slice.call(piece));
          size += piece.length;
        }
      }
      if (end === -1) break;
      const item = finish();
      if (item !== undefined) yield item;
      start = end + 1;
    }
  }
  if (size > 0 || tooLong) {
    const item = finish();
    if (item !== undefined) yield item;
  }
}

/**
 * The elements of the `users` array of a JSON document's top-level object, each as its own
 * text, numbered from 1, without holding the document: a scanner follows strings and nesting
 * only. Members other than `users` are passed over. An element that is not an object is an
 * error item. A document that is not an object, or ends early, ends with an error item.
 */
export async function* jsonDocumentUsers(
  source: AsyncIterable<Uint8Array>,
): AsyncGenerator<SourceItem> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** The text of the string being read, when it may be a key of the top-level object. */
  let key: string | null = null;
  let lastKey: string | null = null;
  let inUsers = false;
  let element: string[] | null = null;
  let elementSize = 0;
  let elementTooLong = false;
  let count = 0;
  let started = false;
  for await (const chunk of source) {
    let text: string;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      yield { line: count + 1, error: 'the document is not valid UTF-8' };
      return;
    }
    let from = 0;
    for (let index = 0; index < text.length; index++) {
      const char = text[index]!;
      if (!started) {
        if (/\s/.test(char)) continue;
        if (char !== '{') {
          yield { line: 1, error: 'the document is not a JSON object with a `users` array' };
          return;
        }
        started = true;
      }
      if (inString) {
        if (escaped) escaped = false;
        else if (char === '\\') escaped = true;
        else if (char === '"') {
          inString = false;
          if (key !== null) {
            lastKey = key;
            key = null;
          }
        } else if (key !== null) key += char;
        continue;
      }
      if (char === '"') {
        inString = true;
        if (depth === 1) key = '';
        else if (depth === 2 && inUsers && element === null) {
          // A string element of users[]: not a user (the string is read past, not kept).
          count++;
          yield { line: count, error: 'the element of `users` is not an object' };
        }
        continue;
      }
      if (char === '{' || char === '[') {
        if (depth === 1 && char === '[' && lastKey === 'users') {
          inUsers = true;
        } else if (depth === 2 && inUsers && element === null) {
          element = [];
          elementSize = 0;
          elementTooLong = false;
          from = index;
        }
        depth++;
        continue;
      }
      if (char === '}' || char === ']') {
        depth--;
        if (depth === 1 && inUsers && char === ']') {
          inUsers = false;
        } else if (depth === 2 && inUsers && element !== null) {
          element.push(text.slice(from, index + 1));
          count++;
          const whole = element.join('');
          element = null;
          if (elementTooLong || whole.length > MAX_ITEM_BYTES) {
            yield { line: count, error: `the user is longer than ${MAX_ITEM_BYTES} characters` };
          } else if (!whole.startsWith('{')) {
            yield { line: count, error: 'the element of `users` is not an object' };
          } else {
            yield { line: count, text: whole };
          }
        }
        continue;
      }
      if (depth === 2 && inUsers && element === null && !/[\s,]/.test(char)) {
        // A number, true, false or null as an element.
        count++;
        yield { line: count, error: 'the element of `users` is not an object' };
        while (index + 1 < text.length && !/[\s,\]]/.test(text[index + 1]!)) index++;
      }
    }
    if (element !== null) {
      const piece = text.slice(from);
      elementSize += piece.length;
      if (elementSize > MAX_ITEM_BYTES) elementTooLong = true;
      else element.push(piece);
    }
    from = 0;
  }
  if (!started || depth !== 0) {
    yield { line: count + 1, error: 'the document ends before it is complete' };
  }
}
