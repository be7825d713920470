// Sizes and dates as the user reads them: dates in the browser's locale and time zone.

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];

export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '';
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${new Intl.NumberFormat(undefined, { maximumFractionDigits: digits }).format(value)} ${UNITS[unit]}`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function formatDate(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : dateTime.format(date);
}

/** image, video, audio, text or other: what a file is, from its stored type. */
export function kindOf(contentType = '') {
  const type = contentType.split(';')[0].trim().toLowerCase();
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('audio/')) return 'audio';
  if (type.startsWith('text/') || type === 'application/json' || type === 'application/x-ndjson') return 'text';
  if (/zip|gzip|x-tar|x-7z|rar/.test(type)) return 'archive';
  if (type === 'application/pdf') return 'document';
  return 'other';
}

/** The file's extension in capitals, for its type icon. */
export function extensionOf(fileName = '') {
  const dot = fileName.lastIndexOf('.');
  return dot > 0 && dot > fileName.length - 7 ? fileName.slice(dot + 1).toUpperCase() : '';
}
