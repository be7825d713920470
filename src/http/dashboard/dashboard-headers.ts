/**
 * The headers of every dashboard answer. The page loads only the service's own files: no inline
 * script (the import map is admitted by its hash), no eval, no inline style. Images may come from
 * the file link base when it is another origin (CDN_URL), and from blob: and data: (previews of
 * files about to be uploaded). The page may not be framed (clickjacking) and sends no Referer, so a
 * signed link or an address never leaks to another site.
 */
export interface DashboardHeaderOptions {
  importMapHash: string;
  /** PUBLIC_URL and CDN_URL: files and thumbnails are served under them. */
  fileOrigins: string[];
}

export function contentSecurityPolicy({ importMapHash, fileOrigins }: DashboardHeaderOptions): string {
  const files = [...new Set(fileOrigins.map((url) => new URL(url).origin))].join(' ');
  return [
    "default-src 'self'",
    `script-src 'self' ${importMapHash}`,
    "style-src 'self'",
    `img-src 'self' ${files} blob: data:`,
    `media-src 'self' ${files} blob:`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function dashboardHeaders(options: DashboardHeaderOptions): Record<string, string> {
  return {
    'Content-Security-Policy': contentSecurityPolicy(options),
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Opener-Policy': 'same-origin',
  };
}
