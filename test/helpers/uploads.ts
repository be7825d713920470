import { randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import type { Test } from 'tap';
import { connectPg } from './database.ts';
import { assertAnswer } from './openapi-answers.ts';
import type { ApiResponse, TestServer } from './server.ts';

export const KiB = 1024;
export const MiB = 1024 * KiB;
const PNG_HEADER = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

/** Random bytes that start like a PNG, so type sniffing labels them and nothing blocks them. */
export function pngLike(size: number): Buffer {
  const content = randomBytes(size);
  PNG_HEADER.copy(content, 0, 0, Math.min(size, PNG_HEADER.length));
  return content;
}

export interface MultipartFile {
  field?: string;
  fileName?: string;
  contentType?: string;
  content: Buffer;
}

/** A multipart/form-data body built by hand, so tests control every byte. */
export function multipartBody(files: MultipartFile[], fields: Record<string, string> = {}, boundary = `----test${Date.now()}`) {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const file of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.fileName ?? 'file.bin'}"\r\n` +
          `Content-Type: ${file.contentType ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      file.content,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

export function uploadPath(teamId: string, query = ''): string {
  return `/v1/cdn/media/${teamId}/upload/file${query ? `?${query}` : ''}`;
}

export async function uploadMultipart(server: TestServer, teamId: string, key: string, file: MultipartFile, query = ''): Promise<ApiResponse> {
  const { body, contentType } = multipartBody([file]);
  return send(server, 'POST', uploadPath(teamId, query), key, body, { 'content-type': contentType });
}

export async function uploadJson(server: TestServer, teamId: string, key: string, body: unknown): Promise<ApiResponse> {
  const payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return send(server, 'POST', `/v1/cdn/media/${teamId}/upload`, key, payload, { 'content-type': 'application/json' });
}

/**
 * Reads an answer to a request sent over node:http: resolves it once whole (JSON parsed when it is
 * JSON) after checking it against the OpenAPI document; a refusal that closes the connection while
 * the body is still being written (EPIPE, ECONNRESET) still yields its answer.
 */
export function answerOf(request: ClientRequest, method: string, path: string): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        try {
          assertAnswer({ method, path, status: response.statusCode ?? 0, contentType: response.headers['content-type'] ?? null, text });
        } catch (error) {
          reject(error);
          return;
        }
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // leave text
        }
        resolve({ status: response.statusCode ?? 0, headers: new Headers(response.headers as Record<string, string>), body: parsed as any });
      });
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET') return;
      reject(error);
    });
  });
}

/** Sends a body over node:http; a refusal that closes the connection early still yields its response. */
export function send(server: TestServer, method: string, path: string, key: string, body: Buffer, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const request = httpRequest(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-length': String(body.length), ...headers },
  });
  const answer = answerOf(request, method, path);
  request.end(body);
  return answer;
}

export interface TeamStorageState {
  files: number;
  sumOfSizes: number;
  usedStorage: number;
  reservedStorage: number;
  reservations: number;
}

/** What the database says a team stores; after any refusal it must equal what it was before. */
export async function teamStorageState(databaseUrl: string, teamId: string): Promise<TeamStorageState> {
  const client = await connectPg(databaseUrl);
  try {
    const files = await client.query<{ count: string; sum: string | null }>('select count(*), sum(size) from media_file where team_id = $1', [teamId]);
    const team = await client.query<{ used_storage: string; reserved_storage: string }>('select used_storage, reserved_storage from team where id = $1', [teamId]);
    const reservations = await client.query<{ count: string }>('select count(*) from upload_reservation where team_id = $1', [teamId]);
    return {
      files: Number(files.rows[0]!.count),
      sumOfSizes: Number(files.rows[0]!.sum ?? 0),
      usedStorage: Number(team.rows[0]!.used_storage),
      reservedStorage: Number(team.rows[0]!.reserved_storage),
      reservations: Number(reservations.rows[0]!.count),
    };
  } finally {
    await client.end();
  }
}

export interface HeldUpload {
  request: ClientRequest;
  bodyLength: number;
  response: Promise<{ status: number; body: any }>;
  finish(): void;
}

/** Sends the headers and the first half of a multipart upload, and holds the rest until finish(). */
export function heldUpload(server: { baseUrl: string }, teamId: string, key: string, content: Buffer, query = ''): HeldUpload {
  const { body, contentType } = multipartBody([{ content, fileName: 'held.bin' }]);
  const request = httpRequest(`${server.baseUrl}${uploadPath(teamId)}${query ? `?${query}` : ''}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.length) },
  });
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    request.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    request.on('error', reject);
  });
  const half = Math.floor(body.length / 2);
  request.write(body.subarray(0, half));
  return { request, bodyLength: body.length, response, finish: () => request.end(body.subarray(half)) };
}

/**
 * POSTs a chunked body (no Content-Length) of about `size` bytes: `prefix`, `fill` repeated with
 * backpressure, then `suffix`; stops sending once the server answers (a refusal mid-body) and
 * resolves with the answer and how many bytes had been sent by then.
 */
export function sendChunked(
  url: string, headers: Record<string, string>, size: number, prefix: Buffer, fill: Buffer, suffix: Buffer = Buffer.alloc(0),
): Promise<{ status: number; body: any; sent: number }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } });
    let answered = false;
    let sent = prefix.length;
    request.on('response', (response) => {
      answered = true;
      const at = sent;
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text), sent: at }));
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (answered || error.code === 'EPIPE' || error.code === 'ECONNRESET') return;
      reject(error);
    });
    request.write(prefix);
    const writeMore = () => {
      while (sent < size && !answered) {
        sent += fill.length;
        if (!request.write(fill)) {
          request.once('drain', writeMore);
          return;
        }
      }
      if (!answered) request.end(suffix);
    };
    writeMore();
  });
}

/** A failed upload left nothing: as many media rows and as much used storage as `before`, nothing reserved. */
export async function expectNothingCounted(
  t: Test, server: { databaseUrl: string }, teamId: string, before: { files: number; usedStorage: number },
): Promise<void> {
  const state = await teamStorageState(server.databaseUrl, teamId);
  t.equal(state.files, before.files, 'no media row');
  t.equal(state.usedStorage, before.usedStorage, 'no storage counted');
  t.equal(state.reservedStorage, 0, 'no storage reserved');
  t.equal(state.reservations, 0, 'no reservation row');
}

/**
 * A media row's own columns, for a snapshot that proves a request changed nothing: not its
 * thumbnail's, which the thumbnailer fills in the background whenever it gets to it.
 */
export const MEDIA_ROW_COLUMNS = 'id, team_id, folder_id, file_name, storage_key, size, content_type, hash, is_public, tags, uploaded_by_key_id, storage_location, created_at, updated_at';
