// Destructive commands ask first unless --yes is given. Without a terminal they never prompt: they
// refuse with a usage error (exit 2) that names --yes. Declining or cancelling exits 1.
import { confirm, isCancel } from '@clack/prompts';
import { CliError, usageError } from './output.ts';

export interface Confirmation {
  /** The question asked at a terminal. */
  question: string;
  /** The usage error when stdin is not a terminal; it should name --yes. */
  withoutTerminal: string;
  /** The message when the answer is no (default "cancelled"). */
  declined?: string;
  /** The preselected answer (default yes). */
  initialValue?: boolean;
}

export async function confirmUnlessYes(yes: boolean | undefined, confirmation: Confirmation): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw usageError(confirmation.withoutTerminal);
  const answer = await confirm({ message: confirmation.question, initialValue: confirmation.initialValue });
  if (isCancel(answer) || answer !== true) throw new CliError(confirmation.declined ?? 'cancelled');
}
