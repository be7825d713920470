import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ResolvedAuthSecret {
  secret: string;
  /** True when this start generated it; the caller prints it once. */
  generated: boolean;
}

/** AUTH_SECRET when set; otherwise the one stored in DATA_DIR, generated on first start. */
export async function resolveAuthSecret(configured: string | null, dataDir: string): Promise<ResolvedAuthSecret> {
  if (configured) return { secret: configured, generated: false };
  const file = join(dataDir, 'auth-secret');
  try {
    const stored = (await readFile(file, 'utf8')).trim();
    if (stored.length >= 16) return { secret: stored, generated: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = randomBytes(32).toString('base64url');
  await mkdir(dataDir, { recursive: true });
  // 'wx' fails if another process created it meanwhile; then that one's secret wins.
  try {
    await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return resolveAuthSecret(null, dataDir);
    throw error;
  }
  return { secret, generated: true };
}

/** Printed once, on the start that generated the secret; afterwards it lives only in DATA_DIR/auth-secret. */
export function announceGeneratedSecret(secret: string, dataDir: string): void {
  process.stdout.write(`\nGenerated operator secret (authSecret header), stored in ${dataDir}/auth-secret:\n${secret}\n\n`);
}
