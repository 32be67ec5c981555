// The environment of an operator's shell for CLI tests that run init or restore: no HERALD_* settings
// and no DATABASE_URL, so herald.json and the flags alone decide (the test runner's own are unset).
export const OPERATOR_ENV: Record<string, string | undefined> = {
  DATABASE_URL: undefined,
  HERALD_DATABASE_URL: undefined,
  HERALD_HOME: undefined,
  HERALD_PORT: undefined,
  HERALD_HOST: undefined,
  HERALD_ENCRYPTION_KEYS: undefined,
  HERALD_SMTP_URL: undefined,
};
