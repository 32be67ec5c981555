// Service keys: issue (the key is shown once), list, revoke.
import { z } from 'zod';
import { isoDateTime } from './common.ts';

export const IssueApiKeyRequest = z
  .object({
    name: z
      .string()
      .trim()
      .min(1, 'must not be blank')
      .max(100)
      .describe('A label for people: which backend or script holds the key'),
  })
  .meta({ id: 'IssueApiKeyRequest' });
export type IssueApiKeyRequest = z.infer<typeof IssueApiKeyRequest>;

const apiKeyFields = {
  id: z.string(),
  name: z.string(),
  prefix: z.string().describe('The first 12 characters of the key, to recognise it'),
  created_at: isoDateTime,
  last_used_at: isoDateTime.nullable().describe('Recorded at most once a minute'),
};

export const ApiKeyResponse = z.object(apiKeyFields).meta({ id: 'ApiKeyResponse' });
export type ApiKeyResponse = z.infer<typeof ApiKeyResponse>;

export const IssuedApiKeyResponse = z
  .object({
    ...apiKeyFields,
    key: z.string().startsWith('sk_').describe('The service key; shown only in this response'),
  })
  .meta({ id: 'IssuedApiKeyResponse' });
export type IssuedApiKeyResponse = z.infer<typeof IssuedApiKeyResponse>;

export const ApiKeyParams = z.object({ api_key_id: z.uuid({ message: 'must be an API key id (UUID)' }) });
