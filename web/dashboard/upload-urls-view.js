import { useEffect, useState } from 'preact/hooks';
import { copyText } from './copy-text.js';
import { folderPath, useFolders } from './folders.js';
import { formatBytes, formatDate } from './format.js';
import { html } from './html.js';
import { refusalText } from './refusal-words.js';
import { useSession } from './session.js';

// Upload URLs for game clients (POST /v1/cdn/media/{teamId}/upload-urls): one file each, no key in
// the client, with the options and limits fixed here. The service keeps no list of them and has no
// revocation (each works once and expires within an hour), so the list is the URLs made in this
// page, kept in its memory only: a URL is a credential for one upload.

const EXPIRIES = [[60, '1 minute'], [300, '5 minutes'], [900, '15 minutes'], [1800, '30 minutes'], [3600, '1 hour']];
/** Per team: the URLs made in this page, newest first. */
const madeByTeam = new Map();

function requestBody(form) {
  const value = (name) => form.elements.namedItem(name).value.trim();
  const body = { expiresInSeconds: Number(value('url-expiry')) };
  if (value('url-file-name')) body.fileName = value('url-file-name');
  if (value('url-folder-path')) body.folder = value('url-folder-path');
  else if (value('url-folder')) body.folderId = value('url-folder');
  const tags = value('url-tags').split(',').map((tag) => tag.trim()).filter(Boolean);
  if (tags.length) body.tags = tags;
  if (value('url-visibility') !== 'default') body.public = value('url-visibility') === 'public';
  if (value('url-strip') !== 'default') body.stripMetadata = value('url-strip') === 'yes';
  if (value('url-max-size')) body.maxSizeBytes = Math.round(Number(value('url-max-size')) * 1_000_000);
  const types = value('url-types').split(',').map((type) => type.trim()).filter(Boolean);
  if (types.length) body.contentTypes = types;
  return body;
}

function summary(request) {
  const parts = [];
  if (request.fileName) parts.push(`name ${request.fileName}`);
  if (request.folder) parts.push(`folder ${request.folder}`);
  if (request.tags) parts.push(`tags ${request.tags.join(', ')}`);
  if (request.public !== undefined) parts.push(request.public ? 'public' : 'private');
  if (request.contentTypes) parts.push(`types ${request.contentTypes.join(', ')}`);
  return parts.join(' · ') || 'the team\'s defaults';
}

function MadeUrl({ entry, now }) {
  const expired = Date.parse(entry.expiresAt) <= now;
  const fieldId = `upload-url-${entry.number}`;
  return html`<li class="card made-url" data-expired=${expired ? 'true' : 'false'}>
    <label for=${fieldId}>Upload URL ${entry.number}${expired ? ' (expired)' : ''}</label>
    <div class="inline-field">
      <input id=${fieldId} class="link-field" readonly value=${entry.url} onFocus=${(event) => event.currentTarget.select()} />
      <button type="button" class="secondary" disabled=${expired} onClick=${() => copyText(entry.url, 'Upload URL')}>Copy<span class="visually-hidden"> upload URL ${entry.number}</span></button>
    </div>
    <p class="muted">${expired ? 'Expired' : 'Expires'} ${formatDate(entry.expiresAt)} · up to ${formatBytes(entry.maxSizeBytes)} · ${summary(entry.request)}</p>
  </li>`;
}

export function UploadUrlsView() {
  const { call, credential } = useSession();
  const folders = useFolders(call, credential.teamId);
  if (!madeByTeam.has(credential.teamId)) madeByTeam.set(credential.teamId, []);
  const made = madeByTeam.get(credential.teamId);
  const [urls, setUrls] = useState(made);
  const [error, setError] = useState(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 15_000);
    return () => clearInterval(timer);
  }, []);

  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    const request = requestBody(event.currentTarget);
    try {
      const answer = await call('POST', `/v1/cdn/media/${credential.teamId}/upload-urls`, { body: request });
      made.unshift({ ...answer, request, number: made.length + 1 });
      setUrls([...made]);
      setNow(Date.now());
      await copyText(answer.url, 'Upload URL');
    } catch (failure) {
      setError(refusalText(failure));
    }
  };

  return html`<div class="team-screen">
    <p class="lead">An upload URL lets a game client, a player's browser or a launcher upload <strong>one</strong> file without any key:
      POST the file to it (multipart field <code>file</code>, or the file as the body). What it may be is fixed here.</p>
    <section class="card" aria-labelledby="new-url-heading">
      <h2 id="new-url-heading">New upload URL</h2>
      <form onSubmit=${submit}>
        <div class="option-grid">
          <div><label for="url-expiry">Valid for</label>
            <select id="url-expiry" name="url-expiry">
              ${EXPIRIES.map(([seconds, words]) => html`<option value=${seconds} selected=${seconds === 900}>${words}</option>`)}
            </select></div>
          <div><label for="url-max-size">Largest file (MB)</label>
            <input id="url-max-size" name="url-max-size" type="number" min="0.001" step="any" placeholder="the plan's limit" /></div>
          <div><label for="url-types">Allowed types</label>
            <input id="url-types" name="url-types" placeholder="image/*, text/plain" aria-describedby="url-types-hint" />
            <p id="url-types-hint" class="muted hint">Separated by commas; empty for any type uploads allow.</p></div>
          <div><label for="url-file-name">File name</label>
            <input id="url-file-name" name="url-file-name" maxlength="255" placeholder="the uploader's own" /></div>
          <div><label for="url-folder">Folder</label>
            <select id="url-folder" name="url-folder">
              <option value="">No folder</option>
              ${folders.folders.map((folder) => html`<option key=${folder.id} value=${folder.id}>${folderPath(folders.folders, folder.id)}</option>`)}
            </select></div>
          <div><label for="url-folder-path">Or a folder path</label>
            <input id="url-folder-path" name="url-folder-path" placeholder="fivem/screenshots" aria-describedby="url-folder-hint" />
            <p id="url-folder-hint" class="muted hint">Created when missing; wins over the folder chosen beside.</p></div>
          <div><label for="url-tags">Tags</label>
            <input id="url-tags" name="url-tags" placeholder="fivem, player:12" /></div>
          <div><label for="url-visibility">Visibility</label>
            <select id="url-visibility" name="url-visibility">
              <option value="default">The folder's default (public without one)</option>
              <option value="public">Public: anyone with the link</option>
              <option value="private">Private: signed links only</option>
            </select></div>
          <div><label for="url-strip">Image metadata (EXIF, GPS)</label>
            <select id="url-strip" name="url-strip">
              <option value="default">The team's setting</option>
              <option value="yes">Strip it</option>
              <option value="no">Keep it</option>
            </select></div>
        </div>
        ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
        <button type="submit">Create and copy the URL</button>
      </form>
    </section>
    <section aria-labelledby="made-urls-heading">
      <h2 id="made-urls-heading">Made in this page</h2>
      <p class="muted">The service keeps no list of upload URLs and cannot take one back: each works once and expires by itself.
        To stop every URL a key made, reroll or delete that key. This list is forgotten when the page closes.</p>
      ${urls.length ? html`<ul class="made-urls">${urls.map((entry) => html`<${MadeUrl} key=${entry.number} entry=${entry} now=${now} />`)}</ul>`
        : html`<p class="empty">None yet.</p>`}
    </section>
  </div>`;
}
