import { ApiError, networkError } from './api.js';

// One file through POST /upload/file (multipart), with upload progress (XMLHttpRequest: fetch
// reports no upload progress). Options go in the query string, as the API takes them.

export function multipartUpload({ token, teamId, file, fileName, options, onProgress }) {
  const url = new URL(`/v1/cdn/media/${teamId}/upload/file`, location.origin);
  for (const [name, value] of Object.entries(uploadQuery(options))) url.searchParams.set(name, value);
  url.searchParams.set('fileName', fileName);
  const request = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    request.open('POST', url);
    request.setRequestHeader('Authorization', `Bearer ${token}`);
    request.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded, event.total);
    request.onload = () => {
      let body = null;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = null;
      }
      if (request.status === 201) resolve(body);
      else reject(new ApiError(request.status, body, Number(request.getResponseHeader('Retry-After')) || null));
    };
    request.onerror = () => reject(networkError(new Error('the connection failed')));
    request.onabort = () => reject(new DOMException('cancelled', 'AbortError'));
    const form = new FormData();
    form.append('file', file, fileName);
    request.send(form);
  });
  return { promise, cancel: () => request.abort() };
}

/** folder (a path) or folderId, tags and public, as query parameters. */
export function uploadQuery(options) {
  const query = {};
  if (options.folder) query.folder = options.folder;
  else if (options.folderId) query.folderId = options.folderId;
  if (options.tags.length) query.tags = options.tags.join(',');
  if (options.visibility !== 'default') query.public = String(options.visibility === 'public');
  return query;
}
