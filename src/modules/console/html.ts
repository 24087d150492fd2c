// HTML for the console's views: a tagged template that escapes every interpolated value
// unless it is already HTML (made by this tag). Views never concatenate strings into markup.

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Markup that is safe to insert as it is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type Renderable =
  Html | string | number | boolean | null | undefined | readonly Renderable[];

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character]!);
}

function render(value: Renderable): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value as string | number | boolean));
}

/** html`<p>${text}</p>`: text is escaped, Html is kept, arrays are joined, null and false vanish. */
export function html(strings: TemplateStringsArray, ...values: Renderable[]): Html {
  let text = strings[0]!;
  for (let index = 0; index < values.length; index++) {
    text += render(values[index]) + strings[index + 1]!;
  }
  return new Html(text);
}
