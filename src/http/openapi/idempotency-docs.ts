import { z } from 'zod';

// The Idempotency-Key's parts of the OpenAPI document, shared by the area files that describe
// the upload routes (media, upload URL, tus operations).

/** The Idempotency-Key request header and the Idempotent-Replayed answer header (docs/api.md, "Idempotent uploads"). */
export const idempotencyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x20-\x7e]+$/)
    .optional()
    .meta({
      description:
        'Makes a retry safe: the same key from the same team on the same route with the same request within 24 hours answers the first ' +
        'answer again (with Idempotent-Replayed: true), storing and counting nothing more. 1-255 printable ASCII characters.',
      param: { id: 'IdempotencyKey' },
    }),
});
export const replayedHeader = z.literal('true').meta({
  description: 'Present on an answer replayed for a retried Idempotency-Key: the first request\'s status and body.',
  header: { id: 'IdempotentReplayed' },
});
/** An answer that may be a replay (Idempotent-Replayed). */
export const replayableAnswerHeaders = z.object({ 'Idempotent-Replayed': replayedHeader.optional() });

/** The 409 and 422 of a route honouring Idempotency-Key. */
export const IDEMPOTENCY_ERRORS = {
  409: 'A request with the same Idempotency-Key is still running (messageKey error.media.idempotencyInFlight; retry after Retry-After).',
  422: 'The Idempotency-Key was used for a different request (messageKey error.media.idempotencyKeyReused).',
};
