import { useState } from 'preact/hooks';
import { copyText } from './copy-text.js';
import { folderPath } from './folders.js';
import { html } from './html.js';
import { refusalText } from './refusal-words.js';

// A new automation: a webhook or a Discord channel, optionally only for a folder or tags. The
// answer carries the signing secret, shown here once (the API shows it again only on rotation).

export function AutomationForm({ call, base, folders, onCreated }) {
  const [error, setError] = useState(null);
  const [created, setCreated] = useState(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    const field = (name) => form.elements.namedItem(name);
    const body = { name: field('automation-name').value.trim(), kind: field('automation-kind').value, url: field('automation-url').value.trim(), enabled: field('automation-enabled').checked };
    const folderId = field('automation-folder')?.value;
    if (folderId) {
      body.folderId = folderId;
      body.includeSubfolders = field('automation-subfolders').checked;
    }
    const tags = field('automation-tags').value.split(',').map((tag) => tag.trim()).filter(Boolean);
    if (tags.length) body.tags = tags;
    setBusy(true);
    setError(null);
    try {
      const automation = await call('POST', base, { body });
      setCreated(automation);
      form.reset();
      onCreated(automation);
    } catch (failure) {
      setError(refusalText(failure));
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="card" aria-labelledby="new-automation-heading">
    <h2 id="new-automation-heading">New automation</h2>
    ${created ? html`<div class="secret-once" role="status">
      <p><strong>${created.name}</strong> is created. Its signing secret is shown only now: keep it where the receiver checks signatures.</p>
      <label for="automation-secret">Signing secret</label>
      <div class="inline-field">
        <input id="automation-secret" readonly value=${created.secret} onFocus=${(event) => event.currentTarget.select()} />
        <button type="button" class="secondary" onClick=${() => copyText(created.secret, 'Secret')}>Copy secret</button>
        <button type="button" class="secondary" onClick=${() => setCreated(null)}>Done</button>
      </div>
    </div>` : ''}
    <form onSubmit=${submit}>
      <div class="option-grid">
        <div><label for="automation-name">Name</label><input id="automation-name" name="automation-name" required maxlength="100" /></div>
        <div><label for="automation-kind">Kind</label>
          <select id="automation-kind" name="automation-kind">
            <option value="webhook">Webhook (signed JSON)</option>
            <option value="discord">Discord channel webhook</option>
          </select></div>
        <div class="wide-field"><label for="automation-url">Address (URL)</label>
          <input id="automation-url" name="automation-url" type="url" required maxlength="2048" placeholder="https://example.com/hooks/media" /></div>
        ${folders ? html`<div><label for="automation-folder">Only files uploaded into</label>
          <select id="automation-folder" name="automation-folder">
            <option value="">Any folder</option>
            ${folders.map((folder) => html`<option key=${folder.id} value=${folder.id}>${folderPath(folders, folder.id)}</option>`)}
          </select>
          <label class="checkbox"><input type="checkbox" name="automation-subfolders" /> and its subfolders</label></div>` : ''}
        <div><label for="automation-tags">Only files with all these tags</label>
          <input id="automation-tags" name="automation-tags" placeholder="crash, map:de_dust2" aria-describedby="automation-tags-hint" />
          <p id="automation-tags-hint" class="muted hint">Separated by commas; empty for every file.</p></div>
      </div>
      <label class="checkbox"><input type="checkbox" name="automation-enabled" checked /> Enabled</label>
      ${error ? html`<p role="alert" class="error">${error}</p>` : ''}
      <button type="submit" disabled=${busy}>Create automation</button>
    </form>
  </section>`;
}
