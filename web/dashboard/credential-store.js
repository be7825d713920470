// Where the credential lives (docs/design.md, "Dashboard credential"): in memory, mirrored in
// sessionStorage so that a reload or a new view keeps the user signed in while the tab lives, and
// never in a cookie (nothing is sent by the browser on its own, so there is nothing to forge).
//
// A credential: { kind: 'session', token, expiresAt, username, teamId? } or { kind: 'key', token, teamId }.

const STORAGE_KEY = 'media-dashboard.credential';
let current;

export function loadCredential() {
  if (current !== undefined) return current;
  try {
    current = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null');
  } catch {
    current = null;
  }
  return current;
}

export function saveCredential(credential) {
  current = credential;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credential));
}

export function clearCredential() {
  current = null;
  sessionStorage.removeItem(STORAGE_KEY);
}
