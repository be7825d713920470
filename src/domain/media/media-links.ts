/**
 * Where a media file is published. The file part is the media id plus a short
 * extension taken from the file name, so links never carry user text beyond a
 * few safe characters and a rename does not move the file.
 */
export function mediaFilePart(mediaId: string, fileName: string): string {
  const extension = /\.([A-Za-z0-9]{1,10})$/.exec(fileName)?.[1]?.toLowerCase();
  return extension ? `${mediaId}.${extension}` : mediaId;
}

export function mediaPath(teamId: string, mediaId: string, fileName: string): string {
  return `media/team/${teamId}/${mediaFilePart(mediaId, fileName)}`;
}

export function publicMediaUrl(baseUrl: string, path: string): string {
  return `${baseUrl}/${path}`;
}
