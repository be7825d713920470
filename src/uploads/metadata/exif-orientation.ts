const EXIF_PREFIX = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]; // "Exif\0\0"
const ORIENTATION_TAG = 0x0112;
const SHORT = 3;

/** Whether `bytes` starts with `prefix`. */
export function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((byte, index) => bytes[index] === byte);
}

/**
 * The Orientation (1-8) of IFD0 of an EXIF block (a TIFF structure, with or without the
 * `Exif\0\0` prefix a JPEG's APP1 puts before it), or null when it has none or cannot be read:
 * a damaged EXIF block turns nothing, as image viewers do.
 */
export function exifOrientation(exif: Uint8Array): number | null {
  const tiff = startsWith(exif, EXIF_PREFIX) ? exif.subarray(EXIF_PREFIX.length) : exif;
  if (tiff.length < 8) return null;
  const little = tiff[0] === 0x49 && tiff[1] === 0x49;
  if (!little && !(tiff[0] === 0x4d && tiff[1] === 0x4d)) return null;
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  if (view.getUint16(2, little) !== 42) return null;
  const ifd = view.getUint32(4, little);
  if (ifd + 2 > tiff.length) return null;
  const entries = view.getUint16(ifd, little);
  for (let index = 0; index < entries; index++) {
    const entry = ifd + 2 + index * 12;
    if (entry + 12 > tiff.length) return null;
    if (view.getUint16(entry, little) !== ORIENTATION_TAG) continue;
    if (view.getUint16(entry + 2, little) !== SHORT) return null;
    const value = view.getUint16(entry + 8, little);
    return value >= 1 && value <= 8 ? value : null;
  }
  return null;
}
