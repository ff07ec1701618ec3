// The tests' PostgreSQL is the one the bench starts too: one launcher, outside test/.
export { postgresBinDir, startTestPostgres, type TestPostgres } from '../../scripts/postgres.js';
