// Every column that holds a key-ring ciphertext, with the additional data (row identity) it is bound
// to. Key rotation walks this list to re-wrap every secret; a feature that stores a new secret adds
// its column here, and encrypts/decrypts with exactly the `aad` given for it.
export interface EncryptedColumn {
  table: string;
  column: string;
  /** Columns that identify a row (used to update it in batches). */
  keyColumns: string[];
  /** The additional authenticated data of a row, from its key columns. */
  aad(row: Record<string, unknown>): string;
}

export const encryptedColumns: EncryptedColumn[] = [
  { table: 'install_secrets', column: 'ciphertext', keyColumns: ['name'], aad: (r) => `install_secrets/${r.name}` },
  {
    table: 'sender_domains',
    column: 'dkim_private_key_ciphertext',
    keyColumns: ['id'],
    aad: (r) => `sender_domains/${r.id}/dkim_private_key`,
  },
  { table: 'email_transports', column: 'password_ciphertext', keyColumns: ['tenant_id'], aad: (r) => `email_transports/${r.tenant_id}/password` },
  {
    table: 'push_transports',
    column: 'secrets_ciphertext',
    keyColumns: ['tenant_id', 'provider'],
    aad: (r) => `push_transports/${r.tenant_id}/${r.provider}/secrets`,
  },
  {
    table: 'events',
    column: 'secret_variables_ciphertext',
    keyColumns: ['id'],
    aad: (r) => `events/${r.id}/secret_variables`,
  },
];
