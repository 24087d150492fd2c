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
    assert.equal(isEmail(`${'a'.repeat(242)}@example.com`), true);
    assert.equal(isEmail(`${'a'.repeat(243)}@example.com`), false);
    assert.equal(isEmail(`a@${'a-'.repeat(100_000)}!`), false);
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
    ]) {
      assert.equal(isLanguageTag(invalid), false, invalid);
    }
  });
});
