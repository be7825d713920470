import { replayedAnswer } from '../uploads/idempotency/run-idempotent.ts';
import type { UploadResult } from '../uploads/upload-use-case.ts';
import { json, type HttpResult } from './types.ts';

/** An upload's answer: 201 with the committed file, or a completed Idempotency-Key's first answer again; `headers` (RateLimit, Cache-Control) added. */
export function uploadAnswer(result: UploadResult<unknown>, headers: Record<string, string>): HttpResult {
  return result.replayed ? replayedAnswer(result.answer, headers) : json(201, result.file, headers);
}
