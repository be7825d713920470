import { html } from './html.js';
import { PERMISSION_NAMES } from './permission-names.js';
import { allows } from './session.js';

// A checkbox per permission. Only permissions the signed-in member holds can be granted or taken
// away (the API's rule): the others are shown, disabled.

export function PermissionPicker({ legend, idPrefix, selected, onChange, mine, disabled = false }) {
  const names = [...new Set([...PERMISSION_NAMES, ...selected])];
  const toggle = (name, on) => {
    const next = new Set(selected);
    if (on) next.add(name);
    else next.delete(name);
    onChange([...next]);
  };
  return html`<fieldset class="permission-picker">
    <legend>${legend}</legend>
    <ul class="permission-list">
      ${names.map((name) => {
        const id = `${idPrefix}-${name.replaceAll('.', '-')}`;
        return html`<li key=${name}><label class="checkbox" for=${id}>
          <input type="checkbox" id=${id} checked=${selected.includes(name)} disabled=${disabled || !allows(mine, name)}
            onChange=${(event) => toggle(name, event.currentTarget.checked)} />${name}</label></li>`;
      })}
    </ul>
  </fieldset>`;
}
