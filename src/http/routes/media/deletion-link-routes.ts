import { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { DeletionLinks } from '../../../domain/media/deletion-links.ts';
import type { MediaEditService } from '../../../domain/media/media-edit.service.ts';
import { isUuid } from '../../../domain/validation.ts';
import { deletionLinkRefused } from '../../../errors/errors.ts';
import { ServiceError } from '../../../errors/service-error.ts';
import { json, type HttpRequest, type HttpResult, type Route } from '../../types.ts';
import { MEDIA_BASE, publicRouteBuilder } from '../route-builder.ts';

export const DELETION_LINK_PATTERN = `${MEDIA_BASE}/deletion-links/:mediaId`;

/** No script, no outside resource; the form may post only back here. */
const CONTENT_SECURITY_POLICY = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export interface DeletionLinkRouteDeps {
  orm: MikroORM;
  links: DeletionLinks;
  edits: MediaEditService;
}

/**
 * A deletion link (DeletionLinks; asked for with `deletionUrl=true` on an upload): GET shows a page
 * whose button deletes, so a link preview or a crawler deletes nothing; DELETE, and POST (the page's
 * form), delete the file and free its storage. No key: the signature is the access, for one file.
 */
export function deletionLinkRoutes(deps: DeletionLinkRouteDeps): Route[] {
  /** The link's team and file, once its signature is checked. */
  function verified(request: HttpRequest): { teamId: string; mediaId: string } {
    const teamId = request.params['teamId'] ?? '';
    const mediaId = request.params['mediaId'] ?? '';
    if (!isUuid(teamId) || !isUuid(mediaId) || !deps.links.verify(teamId, mediaId, request.query.get('signature'))) throw deletionLinkRefused('invalid');
    return { teamId, mediaId };
  }

  async function remove(request: HttpRequest) {
    const { teamId, mediaId } = verified(request);
    try {
      return await deps.edits.delete(teamId, mediaId);
    } catch (error) {
      if (error instanceof ServiceError && error.status === 404) throw deletionLinkRefused('gone');
      throw error;
    }
  }

  const route = publicRouteBuilder();
  return [
    route('GET', DELETION_LINK_PATTERN, async ({ request }) => {
      const { teamId, mediaId } = verified(request);
      const rows = await deps.orm.em.fork().execute<{ file_name: string; size: string | number }[]>(
        'select file_name, size from media_file where team_id = ? and id = ?', [teamId, mediaId],
      );
      const file = rows[0];
      if (!file) throw deletionLinkRefused('gone');
      return page(confirmationPage(file.file_name, Number(file.size)));
    }),
    route('DELETE', DELETION_LINK_PATTERN, async ({ request }) => json(200, await remove(request), { 'Cache-Control': 'no-store' })),
    route('POST', DELETION_LINK_PATTERN, async ({ request }) => {
      const deletion = await remove(request);
      // The page's form wants a page back; a program, the JSON answer of DELETE.
      return /\btext\/html\b/i.test(request.headers['accept'] ?? '') ? page(deletedPage()) : json(200, deletion, { 'Cache-Control': 'no-store' });
    }),
  ];
}

function page(html: string): HttpResult {
  const body = Buffer.from(html);
  return {
    status: 200,
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': CONTENT_SECURITY_POLICY,
      // The link is the access: never sent on as a Referer, never indexed.
      'Referrer-Policy': 'no-referrer',
      'X-Robots-Tag': 'noindex',
      'X-Content-Type-Options': 'nosniff',
    },
    stream: { body: Readable.from([body]), length: body.length },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function document(title: string, content: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${title}</title></head>
<body>
${content}
</body>
</html>
`;
}

export function confirmationPage(fileName: string, size: number): string {
  // The form posts to this very address (its signature included): an empty action is the current URL.
  return document('Delete this file?', `<h1>Delete this file?</h1>
<p><strong>${escapeHtml(fileName)}</strong> (${size} bytes) will be deleted for good.</p>
<form method="post"><button type="submit">Delete</button></form>`);
}

function deletedPage(): string {
  return document('File deleted', '<h1>File deleted</h1>\n<p>The file is deleted and its link no longer works.</p>');
}
