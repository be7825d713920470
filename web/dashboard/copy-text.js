import { announce } from './notices.js';

// Copies to the clipboard and says so; where the browser refuses, the caller shows the text to copy by hand.

export async function copyText(text, what = 'Link') {
  try {
    await navigator.clipboard.writeText(text);
    announce(`${what} copied`);
    return true;
  } catch {
    announce(`${what} could not be copied: select it and copy it by hand`, 'error');
    return false;
  }
}
