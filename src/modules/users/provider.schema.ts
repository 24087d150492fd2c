import { Type } from 'typebox';
import { RULE_KEYWORD } from '../../http/validation.js';

// A file of its own: applications name a provider too (scim_provider), and the users' schemas
// import the applications' ones.
export const Provider = Type.String({
  minLength: 3,
  maxLength: 64,
  // The look-ahead bounds the length first: without it this pattern backtracks
  // quadratically on long hostile input.
  pattern: '^(?=.{3,64}$)[a-z0-9_-]+_[a-z0-9_-]+$',
  [RULE_KEYWORD]: '3–64 characters of a–z 0–9 _ -, shaped <idp>_<kind> (e.g. google_oauth2)',
  description: 'Identity-provider label, `<idp>_<kind>`.',
  examples: ['google_oauth2'],
});
