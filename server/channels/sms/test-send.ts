// A test SMS through one of the tenant's transports (enabled or not, no failover): the provider's
// answer as it would be recorded on a delivery.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../../base/context.ts';
import type { SendTestSmsResponse, SmsProvider } from '../../schemas/sms.ts';
import { sendSmsWith } from './channel.ts';
import { loadSmsTransport } from './sms-transports.ts';

export async function testSmsTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: SmsProvider,
  input: { to: string; text?: string },
): Promise<SendTestSmsResponse> {
  const transport = await loadSmsTransport(runtime, em, tenantId, provider);
  if (transport.state === 'unreadable')
    return {
      ok: false,
      error:
        'credentials_unreadable: the secrets were encrypted with a key that is no longer in the key ring; set them again',
    };
  let answer;
  try {
    answer = await sendSmsWith(runtime, transport.credentials, {
      to: input.to,
      text: input.text ?? `Herald test message: your ${provider} SMS transport works.`,
    });
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
  if (answer.status === 'sent') return { ok: true, message_id: answer.providerMessageId ?? '' };
  return { ok: false, error: answer.error };
}
