// The name of the system-email queue and the additional data its sealed link tokens are bound to: in a
// module of their own, so that the list of encrypted columns (crypto/encrypted-columns.ts) can name
// them without importing the job and what the job imports.
export const SYSTEM_EMAIL_JOB = 'system-email';

/** The additional data of a system email's sealed token: the seal's own random id. */
export const systemEmailAad = (sealId: string) => `system_email/${sealId}`;
