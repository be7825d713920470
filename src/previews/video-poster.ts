import { spawn } from 'node:child_process';

/** A poster taking longer than this is given up (and tried again later). */
const POSTER_TIMEOUT_MS = 60_000;
/** A frame as PNG is at most this large (a 4K frame is ~25 MB): more means something is wrong. */
const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** Whether `ffmpeg` runs here (`ffmpeg -version` exits 0). */
export function ffmpegAvailable(ffmpeg: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(ffmpeg, ['-version'], { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
  });
}

export class PosterError extends Error {
  override name = 'PosterError';
}

/**
 * One frame of the video in `file` as PNG, with ffmpeg: the frame at one second (past the black of
 * a fade-in), or the first frame of a shorter video. Rejects with PosterError when ffmpeg cannot
 * read the file (not a video it knows, no video stream), with another error when it could not run.
 */
export async function extractPoster(ffmpeg: string, file: string): Promise<Buffer> {
  const atOneSecond = await runFfmpeg(ffmpeg, ['-ss', '1', '-i', file]);
  if (atOneSecond.length > 0) return atOneSecond;
  const first = await runFfmpeg(ffmpeg, ['-i', file]);
  if (first.length > 0) return first;
  throw new PosterError('the video has no frame ffmpeg can read');
}

function runFfmpeg(ffmpeg: string, input: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpeg, ['-nostdin', '-v', 'error', ...input, '-frames:v', '1', '-an', '-f', 'image2pipe', '-c:v', 'png', '-'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), POSTER_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FRAME_BYTES) child.kill('SIGKILL');
      else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-500)));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (signal) reject(new Error(`ffmpeg was stopped (${signal}): it took longer than ${POSTER_TIMEOUT_MS} ms or made too large a frame`));
      else if (code !== 0) reject(new PosterError(`ffmpeg cannot read the video: ${stderr.trim().split('\n').at(-1) ?? `exit ${code}`}`));
      else resolve(Buffer.concat(chunks));
    });
  });
}
