import { request as httpRequest } from 'node:http';
import type { ApiResponse, TestServer } from './server.ts';
import { answerOf, multipartBody, type MultipartFile } from './uploads.ts';

/** POST /upload-urls with the team key; throws unless 201. */
export async function createUploadUrl(server: TestServer, teamId: string, key: string, body: Record<string, unknown> = {}) {
  const response = await server.media('POST', `/v1/cdn/media/${teamId}/upload-urls`, key, { body });
  if (response.status !== 201) throw new Error(`upload URL creation failed: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body as { url: string; method: 'POST'; fields: { name: 'file' }; expiresAt: string; maxSizeBytes: number };
}

/**
 * POSTs `body` to an upload URL over node:http, without Authorization; a refusal that closes the
 * connection early still yields its answer, which must match the OpenAPI document.
 * `chunked`: no Content-Length (Transfer-Encoding: chunked).
 */
export function postToUrl(url: string, body: Buffer, headers: Record<string, string> = {}, options: { chunked?: boolean } = {}): Promise<ApiResponse> {
  const target = new URL(url);
  const request = httpRequest(target, {
    method: 'POST',
    headers: options.chunked ? { ...headers, 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length), ...headers },
  });
  const answer = answerOf(request, 'POST', `${target.pathname}${target.search}`);
  if (options.chunked) {
    // In pieces, so that a refusal mid-body can come before the end.
    const piece = 64 * 1024;
    for (let offset = 0; offset < body.length; offset += piece) request.write(body.subarray(offset, offset + piece));
    request.end();
  } else {
    request.end(body);
  }
  return answer;
}

/** Uses an upload URL with a multipart body holding `files` (and text `fields`). */
export function postFormToUrl(url: string, files: MultipartFile[], fields: Record<string, string> = {}, options: { chunked?: boolean } = {}) {
  const { body, contentType } = multipartBody(files, fields);
  return postToUrl(url, body, { 'content-type': contentType }, options);
}

/** The URL with one query parameter replaced (or added). */
export function withParam(url: string, name: string, value: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set(name, value);
  return parsed.toString();
}

/** A raw upload to `url` whose first half is sent at once and whose rest waits for finish(). */
export function heldRawUpload(url: string, content: Buffer) {
  const request = httpRequest(url, { method: 'POST', headers: { 'content-type': 'image/png', 'content-length': String(content.length) } });
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
  });
  const half = Math.floor(content.length / 2);
  request.write(content.subarray(0, half));
  return { request, response, finish: () => request.end(content.subarray(half)) };
}
