// String formats used by the schemas. The same validators are registered with Ajv (request
// validation) and with TypeBox's registry (Value.Check in tests and tools), so a format means
// one thing everywhere.

import { fullFormats } from 'ajv-formats/dist/formats.js';
import Format from 'typebox/format';

const EMAIL = fullFormats.email as RegExp;
const DATE_TIME = fullFormats['date-time'] as { validate: (value: string) => boolean };

/** RFC 5321 limits a path to 254 characters; checked first so the regex never sees more. */
export function isEmail(value: string): boolean {
  return value.length <= 254 && EMAIL.test(value);
}

/** An absolute http: or https: URL with a host, no whitespace or control characters. */
export function isHttpUrl(value: string): boolean {
  // The host must follow "//" directly: WHATWG URL would read https:///x as https://x/.
  if (value.length > 2048 || !/^https?:\/\/[^/?#]/i.test(value) || /[\s\p{Cc}]/u.test(value)) {
    return false;
  }
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

// RFC 5646 Language-Tag: langtag / privateuse / grandfathered, case-insensitive.
const ALNUM = '[A-Za-z0-9]';
const LANGTAG =
  '(?:[A-Za-z]{2,3}(?:-[A-Za-z]{3}){0,3}|[A-Za-z]{4,8})' + // language [extlang]
  '(?:-[A-Za-z]{4})?' + // script
  '(?:-(?:[A-Za-z]{2}|[0-9]{3}))?' + // region
  `(?:-(?:${ALNUM}{5,8}|[0-9]${ALNUM}{3}))*` + // variants
  `(?:-[0-9A-WYZa-wyz](?:-${ALNUM}{2,8})+)*` + // extensions
  `(?:-[Xx](?:-${ALNUM}{1,8})+)?`; // private use
const PRIVATE_USE = `[Xx](?:-${ALNUM}{1,8})+`;
const IRREGULAR = [
  'en-GB-oed',
  'i-ami',
  'i-bnn',
  'i-default',
  'i-enochian',
  'i-hak',
  'i-klingon',
  'i-lux',
  'i-mingo',
  'i-navajo',
  'i-pwn',
  'i-tao',
  'i-tay',
  'i-tsu',
  'sgn-BE-FR',
  'sgn-BE-NL',
  'sgn-CH-DE',
];
const LANGUAGE_TAG = new RegExp(`^(?:${LANGTAG}|${PRIVATE_USE}|${IRREGULAR.join('|')})$`, 'i');

/** A BCP 47 language tag (RFC 5646 syntax), at most 35 characters. */
export function isLanguageTag(value: string): boolean {
  return value.length <= 35 && LANGUAGE_TAG.test(value);
}

/**
 * RFC 3339 date-time with the `T` separator (the grammar's; a space is only "by agreement"),
 * and representable in JavaScript: a leap second (:60) passes the grammar but not Date.parse.
 */
export function isDateTime(value: string): boolean {
  return (
    /^\d{4}-\d{2}-\d{2}[Tt]/.test(value) &&
    DATE_TIME.validate(value) &&
    Number.isFinite(Date.parse(value))
  );
}

export const stringFormats = {
  email: isEmail,
  'http-url': isHttpUrl,
  'language-tag': isLanguageTag,
  'date-time': isDateTime,
} as const satisfies Record<string, (value: string) => boolean>;

export function registerTypeBoxFormats(): void {
  for (const [name, validate] of Object.entries(stringFormats)) Format.Set(name, validate);
}
