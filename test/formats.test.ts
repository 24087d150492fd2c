import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDateTime, isEmail, isHttpUrl, isLanguageTag } from '../src/http/formats.js';

describe('string formats', () => {
  it('date-time: RFC 3339 with T, and a time JavaScript can represent', () => {
    for (const valid of [
      '2027-01-01T00:00:00Z',
      '2027-01-01t00:00:00.123+01:00',
      '2027-06-30T23:59:59.999-07:30',
    ]) {
      assert.equal(isDateTime(valid), true, valid);
    }
    for (const invalid of [
      '2027-01-01 00:00:00Z',
      '2027-12-31T23:59:60Z',
      '2027-02-30T00:00:00Z',
      '2027-01-01T00:00:00',
      '2027-01-01',
      'tomorrow',
    ]) {
      assert.equal(isDateTime(invalid), false, invalid);
    }
  });

  it('email: checks length before the pattern, so hostile input stays cheap', () => {
    assert.equal(isEmail('ada@example.com'), true);
    const domain = (last: number) => `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(last)}.com`;
    assert.equal(`${'a'.repeat(64)}@${domain(57)}`.length, 254);
    assert.equal(isEmail(`${'a'.repeat(64)}@${domain(57)}`), true);
    assert.equal(isEmail(`${'a'.repeat(64)}@${domain(58)}`), false, '255 characters');
    assert.equal(isEmail(`a@${'a-'.repeat(100_000)}!`), false);
    assert.equal(isEmail(`${'x'.repeat(64)}@example.com`), true);
    assert.equal(isEmail(`${'x'.repeat(65)}@example.com`), false, 'local part over 64');
    assert.equal(isEmail(`a@${'d'.repeat(63)}.com`), true);
    assert.equal(isEmail(`a@${'d'.repeat(64)}.com`), false, 'label over 63');
    assert.equal(isEmail('a@192.168.0.1'), false, 'numeric top-level label');
    assert.equal(isEmail('a@example.co.uk'), true);
  });

  it('http-url: absolute http(s) with a host', () => {
    assert.equal(isHttpUrl('https://example.com/a.png'), true);
    assert.equal(isHttpUrl('HTTP://EXAMPLE.COM'), true);
    for (const invalid of [
      'ftp://example.com',
      '/a.png',
      'https://',
      'https:///x',
      'https://a b.com',
      'javascript:alert(1)',
      'https://example.com/\ud800x',
    ]) {
      assert.equal(isHttpUrl(invalid), false, invalid);
    }
  });

  it('language-tag: RFC 5646 syntax', () => {
    for (const valid of [
      'en',
      'pt-BR',
      'zh-Hant-TW',
      'es-419',
      'sr-Latn-RS',
      'de-CH-1996',
      'en-US-x-twain',
      'i-klingon',
      'x-private',
      'EN-gb',
      'de-DE-1901-1996',
      'en-a-bbb-b-ccc-x-a-a',
    ]) {
      assert.equal(isLanguageTag(valid), true, valid);
    }
    for (const invalid of [
      'en_US',
      'e',
      'en-',
      '-en',
      'english-language-x',
      'a'.repeat(36),
      'en--US',
      'de-DE-1901-1901',
      'en-a-bbb-a-ccc',
    ]) {
      assert.equal(isLanguageTag(invalid), false, invalid);
    }
  });
});
