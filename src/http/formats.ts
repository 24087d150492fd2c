// String formats used by the schemas. The same validators are registered with Ajv (request
// validation) and with TypeBox's registry (Value.Check in tests and tools), so a format means
// one thing everywhere.

import { fullFormats } from 'ajv-formats/dist/formats.js';
import Format from 'typebox/format';

const EMAIL = fullFormats.email as RegExp;
const DATE_TIME = fullFormats['date-time'] as { validate: (value: string) => boolean };

/**
 * A dot-atom address with a dotted domain. Lengths are checked first so the regex never sees
 * more than RFC 5321 allows (254 in all, 64 before the @, 63 per domain label); the top-level
 * label must not be all digits (RFC 3696 §2), which rules out dotted IPv4 addresses.
 */
export function isEmail(value: string): boolean {
  if (value.length > 254 || !EMAIL.test(value)) return false;
  const at = value.lastIndexOf('@');
  if (at > 64) return false;
  const labels = value.slice(at + 1).split('.');
  return labels.every((label) => label.length <= 63) && !/^[0-9]+$/.test(labels.at(-1)!);
}

/** An absolute http: or https: URL with a host; no whitespace, control characters or unpaired surrogates. */
export function isHttpUrl(value: string): boolean {
  // The host must follow "//" directly: WHATWG URL would read https:///x as https://x/.
  if (
    value.length > 2048 ||
    !/^https?:\/\/[^/?#]/i.test(value) ||
    /[\s\p{Cc}\p{Cs}]/u.test(value)
  ) {
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

/**
 * A valid BCP 47 language tag of at most 35 characters: the RFC 5646 syntax, and neither a
 * variant nor an extension singleton repeated (RFC 5646 §2.2.5, §2.2.6).
 */
export function isLanguageTag(value: string): boolean {
  if (value.length > 35 || !LANGUAGE_TAG.test(value)) return false;
  const subtags = value.toLowerCase().split('-');
  const privateUse = subtags.indexOf('x');
  const checked = privateUse === -1 ? subtags : subtags.slice(0, privateUse);
  const variants = checked.filter(
    (subtag, index) => index > 0 && /^(?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3})$/.test(subtag),
  );
  const singletons = checked.filter((subtag) => subtag.length === 1);
  return (
    new Set(variants).size === variants.length && new Set(singletons).size === singletons.length
  );
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
