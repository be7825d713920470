import { maskAddress, redactSecrets } from './mail-sender.ts';

/** Why a message was not sent, as a delivery records it (errorCode, errorMessage). */
export interface MailFailure {
  /** `SMTP_<reply code>` when the server answered, nodemailer's code (ECONNECTION, ETIMEDOUT...) when it did not. */
  code: string;
  /** The error's text with addresses masked and secrets shortened. */
  message: string;
  /** A 5xx reply: the server refused the message for good, trying again changes nothing. */
  permanent: boolean;
}

const MAX_MESSAGE_LENGTH = 500;

/** Every address in a text masked as maskAddress does it (an SMTP reply often names the recipient). */
export function maskAddresses(text: string): string {
  return text.replace(/[^\s<>()"',;:]+@[^\s<>()"',;:]+/g, (address) => maskAddress(address));
}

export function mailFailure(error: unknown): MailFailure {
  const { responseCode, code } = (error ?? {}) as { responseCode?: unknown; code?: unknown };
  const text = error instanceof Error ? error.message : String(error);
  const reply = typeof responseCode === 'number' ? responseCode : null;
  return {
    code: reply !== null ? `SMTP_${reply}` : typeof code === 'string' && code ? code.slice(0, 64) : 'UNKNOWN',
    message: redactSecrets(maskAddresses(text)).slice(0, MAX_MESSAGE_LENGTH),
    permanent: reply !== null && reply >= 500 && reply < 600,
  };
}
