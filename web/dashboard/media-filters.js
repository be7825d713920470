import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { TagChips, TagInput } from './tag-input.js';

// Search by name, type, tags (a file must carry all of them), and grid or list. `onChange` takes
// an update of the current filters (the search applies after a pause, when others may have changed).

const TYPES = [['all', 'All types'], ['image', 'Images'], ['video', 'Videos'], ['audio', 'Audio'], ['document', 'Documents']];

export function MediaFilters({ filters, onChange, layout, onLayout, call, teamId }) {
  const [search, setSearch] = useState(filters.search);
  useEffect(() => {
    if (search === filters.search) return;
    const timer = setTimeout(() => onChange((current) => ({ ...current, search })), 300);
    return () => clearTimeout(timer);
  }, [search]);

  return html`<div class="filters" role="search">
    <div class="filter-field">
      <label for="media-search">Search by name</label>
      <input id="media-search" type="search" value=${search} onInput=${(event) => setSearch(event.currentTarget.value)} />
    </div>
    <div class="filter-field">
      <label for="media-type">Type</label>
      <select id="media-type" value=${filters.type} onChange=${(event) => onChange((current) => ({ ...current, type: event.currentTarget.value }))}>
        ${TYPES.map(([value, label]) => html`<option key=${value} value=${value}>${label}</option>`)}
      </select>
    </div>
    <div class="filter-field">
      <${TagInput} id="filter-tag" label="Filter by tag" buttonLabel="Filter" call=${call} teamId=${teamId}
        onAdd=${(tag) => onChange((current) => (current.tags.includes(tag) ? current : { ...current, tags: [...current.tags, tag] }))} />
      <${TagChips} label="Files carry all these tags" tags=${filters.tags} onRemove=${(tag) => onChange((current) => ({ ...current, tags: current.tags.filter((other) => other !== tag) }))} />
    </div>
    <fieldset class="layout-switch">
      <legend>Show as</legend>
      ${[['grid', 'Grid'], ['list', 'List']].map(([value, label]) => html`<label key=${value}>
        <input type="radio" name="layout" value=${value} checked=${layout === value} onChange=${() => onLayout(value)} /> ${label}
      </label>`)}
    </fieldset>
  </div>`;
}
