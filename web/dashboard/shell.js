import { useEffect, useRef } from 'preact/hooks';
import { html } from './html.js';
import { LazyView } from './lazy-view.js';
import { NAV_ITEMS, viewFor } from './nav-items.js';
import { Notices } from './notices.js';
import { Link, navigate } from './router.js';
import { allows, useSession } from './session.js';

// The frame around every view: the team, the navigation, switching team and signing out.

export function Shell({ path }) {
  const { credential, team, signOut } = useSession();
  const items = NAV_ITEMS.filter((item) => allows(team?.permissions, item.permission));
  // A view the member's permissions do not allow is not opened by its address either.
  const found = viewFor(path);
  const current = found && items.includes(found) ? found : null;
  const heading = useRef(null);

  useEffect(() => {
    if (!current) navigate('/app/media', { replace: true });
  }, [current]);
  // A new view moves the focus to its heading, so a keyboard or screen reader user starts there.
  useEffect(() => {
    heading.current?.focus();
  }, [current?.path, Boolean(team)]);

  if (!team) return html`<main id="main"><p class="muted" role="status">Opening the team…</p></main>`;
  return html`<div class="shell">
    <a class="skip-link" href="#main">Skip to content</a>
    <header class="top-bar">
      <p class="team-name">${team.name || 'Team'}${team.memberName ? html` <span class="muted">· ${team.memberName}</span>` : ''}</p>
      <nav aria-label="Main">
        <ul class="nav-list">
          ${items.map((item) => html`<li key=${item.path}>
            <${Link} href=${item.path} aria-current=${current?.path === item.path ? 'page' : undefined}>${item.label}</${Link}>
          </li>`)}
        </ul>
      </nav>
      <div class="account">
        ${credential.kind === 'session' ? html`<${Link} href="/app/teams">Switch team</${Link}>` : ''}
        <button type="button" class="secondary" onClick=${signOut}>Sign out</button>
      </div>
    </header>
    <main id="main">
      <h1 tabindex="-1" ref=${heading}>${current?.label ?? ''}</h1>
      ${current?.view ? html`<${current.view} key=${team.id} />` : ''}
      ${current?.load ? html`<${LazyView} key=${`${team.id} ${current.path}`} load=${current.load} />` : ''}
    </main>
    <${Notices} />
  </div>`;
}
