import { describe } from 'node:test';
import { openTestPostgresStore, skipWithoutPostgres } from '../../../test/postgres.js';
import { describeStoreContract } from '../store.contract.js';

const skip = await skipWithoutPostgres();

describe('PostgreSQL store', { skip }, () => {
  describeStoreContract('PostgreSQL', () => openTestPostgresStore());
});
