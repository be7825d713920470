import { formatBytes } from './format.js';

// Every refusal the API can give, in words, with what the user can do about it.

export function refusalInWords(error) {
  const status = error?.status;
  const wait = error?.retryAfter ? ` Try again in ${error.retryAfter} s.` : ' Try again in a moment.';
  switch (status) {
    case 0:
      return { title: 'The service cannot be reached.', action: 'Check the connection and try again.' };
    case 400:
      return { title: `The request was refused: ${error.message}`, action: 'Correct it and try again.' };
    case 401:
      return { title: 'You are not signed in any more.', action: 'Sign in again.' };
    case 402:
      if (error.messageKey === 'error.teamLimits.maxMediaFileSize') {
        const limit = typeof error.value === 'number' ? ` (${formatBytes(error.value)} per file)` : '';
        return { title: `This file is larger than the team's plan allows${limit}.`, action: 'Upload a smaller file, or ask the operator for a larger plan.' };
      }
      if (error.messageKey === 'error.teamLimits.maxTeamStorage') {
        return { title: 'The team storage is full.', action: 'Delete files you no longer need, or ask the operator for more storage.' };
      }
      return { title: `A limit of the team's plan is reached: ${error.message}`, action: 'Ask the operator for a larger plan.' };
    case 403:
      if (error.messageKey === 'error.team.archived') return { title: 'The team is archived: nothing can change.', action: 'Ask an owner to unarchive it.' };
      return { title: 'You are not allowed to do this.', action: 'Ask a team owner for the permission.' };
    case 404:
      return { title: 'It does not exist any more.', action: 'Reload the list.' };
    case 409:
      return { title: `It conflicts with what exists: ${error.message}`, action: 'Choose another name.' };
    case 413: {
      // The dashboard sends large files through tus, so a 413 is the service's (or an upload URL's) largest file.
      const limit = typeof error.value === 'number' ? ` (${formatBytes(error.value)} per file)` : '';
      return { title: `This file is larger than the service accepts${limit}.`, action: 'Compress it (zip) or split it into smaller files, then upload those.' };
    }
    case 415:
      return { title: 'This type of file is not accepted (HTML, scripts, programs and SVG are refused).', action: 'Upload it in an archive (zip), or as another type.' };
    case 429:
      return { title: 'Too many requests in a short time.', action: `Wait, then retry the file.${wait}` };
    case 503:
      if (error.messageKey === 'error.media.uploadBusy') return { title: 'The service is busy with other uploads.', action: `It is not your fault: retry the file.${wait}` };
      return { title: 'The service is busy or its storage is unavailable.', action: `It is not your fault: retry the file.${wait}` };
    default:
      return { title: error?.message ?? 'Something went wrong.', action: 'Try again; if it persists, tell the operator.' };
  }
}

export function refusalText(error) {
  const { title, action } = refusalInWords(error);
  return `${title} ${action}`;
}
