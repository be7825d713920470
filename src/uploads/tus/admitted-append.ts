import type { AdmissionGate } from '../admission/admission-gate.ts';
import type { UploadBody } from '../receive/upload-body.ts';
import type { TusPatchResult, TusService } from './tus-service.ts';

/**
 * Appends a request's bytes to a tus upload (a PATCH, or the body of a creation-with-upload) once
 * the admission gate lets it run: resumable uploads share the gate with every other upload.
 */
export async function appendAdmitted(
  deps: { gate: AdmissionGate; tus: TusService }, teamId: string, id: string, offset: number, body: UploadBody, clientGone: AbortSignal,
): Promise<TusPatchResult> {
  const release = await deps.gate.admit(teamId, clientGone);
  try {
    return await deps.tus.patch(teamId, id, offset, body);
  } finally {
    release();
  }
}
