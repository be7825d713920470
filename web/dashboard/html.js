// htm turns tagged templates into Preact elements: no build step, and values are always
// rendered as text or attributes, never parsed as markup.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
