// Which of the dashboard's modules the first load needs: what `entry` imports statically, and what
// those import, transitively. A dynamic `import('./x.js')` (a team screen) is left out: it loads
// when its view is first opened.

const STATIC_IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*'\.\/([^']+)'|(?:^|\n)\s*import\s*'\.\/([^']+)'/g;

/** The relative modules `source` imports statically (their file names in the same folder). */
export function staticImportsOf(source: string): string[] {
  return [...source.matchAll(STATIC_IMPORT)].map((match) => (match[1] ?? match[2])!);
}

/** `entry` and every module it reaches through static imports, in the order first reached. */
export function staticImportClosure(sources: ReadonlyMap<string, string>, entry: string): string[] {
  const reached: string[] = [];
  const visit = (name: string): void => {
    if (reached.includes(name)) return;
    const source = sources.get(name);
    if (source === undefined) throw new Error(`web/dashboard/${name} is imported but does not exist`);
    reached.push(name);
    for (const imported of staticImportsOf(source)) visit(imported);
  };
  visit(entry);
  return reached;
}
