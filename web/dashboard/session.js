import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

// The signed-in state every view reads: the credential, the chosen team, the member's
// permissions, and `call`, the API bound to the credential.

export const SessionContext = createContext(null);

export function useSession() {
  return useContext(SessionContext);
}

/** The member's permissions on the team: its own plus its groups', or every one for the owner. */
export function permissionsOf(meTeamInfo) {
  const member = meTeamInfo?.member;
  if (!member) return { all: false, names: new Set() };
  const names = new Set(member.permissions ?? []);
  for (const group of member.groups ?? []) for (const name of group.permissions ?? []) names.add(name);
  return { all: Boolean(member.isTeamOwner), names };
}

export function allows(permissions, name) {
  return !permissions || permissions.all || permissions.names.has(name);
}
