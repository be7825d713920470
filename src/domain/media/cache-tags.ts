/**
 * Cache tags: what a CDN in front of the service files a public answer under (`Cache-Tag`,
 * Cloudflare's and Akamai's spelling, comma-separated; `Surrogate-Key`, Fastly's, space-separated),
 * so that a purge by tag drops every variant of a file (its link, its thumbnail, each resized image
 * under any spelling of its query) or of a whole team, which a purge by URL cannot list.
 */
export function mediaCacheTag(mediaId: string): string {
  return `media-${mediaId}`;
}

export function teamCacheTag(teamId: string): string {
  return `team-${teamId}`;
}

/** The headers that tag a public answer of one of the team's files. */
export function cacheTagHeaders(teamId: string, mediaId: string): Record<string, string> {
  const tags = [mediaCacheTag(mediaId), teamCacheTag(teamId)];
  return { 'Cache-Tag': tags.join(','), 'Surrogate-Key': tags.join(' ') };
}
