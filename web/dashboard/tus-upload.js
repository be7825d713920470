import { ApiError, networkError } from './api.js';
import { uploadQuery } from './multipart-upload.js';

// A large file through the resumable route (tus 1.0.0, tus-js-client). tus-js-client keeps each
// upload's address in localStorage under the file's fingerprint (name, type, size, modification
// time, endpoint), so after a page reload choosing the same file again goes on where it stopped,
// and a dropped connection is retried from the last byte the service has. The library (85 KB) is
// loaded only when a large file is uploaded.

export const TUS_THRESHOLD_BYTES = 8 * 1024 * 1024;
const CHUNK_BYTES = 4 * 1024 * 1024;

async function tusLibrary() {
  await import('tus-js-client'); // the UMD build: sets window.tus
  return window.tus;
}

export function tusUpload({ token, teamId, file, fileName, options, onProgress }) {
  let upload = null;
  let cancelled = false;
  let stop = null;
  const promise = (async () => {
    const tus = await tusLibrary();
    return new Promise((resolve, reject) => {
      stop = reject;
      const query = uploadQuery(options);
      upload = new tus.Upload(file, {
        endpoint: new URL(`/v1/cdn/media/${teamId}/tus`, location.origin).href,
        headers: { Authorization: `Bearer ${token}` },
        metadata: { filename: fileName, filetype: file.type || 'application/octet-stream', ...query },
        chunkSize: CHUNK_BYTES,
        retryDelays: [0, 1000, 3000, 5000, 10000],
        removeFingerprintOnSuccess: true,
        // A refusal (4xx but 409/423/429) is final; retrying cannot change it.
        onShouldRetry: (error) => {
          const status = error?.originalResponse?.getStatus?.() ?? 0;
          return status === 0 || status === 409 || status === 423 || status === 429 || status >= 500;
        },
        onProgress: (loaded, total) => onProgress(loaded, total),
        onSuccess: ({ lastResponse }) => resolve({ id: lastResponse.getHeader('Media-Id'), fileName, size: file.size }),
        onError: (error) => reject(cancelled ? new DOMException('cancelled', 'AbortError') : tusRefusal(error)),
      });
      if (cancelled) return reject(new DOMException('cancelled', 'AbortError'));
      upload.findPreviousUploads().then((previous) => {
        if (previous.length) upload.resumeFromPreviousUpload(previous[0]);
        upload.start();
      });
    });
  })();
  return {
    promise,
    cancel: () => {
      cancelled = true;
      stop?.(new DOMException('cancelled', 'AbortError'));
      // Cancelling ends the upload on the service too (tus termination): its bytes and reservation go.
      void upload?.abort(true).catch(() => {});
    },
  };
}

function tusRefusal(error) {
  const response = error?.originalResponse;
  if (!response) return networkError(error);
  let body = null;
  try {
    body = JSON.parse(response.getBody());
  } catch {
    body = null;
  }
  return new ApiError(response.getStatus(), body, Number(response.getHeader('Retry-After')) || null);
}
